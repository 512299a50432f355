"""The served simulator tab: app/web/widget.js and host.js drawing the state's runs, synced with a SimState."""

from __future__ import annotations

import json
import logging
import time

import param
from panel.custom import Child, JSComponent

from app.page import palette
from app.simulator.state import GENERATOR_TAKES_OVER, SimState, generated_label
from app.simulator.widget_data import AHEAD_MAX_REQUESTS, ViewKey, renderer_config, view_json
from app.web.bundle import bundle
from app.web.style import CSS

# The widget's modules in dependency order (app/web/bundle.py joins them into one): the words, a run's cells, the
# renderer, the texts at the cursor, the batch at the cursor, the widget's controls and the widget that mounts them.
WIDGET_MODULES = (
    *("words.js", "run_cells.js", "renderer.js", "playback_texts.js", "loop_texts.js", "compare_texts.js", "batch.js"),
    *("widget_controls.js", "widget.js"),
)
RENDERER_JS = bundle(*WIDGET_MODULES)
INTERVAL_MS = 120  # playback's pace for a learner; a benchmark asks for one frame (16 ms) through window.__bvInterval
STEP_SYNC_MS = 150  # during playback the server's copy of the step (the batch view, the URL) follows this often
SLIDER_SLOTS = 16
log = logging.getLogger("batchviz.server")

# The served page's module: the widget, and the host drawing the story around it.
PAGE_JS = bundle(*WIDGET_MODULES, "host.js")


def view_key(state: SimState, slots_end: int, **overrides) -> ViewKey:
    """Return the key of the view `state` shows, or of a neighbour (`slots=`, `seed=`); the export's views use it too.

    A seed replaces the chapter's traffic with generated traffic, as SimState does when the learner moves it.
    """
    s = state
    slots = overrides.get("slots", s.slots)
    if "seed" in overrides:
        traffic = s.generator_config(overrides["seed"])
        label = generated_label(s.requests, s.lengths, s.priority_share)
    else:
        traffic, label = s.traffic_key(), s.traffic_label()
    return ViewKey(
        traffic, slots, s.batch_timeout, s.window, s.clock, s.accelerator, s.model_shape, s.both,
        s.generator_applies, slots_end, s.kv_blocks, s.allocation, label,
    )  # fmt: skip


class ChapterWidget(JSComponent):
    """The simulator tab, drawn in the browser from the state's runs: the widget and the story around it.

    The widget: controls, player, stats, both timelines. The story: its texts, the loop and batch at the cursor, the
    full head-to-head, what holds here, its buttons; `settings` and `replay` are Panel's own views, placed in it.
    """

    config = param.Dict(default={}, constant=True, doc="The renderer's constants (colours, loops, captions)")
    story = param.List(default=[], constant=True, doc="The tab in order: [kind, value] (html, widget, loop, ...)")
    buttons = param.Dict(default={}, doc="Each group of the story's buttons: its labels")
    hidden = param.List(default=[], doc="The story's buttons not shown now, as 'group:index'")
    disclosures = param.Dict(default={}, constant=True, doc="Each disclosure's title, by name")
    opened = param.List(default=[], doc="The disclosures open now (a deep link's setting, a loaded file)")
    header = param.String(default="", constant=True, doc="The page's heading, above the tab bar")
    tabs = param.Dict(default={}, constant=True, doc="The page's tabs: key -> title, in order (none: the widget alone)")
    tab = param.String(default="simulator", doc="The tab shown (the learner's click, or a link's)")
    message = param.String(default="", doc="The page's message about input it refused, above every tab")
    tab_body = Child(doc="The open tab's view, when it is not the simulator (the server puts it there)")
    # Each disclosure's contents: Panel's own widgets, made the first time it opens (see `open`).
    more = Child()
    memory = Child()
    clock = Child()
    trace = Child()
    replay = Child()
    payload = param.String(default="{}", doc="JSON: the view of the current settings, its neighbours, the step")
    mode = param.String(default="continuous")
    slots = param.Integer(default=4)
    seed = param.Integer(default=0)
    step = param.Integer(default=63)

    _esm = PAGE_JS
    _stylesheets = [CSS]
    _render_policy = "manual"  # a disclosure's contents arriving must not redraw the widget beside it

    def __init__(self, state: SimState, theme: str = "light", on_button=None, builders=None, **params):
        params["config"] = {**renderer_config(palette.THEMES[theme], INTERVAL_MS), "step_sync_ms": STEP_SYNC_MS}
        super().__init__(mode=state.mode, slots=state.slots, seed=state.seed, step=state.step, **params)
        self.state = state
        self.on_button = on_button  # (group, index): a story button was pressed
        self.builders = builders or {}  # each disclosure's contents, made when it first opens
        for name in self.opened:
            self.build(name)
        self._slots_end = SLIDER_SLOTS if state.slots <= SLIDER_SLOTS else state.param.slots.bounds[1]
        self.sends = 0
        self._send()
        state.param.watch(
            self._send,
            ["runs", "mode", "window", "clock", "accelerator", "model_shape", "both"],
        )
        state.param.watch(self._from_state, ["mode", "slots", "seed", "step"])
        self.param.watch(self._to_state, ["mode", "slots", "seed", "step"])

    def _key(self, **overrides) -> ViewKey:
        return view_key(self.state, self._slots_end, **overrides)

    def _ahead(self) -> dict[str, str]:
        """Return the neighbouring settings' views (seed and slots one either side), for small traffic on steps."""
        s = self.state
        if s.clock != "steps" or len(s.runs["static"].requests) > AHEAD_MAX_REQUESTS:
            return {}
        out = {}
        for slots in (s.slots - 1, s.slots + 1):
            if 1 <= slots <= self._slots_end:
                out[f"{slots}:{s.seed}"] = view_json(self._key(slots=slots))
        if s.generator_applies and (s.trace is None or s.trace_name in GENERATOR_TAKES_OVER):
            lo, hi = s.param.seed.bounds
            for seed in (s.seed - 1, s.seed + 1):
                if lo <= seed <= hi:
                    out[f"{s.slots}:{seed}"] = view_json(self._key(seed=seed))
        return out

    def _send(self, *_events) -> None:
        s = self.state
        if s.slots > self._slots_end:
            self._slots_end = s.param.slots.bounds[1]
        settings = json.dumps({"mode": s.mode, "slots": s.slots, "seed": s.seed})
        ahead = ",".join(f'"{k}":{v}' for k, v in self._ahead().items())
        step = min(s.step, s.window - 1)
        self.payload = (
            f'{{"settings":{settings},"step":{step},"view":{view_json(self._key())},"ahead":{{{ahead}}},'
            f'"sent":{time.time():.3f}}}'
        )
        self.sends += 1

    def build(self, name: str) -> None:
        """Make disclosure `name`'s contents, once: the browser places them when they arrive."""
        if getattr(self, name) is None and name in self.builders:
            setattr(self, name, self.builders[name]())

    def open(self, name: str) -> None:
        """Open disclosure `name` on the page (its contents made first), even if the learner had shut it."""
        self.build(name)
        self.opened = [*[n for n in self.opened if n != name], name]

    def _handle_msg(self, data) -> None:
        """Act on the browser's message: a disclosure opened (`{open}`), a story button pressed (`{group, index}`).

        Anything else is one line in the log.
        """
        if isinstance(data, dict) and data.get("open") in self.builders:
            self.build(data["open"])
            return
        try:
            group, index = data["group"], data["index"]
            label = self.buttons[group][index] if isinstance(index, int) and index >= 0 else None
        except (KeyError, IndexError, TypeError):
            label = None
        if label is None or self.on_button is None:
            log.info("ignored a story button message: %.80r", data)
            return
        self.on_button(group, index)

    def _from_state(self, *events) -> None:
        changed = {e.name: e.new for e in events if getattr(self, e.name) != e.new}
        if changed:
            self.param.update(**changed)

    def _to_state(self, *events) -> None:
        s = self.state
        changed = {e.name: e.new for e in events if getattr(s, e.name) != e.new}
        if "step" in changed:
            changed["step"] = max(0, min(changed["step"], s.window - 1))
        if changed:
            s.param.update(**changed)
