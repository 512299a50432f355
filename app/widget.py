"""The chapter's widget on the served page: assets/renderer.js drawing the state's runs, synced with a SimState."""

from __future__ import annotations

import json
import time
from pathlib import Path

import param
from panel.custom import JSComponent

from . import palette
from .state import GENERATOR_TAKES_OVER, SimState, generated_label
from .style import CSS
from .widget_data import AHEAD_MAX_REQUESTS, ViewKey, renderer_config, view_json

ASSETS = Path(__file__).resolve().parent.parent / "assets"
# One module: the renderer, then the batch at the cursor (which uses the renderer's helpers).
RENDERER_JS = (ASSETS / "renderer.js").read_text(encoding="utf-8") + (ASSETS / "batch.js").read_text(encoding="utf-8")
INTERVAL_MS = 120  # playback's pace for a learner; a benchmark asks for one frame (16 ms) through window.__bvInterval
STEP_SYNC_MS = 150  # during playback the server's copy of the step (the batch view, the URL) follows this often
SLIDER_SLOTS = 16

# The served page's half of the renderer: the server's payloads in, the learner's settings and step out.
GLUE_JS = """
export function render({ model, el }) {
  let ahead = {}, waiting = null, stepTimer = null, lastLoop = null;
  const bus = (window.__bvBus ??= new EventTarget());
  const host = {
    config: model.config,
    // A neighbour the server sent ahead draws at once, but only from the settings it was computed beside.
    lookup: (s) => (waiting ? null : ahead[`${s.slots}:${s.seed}`] ?? null),
    settle: (s) => {
      waiting = { ...s, at: performance.now() };
      model.mode = s.mode; model.slots = s.slots; model.seed = s.seed;
    },
    onStep: (t, final) => {
      clearTimeout(stepTimer);
      if (final) { model.step = t; return; }
      stepTimer = setTimeout(() => { model.step = widget.step; }, STEP_SYNC_MS);
    },
    onLoop: (html, t) => {
      lastLoop = { html, t };
      window.__bvLoop = lastLoop;
      bus.dispatchEvent(new CustomEvent("loop", { detail: lastLoop }));
    },
    onBatch: (html, t) => {
      window.__bvBatch = { html, t };
      bus.dispatchEvent(new CustomEvent("batch", { detail: window.__bvBatch }));
    },
    onHover: (id) => bus.dispatchEvent(new CustomEvent("hover", { detail: id })),
  };
  const widget = mountWidget(el, host);
  const receive = () => {
    const p = JSON.parse(model.payload);
    const stale = waiting && performance.now() - waiting.at < 3000 &&
      (p.settings.slots !== waiting.slots || p.settings.seed !== waiting.seed || p.settings.mode !== waiting.mode);
    if (stale) return;  // an answer for settings the learner has already moved past
    waiting = null;
    ahead = p.ahead;
    // The step is the model's: the server may change it in the same patch after this payload was made (a quiz
    // link opens the worked example, whose window clamps the step, then sets the link's), and the patch's order
    // of the two is not the order they were made in.
    widget.confirm(p.view, p.settings, Math.min(model.step, p.view.window - 1));
    window.__bvOnConfirm?.();  // a benchmark's hook
  };
  receive();
  model.on("payload", receive);
  model.on("step", () => widget.setStep(model.step));
  window.__bvWidget = widget;
}

""".replace("STEP_SYNC_MS", str(STEP_SYNC_MS))

LOOP_JS = """
export function render({ el }) {
  const bus = (window.__bvBus ??= new EventTarget());
  const show = (d) => { if (d) el.innerHTML = d.html; };
  show(window.__bvLoop);
  bus.addEventListener("loop", (e) => show(e.detail));
}
"""


class ChapterWidget(JSComponent):
    """Controls, player, stats, head-to-head and both timelines, drawn in the browser from the state's runs."""

    config = param.Dict(default={}, constant=True, doc="The renderer's constants (colours, loops, captions)")
    payload = param.String(default="{}", doc="JSON: the view of the current settings, its neighbours, the step")
    mode = param.String(default="continuous")
    slots = param.Integer(default=4)
    seed = param.Integer(default=0)
    step = param.Integer(default=63)

    _esm = RENDERER_JS + GLUE_JS
    _stylesheets = [CSS]

    def __init__(self, state: SimState, theme: str = "light", **params):
        params["config"] = renderer_config(palette.THEMES[theme], INTERVAL_MS)
        super().__init__(mode=state.mode, slots=state.slots, seed=state.seed, step=state.step, **params)
        self.state = state
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
        s = self.state
        slots = overrides.get("slots", s.slots)
        if "seed" in overrides:  # a generator seed replaces the chapter's traffic, as SimState does
            traffic = s.generator_config(overrides["seed"])
            label = generated_label(s.requests, s.lengths, s.priority_share)
        else:
            traffic, label = s.traffic_key(), s.traffic_label()
        return ViewKey(
            traffic, slots, s.batch_timeout, s.window, s.clock, s.accelerator, s.model_shape, s.both,
            s.generator_applies, self._slots_end, s.kv_blocks, s.allocation, label,
        )  # fmt: skip

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


BATCH_JS = """
export function render({ model, el }) {
  const bus = (window.__bvBus ??= new EventTarget());
  const box = document.createElement("div"), outline = document.createElement("style");
  el.append(outline, box);
  const show = (d) => { if (d) box.innerHTML = d.html; };
  show(window.__bvBatch);
  bus.addEventListener("batch", (e) => show(e.detail));
  // Hovering a request in either timeline outlines its tokens, block-table row and blocks here.
  bus.addEventListener("hover", (e) => {
    const id = e.detail;
    outline.textContent = id === null ? "" :
      `[data-req="${CSS.escape(id)}"] { outline: 3px solid ${model.colour}; outline-offset: 1px; }`;
  });
}
"""


class BatchBox(JSComponent):
    """The batch at the widget's cursor (assets/batch.js draws it each frame), outlining the hovered request."""

    colour = param.String(default="#222222", doc="The hovered request's outline")

    _esm = BATCH_JS
    _stylesheets = [CSS]


class LoopView(JSComponent):
    """The scheduling loop at the widget's cursor, its executed lines lit (the widget computes it each frame)."""

    _esm = LOOP_JS
    _stylesheets = [CSS]
