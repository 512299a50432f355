"""The whole app: controls beside the timeline and the head-to-head panel, deep links, and trace upload."""

from __future__ import annotations

from urllib.parse import parse_qs

import panel as pn
import param

from app.exercises.knee import KneeView
from app.exercises.spread import SpreadView
from app.exercises.temperature import TemperatureView
from app.memory.view import MemoryView
from app.page.frame import CHAPTER_BUTTON, GENERATED_NOTE, HEADER, SETTINGS_TITLES, TABS, WORKED_NAME
from app.page.page_agent import PageAgent
from app.page.palette import THEMES, css_variables
from app.page.stores import Measurements
from app.page.tabs import Messages
from app.page.upload import TraceUpload, decode_upload, read_upload
from app.page.url import URL_KEYS, parse_query, parse_theme, query_choice, query_of, query_value, safe_location
from app.quiz.view import Quiz
from app.real_replay.view import ReplayView
from app.schedulers.view import SchedulersView
from app.simulator import chapter, memory_lesson, story
from app.simulator.batch_data import INTRO as BATCH_INTRO
from app.simulator.state import CHAPTER_NAME, GENERATOR_PARAMS, SimState
from app.simulator.views import Controls, fit_card
from app.simulator.widget import ChapterWidget
from app.web.style import CSS
from core.chapter import worked_example as worked
from core.chapter.chapter_traffic import chapter_traffic
from core.sched.policies import CHAPTER_PAIR

PRESET = "worked"
MORE_TRAFFIC = ("requests", "lengths", "mean_tokens", "arrival_window", "priority_share")
GENERATOR_URL_KEYS = tuple(key for key, name in URL_KEYS.items() if name in GENERATOR_PARAMS)
class App(pn.viewable.Viewer):
    """The batchviz simulator: `App()` in a notebook, `App().servable()` when served."""

    state = param.ClassSelector(class_=SimState)
    theme = param.Selector(default="light", objects=list(THEMES), doc="Page colours (?theme=dark)")
    tab = param.Selector(default="simulator", objects=list(TABS), doc="The part of the page shown (?tab=quiz)")

    def __init__(self, query: dict | None = None, **params):
        fresh = "state" not in params
        params.setdefault("state", SimState())
        super().__init__(**params)
        self.messages = Messages()
        self.chapter_widget = None  # the simulator tab, made once the URL's settings are applied
        self.state.param.watch(self._on_traffic, "trace_name")
        self.state.param.watch(self._on_refusal, "refusal")
        self.measurements = Measurements()  # the replay writes its step times here; the knee view reads them
        self.knee, self.spread, self.temperature = (
            KneeView(measurements=self.measurements),
            SpreadView(),
            TemperatureView(),
        )
        self.memory = MemoryView()
        self.schedulers = SchedulersView(state=self.state)
        if fresh and not any(key in (query or {}) for key in GENERATOR_URL_KEYS):
            self.use_chapter_traffic()  # the page opens on the chapter's own twelve requests
        if query:
            self._apply_query(query)
        self.controls = Controls(state=self.state)
        self.replay = ReplayView(state=self.state, measurements=self.measurements)
        self.upload = TraceUpload(sizing_mode="stretch_width")
        self.upload.param.watch(self._on_upload, "upload")
        self.actions = self._actions()
        self.quiz = Quiz()
        self.quiz.param.watch(self._follow, "goto")
        self.chapter_widget = self._simulator_tab()
        self.chapter_widget.build("trace")
        # Every other tab's view goes into one body the host shows under the tab bar (a plot arriving as the
        # host's own child would be measured before Bokeh has drawn it).
        self.chapter_widget.tab_body = pn.Column(sizing_mode="stretch_width")
        self._tab_layouts: dict = {}
        self._show_tab()
        self.param.watch(self._show_tab, "tab")  # a quiz link or an in-app link changes it from the server
        self.chapter_widget.param.watch(lambda e: setattr(self, "tab", e.new), "tab")  # the learner's click
        self.messages.param.watch(lambda e: setattr(self.chapter_widget, "message", e.new), "text")
        self.state.param.watch(self._show_traffic_buttons, ["trace", "trace_name"])
        self._show_traffic_buttons()
        self.agent = PageAgent()  # in-app links open in place; names and focus rings for every control
        self.agent.param.watch(lambda _e: self.open_link(self.agent.link), "clicks")

    def _actions(self) -> dict:
        """Return the story's buttons, drawn in the browser with it: each group's labels and what each press sets."""
        return {
            "lessons": [
                (label, self._setter(slots=story.LESSON_SLOTS, clock="steps", **values))
                for label, values in story.LESSONS.values()
            ],
            "one_slot": [("Try slots = 1", self._one_slot)],
            "memory": [
                (label, self._memory_setter(values)) for label, values in memory_lesson.lesson_buttons().values()
            ],
            "traffic": [
                ("The chapter's worked example (A-F)", self.load_worked_example),
                (CHAPTER_BUTTON, self.use_chapter_traffic),
                ("Use generated traffic", self._clear_trace),
            ],
        }

    def _simulator_tab(self) -> ChapterWidget:
        """Return the simulator tab, drawn in the browser (app/web/renderer.js, host.js) from the state's runs."""
        return ChapterWidget(
            self.state,
            theme=self.theme,
            story=self.story(),
            buttons={group: [label for label, _ in pairs] for group, pairs in self.actions.items()},
            on_button=self.press,
            disclosures={**SETTINGS_TITLES, "replay": self.replay.title},
            opened=self._opened(),
            builders={
                "more": lambda: fit_card(self.controls.more_traffic()),
                "memory": lambda: fit_card(self.controls.scheduler()),
                "clock": lambda: fit_card(self.controls.on_a_clock()),
                # The upload is there from the start, shut: its file input is on the page at once.
                "trace": lambda: self.upload,
                "replay": self.replay.body,
            },
            header=HEADER,
            tabs=TABS,
            tab=self.tab,
            message=self.messages.text,
            sizing_mode="stretch_width",
        )

    def tab_views(self) -> dict:
        """Return the views of the tabs other than the simulator, by key: each is sent when its tab first opens."""
        return {
            "knee": self.knee,
            "spread": self.spread,
            "temperature": self.temperature,
            "memory": self.memory,
            "schedulers": self.schedulers,
            "quiz": self.quiz,
        }

    def _show_tab(self, *_events) -> None:
        """Show `tab` on the page: any tab but the simulator puts its view in the tab body (sent when first shown)."""
        body = self.chapter_widget.tab_body
        view = self.tab_views().get(self.tab)
        if view is not None:
            # A view's layout is made once: made again, every widget in it would be redrawn under the learner.
            shown = self._tab_layouts.setdefault(self.tab, pn.panel(view))
            if not (body.objects and body.objects[0] is shown):
                body.objects = [shown]
        self.chapter_widget.tab = self.tab

    def _opened(self) -> list[str]:
        """Return the settings' disclosures a deep link opens: those holding a setting it changed."""
        s = self.state
        unset = lambda *names: all(getattr(s, name) == s.param[name].default for name in names)  # noqa: E731
        shut = {
            "more": unset(*MORE_TRAFFIC, "both"),
            "memory": unset("kv_blocks", "allocation", "batch_timeout"),
            "clock": s.clock != "ms",
            # A loaded file (or a message about one) opens its card: the app's own traffic leaves it shut.
            "trace": s.trace_name in ("", CHAPTER_NAME, WORKED_NAME),
        }
        return [name for name, closed in shut.items() if not closed]

    def _show_traffic_buttons(self, *_events) -> None:
        """Show a way back to the chapter's traffic from any other, and to generated traffic from any trace."""
        hidden = []
        if self.state.trace_name == CHAPTER_NAME:
            hidden.append("traffic:1")
        if self.state.trace is None:
            hidden.append("traffic:2")
        self.chapter_widget.hidden = hidden

    def story(self) -> list[list]:
        """Return the simulator tab in order, as the browser draws it: texts, the views it draws, disclosures."""
        settings = [["buttons", "traffic"], *(["disclosure", name] for name in SETTINGS_TITLES)]
        return [
            ["widget", ""],
            ["row", settings],
            ["html", story.WHY],
            ["loop", ""],
            ["html", chapter.restructured_loop_html() + BATCH_INTRO],
            ["batch", ""],
            ["html", chapter.build_batch_html()],
            ["h2h", ""],
            ["html", story.SPREAD],
            ["buttons", "lessons"],
            # What holds on the view on screen, whatever the learner set: the lessons' sentences name their own.
            ["here", ""],
            ["html", chapter.spread_argument_html() + story.ONE_SLOT + story.ONE_SLOT_KV],
            ["buttons", "one_slot"],
            ["html", memory_lesson.lesson_html()],
            ["buttons", "memory"],
            ["html", chapter.affordable_html() + story.NOT_FIXED],
            ["disclosure", "replay"],
            ["html", chapter.PRODUCTION + chapter.run_locally_html() + chapter.WHATS_NEXT],
        ]

    def press(self, group: str, index: int) -> None:
        """Press the story's button `index` of `group` (the browser reports it; a test may call it)."""
        self.actions[group][index][1]()

    def _setter(self, **values):
        """Return an action that sets state values at once (on generated traffic, for the lengths)."""

        def click():
            if "lengths" in values and self.state.trace is not None:
                self._clear_trace()  # lengths shape the generated traffic; a trace has its own
            self.state.param.update(**values)

        return click

    def _one_slot(self) -> None:
        """Set one slot, with the chapter's pair on screen: its sentence is about static and continuous batching.

        Shortest-first or priority order on one slot is not arrival order, so their timelines would not match.
        """
        mode = self.state.mode if self.state.mode in CHAPTER_PAIR else "continuous"
        self.state.param.update(slots=1, mode=mode)

    def _memory_setter(self, values: dict):
        """Return a memory lesson's action: the chapter's traffic at the lesson's slots, on its pool."""

        def click():
            if self.state.trace_name != CHAPTER_NAME:
                self.use_chapter_traffic()
            self.state.param.update(slots=memory_lesson.SLOTS, clock="steps", **values)

        return click

    def _apply_query(self, query: dict) -> None:
        values, messages = parse_query(query, self.state)
        if "theme" in query:
            self.theme, theme_message = parse_theme(query)
            self.schedulers.theme = self.theme
            messages += [theme_message] if theme_message else []
        tab, message = query_choice(query, "tab", TABS, "showing simulator")
        if tab is not None:
            self.tab = tab
        messages += [message] if message else []
        for view in (self.knee, self.spread, self.temperature, self.memory, self.schedulers):
            messages += view.apply_query(query)
        if "preset" in query:
            preset = query_value(query["preset"]).strip()
            if preset == PRESET:
                self.load_worked_example()
            else:
                messages.append(f"URL: preset={preset[:40]!r} is not allowed (use {PRESET}); kept the traffic.")
        if "window" in values and "step" not in values:
            values["step"] = values["window"] - 1  # the window's last pass
        # The window first: it sets the step's bounds, which a deep link past step 64 needs before the step is set.
        self.state.refusal = ""
        if "window" in values:
            self.state.window = values.pop("window")
        self.state.param.update(**values)
        self.messages.text = " ".join(filter(None, [*messages, self.state.refusal]))

    def _follow(self, event) -> None:
        """Open the quiz's view link (its `goto`) in place."""
        self.open_link(event.new)

    def open_link(self, link: str) -> None:
        """Open an in-app link (`?tab=knee`) in place, from the default settings as a fresh page would.

        The quiz's view links and the page's own `<a href="?...">` links come here; the quiz keeps its answers.
        """
        self.state.window = self.state.param.window.default  # first: it bounds the step
        self._clear_trace()
        self.state.param.update(**{name: self.state.param[name].default for name in URL_KEYS.values()})
        query = parse_qs(link.lstrip("?"))
        if not any(key in query for key in GENERATOR_URL_KEYS):
            self.use_chapter_traffic()
        if query.get("tab", [""])[-1] == "knee":  # the exercise's rate and target too, as a fresh page opens them
            knee = self.knee.param
            self.knee.param.update(rate_per_s=knee.rate_per_s.default, itl_target_ms=knee.itl_target_ms.default)
        self._apply_query({"tab": "simulator", **query})

    def use_chapter_traffic(self) -> None:
        """Show the chapter's Try-it traffic: twelve heavy-tailed requests whose runs give the widget's figures."""
        leaving_worked = self.state.trace_name == WORKED_NAME
        self.state.use_trace(chapter_traffic(), CHAPTER_NAME)
        if leaving_worked:
            self._leave_worked()

    def _leave_worked(self) -> None:
        """Put back what the worked example set and the learner kept: its window, step and static timeout."""
        s = self.state
        if s.window == worked.WINDOW:
            s.window = s.param.window.default  # first: it bounds the step
            s.step = s.param.step.default
        if s.batch_timeout == worked.BATCH_TIMEOUT:
            s.batch_timeout = s.param.batch_timeout.default

    def _on_traffic(self, event) -> None:
        if event.old == CHAPTER_NAME and self.state.trace is None:
            self.messages.text = GENERATED_NOTE.format(seed=self.state.seed)

    def _on_refusal(self, event) -> None:
        if event.new:
            self.messages.text = event.new

    def _on_upload(self, event) -> None:
        self.state.refusal = ""
        data, name, size = decode_upload(event.new or {})
        requests, message = read_upload(data, name, size)
        if requests is not None:
            try:
                self.state.use_trace(requests, name)
            except ValueError as exc:  # a limit the parser could not see alone; the state is untouched
                requests, message = None, f"{name}: {exc}"
        self.messages.text = " ".join(filter(None, [message, self.state.refusal]))
        if self.chapter_widget is not None:
            self.chapter_widget.open("trace")  # its reset button and message in view

    def load_worked_example(self) -> None:
        """Show the chapter's worked example: A-F on 4 slots, static timeout 1, a 24-step window (`?preset=worked`)."""
        self.state.param.update(slots=worked.SLOTS, batch_timeout=worked.BATCH_TIMEOUT)
        self.state.use_trace(worked.worked_example(), WORKED_NAME)
        self.state.window = worked.WINDOW
        self.state.step = worked.WINDOW - 1

    def _clear_trace(self, _event=None) -> None:
        leaving_worked = self.state.trace_name == WORKED_NAME
        self.state.param.update(trace=None, trace_name="")
        if leaving_worked:
            self._leave_worked()

    def sync_url(self, rewrite: bool = False) -> None:
        """Keep the browser's URL in step with the state, so a view can be shared as a deep link.

        `rewrite`: write the URL now (the page's address could not be read, see `safe_location`).
        """
        location, _ = safe_location()
        if location is None:
            return

        def push(*_events):
            query = query_of(self.state)
            if self.state.trace_name in (CHAPTER_NAME, WORKED_NAME):  # a fixed trace: no seed to share
                query = {k: v for k, v in query.items() if k not in GENERATOR_URL_KEYS}
            if self.state.trace_name == WORKED_NAME:
                query["preset"] = PRESET
            if self.tab != "simulator":
                query["tab"] = self.tab
            query.update(self.exercise_query())
            written[0] = "?" + "&".join(f"{k}={v}" for k, v in query.items())  # before: setting it tells the watchers
            location.search = written[0]

        written = [None]  # the address the app itself wrote last

        self.state.param.watch(push, [*URL_KEYS.values(), "trace_name"])
        self.param.watch(push, "tab")
        self.knee.param.watch(push, ["rate_per_s", "itl_target_ms"])
        self.spread.param.watch(push, "sigma")
        self.temperature.param.watch(push, "bug")
        self.memory.param.watch(push, ["blocks", "budget"])
        self.schedulers.param.watch(
            push, [name for name in self.schedulers.param if name not in ("name", "theme", "state")]
        )
        if rewrite:
            push()
            again = [3]  # a few at most: never a tug of war with a browser that keeps its own

            def browser_said(event) -> None:
                # The browser reports its own address when its page starts. A session built before its page loaded
                # (app/server/builder.py) has written the clean address already, and this would undo it: write it again.
                if event.new != written[0] and again[0] > 0:
                    again[0] -= 1
                    push()

            location.param.watch(browser_said, "search")

    def exercise_query(self) -> dict[str, str]:
        """Return the exercises' URL arguments that differ from their defaults."""
        out = {}
        for key, view, name in (
            ("rate", self.knee, "rate_per_s"),
            ("itl", self.knee, "itl_target_ms"),
            ("sigma", self.spread, "sigma"),
            ("bug", self.temperature, "bug"),
            ("blocks", self.memory, "blocks"),
            ("budget", self.memory, "budget"),
        ):
            value = getattr(view, name)
            if value != view.param[name].default:
                out[key] = str(int(value)) if isinstance(value, bool) else f"{value:g}"
        out.update(self.schedulers.query())
        return out

    def __panel__(self):
        theme = THEMES[self.theme]
        # Custom properties inherit into the shadow roots Bokeh renders in: one place sets the theme's text colours.
        return pn.Column(
            self.chapter_widget,
            self.agent,
            sizing_mode="stretch_width",
            stylesheets=[CSS],
            css_classes=["bv-app"],
            styles=css_variables(theme),
        )
