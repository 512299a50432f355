"""The Schedulers tab: real engines' admission rules on one traffic, pool and clock, guessed, then compared."""

from __future__ import annotations

from dataclasses import replace

import panel as pn
import param
from panel.custom import JSComponent

from app.page import palette
from app.page.tabs import LazyViewer, Messages, plain_number, query_number, text_pane
from app.page.url import query_choice, query_value
from app.schedulers.command import command_html, knobs_html
from app.schedulers.data import MAX_BUDGET, LineupKey, budget_of, lineup_json, shared_lineup
from app.schedulers.intro import INTRO, LESSONS, SOURCE_WORDS, legend_html, rules_html
from app.schedulers.settings import (
    CHAT_INPUTS,
    INPUTS,
    KEY,
    NONE,
    NUMBERS,
    SETTINGS,
    SOURCES,
    cut,
    entry_words,
    refusal,
    values_of,
)
from app.schedulers.words import QUESTIONS, guess_html, lessons_html, load_html, table_html
from app.server.loop import on_document
from app.server.server_log import follow_widget
from app.simulator.state import SimState
from app.web.bundle import bundle
from app.web.style import CSS
from core.clock.hardware import ACCELERATORS, MODEL_SHAPES, cost_model
from core.limits import show_text
from core.measure.lineup import MAX_ENTRIES, MIN_ENTRIES, parse_entries, parse_entry, preset_variants

DEFAULT_ENTRIES = ("vllm", "tgi", "sglang", "trtllm-no-evict")


class LineupTimelines(JSComponent):
    """Every scheduler's timeline on one time axis, drawn in the browser by the page's renderer."""

    config = param.Dict(default={}, constant=True, doc="The renderer's colours")
    payload = param.String(default="{}", doc="JSON: the lineup's view (app/schedulers/data.py lineup_json)")

    _esm = bundle("words.js", "run_cells.js", "renderer.js", "batch.js", "tabs/lineup_host.js")
    _stylesheets = [CSS]


class SchedulersView(LazyViewer):
    """Pick two to four schedulers; guess which has the lowest p99 TTFT; then the table, the lessons, the runs."""

    entries = param.List(default=list(DEFAULT_ENTRIES), item_type=str, doc="The schedulers, as a link writes them")
    seed = param.Integer(default=KEY.seed, bounds=(0, 99), doc="Traffic seed")
    requests = param.Integer(default=KEY.requests, bounds=(8, 256), doc="Requests")
    rate_per_s = param.Number(default=KEY.rate_per_s, bounds=(1.0, 200.0), doc="Poisson arrivals, requests per second")
    priority_share = param.Integer(
        default=KEY.priority_share, bounds=(0, 100), doc="Requests in the high priority class, %"
    )
    slots = param.Integer(
        default=KEY.slots,
        bounds=(1, 64),
        doc="Each engine's request cap (max_num_seqs, max_running_requests, max_batch_size; TGI has none by default)",
    )
    kv_blocks = param.Integer(
        default=KEY.kv_blocks, bounds=(0, 100_000), doc="KV pool in 16-token blocks (0: unlimited)"
    )
    token_budget = param.Integer(
        default=KEY.token_budget,
        bounds=(0, MAX_BUDGET),
        doc="vLLM's max_num_batched_tokens, SGLang's chunked_prefill_size (0: each engine's default)",
    )
    ttft_ms = param.Number(default=KEY.ttft_ms, bounds=(1.0, 60_000.0), doc="TTFT target, ms")
    itl_ms = param.Number(default=KEY.itl_ms, bounds=(1.0, 1_000.0), doc="ITL target on each request's mean TPOT, ms")
    guess = param.Integer(
        default=None, allow_None=True, bounds=(0, MAX_ENTRIES - 1), doc="The scheduler the learner picked (index)"
    )
    question = param.Selector(default="ttft_p99", objects=list(QUESTIONS), doc="The figure the guess is about")
    accelerator = param.Selector(default=KEY.accelerator, objects=list(ACCELERATORS), doc="The clock's accelerator")
    model = param.Selector(default=KEY.model, objects=list(MODEL_SHAPES), doc="The clock's model")
    theme = param.Selector(default="light", objects=list(palette.THEMES), doc="The page's colours")
    source = param.Selector(default="chat", objects=list(SOURCES), doc="Whose traffic: the tab's chat, or the page's")
    state = param.ClassSelector(class_=SimState, default=None, allow_None=True, doc="The simulator's settings")

    def key(self, **values) -> LineupKey:
        """Return the lineup's settings as the shared cache's key (`values`: settings read instead of the view's)."""
        v = {name: getattr(self, name) for name in SETTINGS} | values
        page = self.state.traffic_key() if v["source"] == "page" and self.state is not None else None
        return LineupKey(
            tuple(parse_entry(text) for text in v["entries"]), v["seed"], v["requests"], v["rate_per_s"],
            v["priority_share"], v["slots"], v["kv_blocks"], v["token_budget"], v["ttft_ms"], v["itl_ms"],
            v["accelerator"], v["model"], page_traffic=page,
        )  # fmt: skip

    def apply_query(self, query: dict) -> list[str]:
        """Set the tab from its URL keys (`schedulers=tgi,vllm`, `s_rate=40`, ...); return messages for refusals."""
        values, messages = self._query_values(query)
        # Set together, once the core runs them: a built view recomputes once, never on half a link.
        values, refused = self._runnable(values, query_value(query.get("schedulers", "")))
        self.param.update(**values)
        messages += [refused] if refused else []
        value, message = query_number(query, "s_guess", 0, MAX_ENTRIES - 1, 0, integer=True)
        if value is not None and value < len(self.entries) and not message:
            self.guess = int(value)
        elif "s_guess" in query:
            messages.append(f"URL: s_guess is the index of a scheduler shown, 0..{len(self.entries) - 1}; asking.")
        return messages

    def _query_values(self, query: dict) -> tuple[dict, list[str]]:
        """Return the settings the URL's keys ask for, each checked alone, and messages for those refused."""
        values, messages = {}, []
        choices = (
            ("s_accel", "accelerator", ACCELERATORS),
            ("s_model", "model", MODEL_SHAPES),
            ("s_question", "question", QUESTIONS),
            ("s_source", "source", SOURCES),
        )
        for key, name, allowed in choices:
            value, message = query_choice(query, key, allowed, f"kept {getattr(self, name)}")
            if value is not None:
                values[name] = value
            messages += [message] if message else []
        if "schedulers" in query:
            text = query_value(query["schedulers"])
            try:
                values["entries"] = [e.text() for e in parse_entries(text)]
            except ValueError as exc:
                said = cut(str(exc))
                messages.append(f"URL: schedulers={show_text(text)}: {said}; kept {','.join(self.entries)}.")
        for key, (name, low, high, whole) in NUMBERS.items():
            value, message = query_number(query, key, low, high, getattr(self, name), integer=whole)
            if value is not None:
                values[name] = int(value) if whole else value
            messages += [message] if message else []
        return values, messages

    def _runnable(self, values: dict, text: str) -> tuple[dict, str]:
        """Return `values` if the core runs them, else them less what it refused (the schedulers first) and why."""
        refused = refusal(self.key(**values))
        if not refused:
            return values, ""
        drops = (
            (("entries",), f"URL: schedulers={show_text(text)} was not run: {refused}; kept {','.join(self.entries)}."),
            (SETTINGS[1:], f"URL: the schedulers' settings were not run: {refused}; kept the last settings."),
        )
        for names, message in drops:
            kept = {name: value for name, value in values.items() if name not in names}
            if kept != values and not refusal(self.key(**kept)):
                return kept, message
        kept = {name: value for name, value in values.items() if name not in SETTINGS}
        return kept, f"URL: the schedulers' settings were not run: {refused}; kept the last lineup."

    def query(self) -> dict[str, str]:
        """Return the tab's URL arguments that differ from their defaults."""
        out = {}
        if self.entries != list(DEFAULT_ENTRIES):
            out["schedulers"] = ",".join(self.entries)
        for key, (name, *_) in NUMBERS.items():
            value = getattr(self, name)
            if value != self.param[name].default:
                out[key] = plain_number(value)
        if self.source != "chat":
            out["s_source"] = self.source
        if self.question != self.param.question.default:
            out["s_question"] = self.question
        for key, name in (("s_accel", "accelerator"), ("s_model", "model")):
            if getattr(self, name) != self.param[name].default:
                out[key] = getattr(self, name)
        if self.guess is not None:
            out["s_guess"] = str(self.guess)
        return out

    def _build(self) -> None:
        self.messages = Messages()
        self.timelines = LineupTimelines(
            config={"colours": _colours(self.theme)}, payload="{}", sizing_mode="stretch_width"
        )
        self.verdict, self.table, self.lessons, self.load = text_pane(""), text_pane(""), text_pane(""), text_pane("")
        self.knobs, self.command = text_pane(""), text_pane("")  # what slots and budget stand for; the CLI's command
        refused = refusal(self.key())
        if refused:  # settings made before the tab opened (the simulator's traffic, say) that the core refuses
            self.param.update(**values_of(LineupKey(parse_entries(",".join(DEFAULT_ENTRIES)))))
            self.messages.text = f"Not run: {refused}. Showing the default lineup."
        self._good = self.key()
        self.inputs = {name: self._input(name) for name in INPUTS}
        self.inputs["source"] = self._source_input()
        self._syncing = False
        self.pickers = [pn.widgets.Select(label=f"Scheduler {k + 1}", width=250) for k in range(MAX_ENTRIES)]
        for picker in self.pickers:
            picker.param.watch(self._picked, "value")
        self._show_pickers()
        self.settings_help = text_pane("")
        self._show_settings()
        self.guesses = pn.widgets.RadioButtonGroup(
            label="Your guess", color="primary", variant="outline", sizing_mode="stretch_width",
            stylesheets=[".bk-btn-group { flex-wrap: wrap; row-gap: 4px; }"],
        )  # fmt: skip
        self._show_guesses()
        follow_widget(self.guesses, "value", self, "guess", self._shown_index)
        self.lesson_buttons = []
        for label, values in LESSONS.values():
            button = pn.widgets.Button(label=label)
            button.on_click(lambda _e, values=values: self.param.update(guess=None, **values))
            self.lesson_buttons.append(button)
        self._refresh()
        changes = [name for name in self.param if name not in ("name", "guess", "question", "theme", "state")]
        self.param.watch(lambda *_e: on_document(self._changed), changes)
        if self.state is not None:  # the simulator's traffic changed: a lineup on it follows
            self.state.param.watch(lambda *_e: self.source == "page" and on_document(self._changed), "runs")
        self.param.watch(lambda *_e: on_document(self._reveal), ["guess", "question"])

    def _input(self, name: str):
        """Return the widget of one setting: a value the core's range refuses is one log line, the widget put back."""
        kind, label, own = INPUTS[name]
        p = self.param[name]
        ends = dict(zip(("start", "end"), p.bounds)) if isinstance(p, param.Number) else {}
        widget = kind(label=label, value=getattr(self, name), **({"width": 200} | ends | own))
        follow_widget(widget, "value", self, name)
        self.param.watch(lambda e: setattr(widget, "value", e.new), name)
        return widget

    def _source_input(self):
        """Return the traffic's choice (the tab's chat or the simulator's), guarded as the other settings are."""
        widget = pn.widgets.RadioButtonGroup(
            options={words: key for key, words in SOURCES.items()}, value=self.source, color="primary",
            variant="outline", label="Traffic", stylesheets=[".bk-btn-group { flex-wrap: wrap; row-gap: 4px; }"],
        )  # fmt: skip
        follow_widget(widget, "value", self, "source")
        self.param.watch(lambda e: setattr(widget, "value", e.new), "source")
        return widget

    def _shown_index(self, value):
        """Return a guess the page sent if it is a scheduler shown (or none); refuse any other as out of range."""
        if value is not None and not (type(value) is int and 0 <= value < len(self.entries)):
            raise ValueError(f"guess {value!r} is not a scheduler shown")
        return value

    def _show_pickers(self) -> None:
        """Set the four pickers to the entries (the registered presets and any variant on screen as options)."""
        options = {entry_words(name): name for name in preset_variants()}
        options.update({entry_words(text): text for text in self.entries})
        self._syncing = True  # the pickers' own watchers wait until all four are set
        try:
            for k, picker in enumerate(self.pickers):
                picker.options = options if k < MIN_ENTRIES else {NONE: NONE, **options}
                picker.value = self.entries[k] if k < len(self.entries) else NONE
        finally:
            self._syncing = False

    def _picked(self, _event) -> None:
        if self._syncing:
            return
        chosen = [p.value for p in self.pickers if p.value and p.value != NONE]
        if chosen == self.entries:
            return
        if len(set(chosen)) != len(chosen):
            self.messages.text = "Each scheduler once: that one is already shown."
            pn.state.execute(self._show_pickers, schedule=True)
            return
        self.messages.text = ""
        self.param.update(entries=chosen, guess=None)

    def _show_settings(self) -> None:
        """Say how each scheduler on screen admits and its settings, from their declarations."""
        self.settings_help.object = rules_html(self.entries)

    def _show_guesses(self) -> None:
        self.guesses.options = {entry_words(text): k for k, text in enumerate(self.entries)}
        self.guesses.value = self.guess

    def _changed(self) -> None:
        """Recompute the lineup; a setting the core refuses is named and undone."""
        key = self.key()
        if key == self._good:  # nothing that shows changed (a refused value put back, say): keep its message
            return
        refused = refusal(key)
        if refused:
            self.messages.text = f"Not run: {refused}. Kept the last lineup."
            self.param.update(**values_of(self._good))
            return
        self.messages.text = ""
        # Any change but the targets changes the runs: a new question, guessed again before the table shows.
        new_question = replace(key, ttft_ms=0, itl_ms=0) != replace(self._good, ttft_ms=0, itl_ms=0)
        self._good = key
        if new_question:
            self.guess = None  # a new question: guess again before the table shows
        self._show_pickers()
        self._show_settings()
        self._show_guesses()
        self._refresh()

    def _reveal(self) -> None:
        self.guesses.value = self.guess
        self._refresh()

    def _refresh(self) -> None:
        key = self._good  # the lineup on screen: the last settings the core ran
        lines = shared_lineup(key)
        self.timelines.payload = lineup_json(key)
        self.load.object = load_html(lines, *budget_of(key))
        self.verdict.object = guess_html(lines, self.guess, self.question)
        revealed = self.guess is not None
        self.table.object = table_html(lines, key.ttft_ms, key.itl_ms) if revealed else ""
        self.command.object = command_html(key) if revealed else ""
        self.knobs.object = knobs_html(key)
        self.lessons.object = lessons_html(lines, cost_model(key.accelerator, key.model)) if revealed else ""

    def _compose(self):
        inputs = self.inputs
        chat = [inputs[name] for name in CHAT_INPUTS]
        traffic = pn.FlexBox(*(inputs[name] for name in list(INPUTS)[:4]), sizing_mode="stretch_width")
        engine = pn.FlexBox(*(inputs[name] for name in list(INPUTS)[4:]), sizing_mode="stretch_width")
        for widget in chat:
            widget.visible = self.source == "chat"
        self.param.watch(lambda e: [setattr(w, "visible", e.new == "chat") for w in chat], "source")
        source = inputs["source"]
        return pn.Column(
            text_pane(INTRO),
            self.messages,
            pn.FlexBox(*self.pickers, sizing_mode="stretch_width"),
            self.settings_help,
            text_pane(SOURCE_WORDS),
            source,
            traffic,
            engine,
            self.knobs,
            text_pane(
                "<p><b>Lessons</b> (each loads its settings; its sentence under the table is computed from "
                "the runs):</p>"
            ),
            pn.FlexBox(*self.lesson_buttons, sizing_mode="stretch_width"),
            self.load,
            self.verdict,
            self.guesses,
            self.table,
            self.command,
            self.lessons,
            text_pane(legend_html()),
            self.timelines,
            sizing_mode="stretch_width",
            css_classes=["bv-story"],
        )


def _colours(theme: str) -> dict:
    """Return the renderer's colours in the page's theme."""
    from app.simulator.widget_data import renderer_config

    return renderer_config(palette.THEMES[theme], 120)["colours"]
