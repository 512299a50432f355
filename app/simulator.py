"""The whole app: controls beside the timeline and the head-to-head panel, deep links, and trace upload."""

from __future__ import annotations

import panel as pn
import param

from core import worked_example as worked

from .palette import THEMES
from .replay_view import ReplayView
from .state import SimState
from .style import CSS
from .upload import TraceUpload, decode_upload, read_upload
from .url import URL_KEYS, parse_query, parse_theme, query_of, query_value, safe_location
from .views import Controls, HeadToHeadView, Messages, TimelineView

PRESET = "worked"
WORKED_NAME = "the chapter's worked example"


class App(pn.viewable.Viewer):
    """The batchviz simulator: `App()` in a notebook, `App().servable()` when served."""

    state = param.ClassSelector(class_=SimState)
    theme = param.Selector(default="light", objects=list(THEMES), doc="Page colours (?theme=dark)")

    def __init__(self, query: dict | None = None, **params):
        params.setdefault("state", SimState())
        super().__init__(**params)
        self.messages = Messages()
        self.reset_trace = pn.widgets.Button(label="Use generated traffic", visible=False)
        self.reset_trace.on_click(self._clear_trace)
        if query:
            self._apply_query(query)
        self.controls = Controls(state=self.state)
        self.timeline = TimelineView(state=self.state, theme=self.theme)
        self.head_to_head = HeadToHeadView(state=self.state, theme=self.theme)
        self.replay = ReplayView(state=self.state)
        self.upload = TraceUpload(sizing_mode="stretch_width")
        self.upload.param.watch(self._on_upload, "upload")
        self.worked = pn.widgets.Button(label="The chapter's worked example (A-F)")
        self.worked.on_click(lambda _e: self.load_worked_example())

    def _apply_query(self, query: dict) -> None:
        values, messages = parse_query(query, self.state)
        if "theme" in query:
            self.theme, theme_message = parse_theme(query)
            messages += [theme_message] if theme_message else []
        if "preset" in query:
            preset = query_value(query["preset"]).strip()
            if preset == PRESET:
                self.load_worked_example()
            else:
                messages.append(f"URL: preset={preset[:40]!r} is not allowed (use {PRESET}); kept the traffic.")
        if "window" in values and "step" not in values:
            values["step"] = values["window"]
        # The window first: it sets the step's bounds, which a deep link past step 64 needs before the step is set.
        if "window" in values:
            self.state.window = values.pop("window")
        self.state.param.update(**values)
        self.messages.text = " ".join(messages)

    def _on_upload(self, event) -> None:
        data, name, size = decode_upload(event.new or {})
        requests, message = read_upload(data, name, size)
        if requests is not None:
            try:
                self.state.use_trace(requests, name)
            except ValueError as exc:  # a limit the parser could not see alone; the state is untouched
                requests, message = None, f"{name}: {exc}"
        self.messages.text = message
        self.reset_trace.visible = self.state.trace is not None

    def load_worked_example(self) -> None:
        """Show the chapter's worked example: requests A-F on 4 slots, static batch timeout 1 (`?preset=worked`)."""
        self.state.param.update(slots=worked.SLOTS, batch_timeout=worked.BATCH_TIMEOUT)
        self.state.use_trace(worked.worked_example(), WORKED_NAME)
        self.reset_trace.visible = True

    def _clear_trace(self, _event=None) -> None:
        self.state.param.update(trace=None, trace_name="")
        self.reset_trace.visible = False

    def sync_url(self, rewrite: bool = False) -> None:
        """Keep the browser's URL in step with the state, so a view can be shared as a deep link.

        `rewrite`: write the URL now (the page's address could not be read, see `safe_location`).
        """
        location, _ = safe_location()
        if location is None:
            return

        def push(*_events):
            query = query_of(self.state)
            if self.state.trace_name == WORKED_NAME:
                query["preset"] = PRESET
            location.search = "?" + "&".join(f"{k}={v}" for k, v in query.items())

        self.state.param.watch(push, [*URL_KEYS.values(), "trace_name"])
        if rewrite:
            push()

    def __panel__(self):
        controls = self.controls.__panel__()
        self.timeline.link_player(self.controls.player)
        sidebar = pn.Column(
            controls,
            self.worked,
            pn.pane.Markdown("**Load a trace**"),
            self.upload,
            self.reset_trace,
            width=310,
            css_classes=["bv-sidebar"],
        )
        main = pn.Column(
            self.messages,
            self.timeline,
            self.head_to_head,
            self.replay,
            css_classes=["bv-main"],
            styles={"flex": "1 1 560px", "min-width": "300px"},
        )
        header = pn.pane.HTML(
            "<h1>Static vs continuous batching</h1><p>Each row is a batch slot, each column one forward pass.</p>",
            sizing_mode="stretch_width",
            css_classes=["bv-header"],
            stylesheets=[CSS],
        )
        body = pn.Row(sidebar, main, sizing_mode="stretch_width", styles={"flex-wrap": "wrap", "gap": "16px"})
        theme = THEMES[self.theme]
        # A custom property inherits into the shadow roots Bokeh renders in, so one place sets the muted text colour.
        return pn.Column(
            header,
            body,
            sizing_mode="stretch_width",
            stylesheets=[CSS],
            css_classes=["bv-app"],
            styles={"--bv-muted": theme.muted},
        )
