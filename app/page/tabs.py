"""What the tabs' views share: building a view when first opened, deep links' numbers, the text pane, messages."""

from __future__ import annotations

import html

import panel as pn
import param

from app.page.url import query_value
from app.web.style import CSS
from core.limits import plain_float, plain_int

MAX_SHOWN = 40


class LazyViewer(pn.viewable.Viewer):
    """A view built the first time it is shown: a new session pays nothing for a tab it never opens.

    Subclasses build their figures and watchers in `_build` and return their layout from `_compose`.
    """

    def __init__(self, **params):
        super().__init__(**params)
        self._layout = None

    def _build(self) -> None:
        raise NotImplementedError

    def _compose(self) -> pn.viewable.Viewable:
        raise NotImplementedError

    def __panel__(self):
        if self._layout is None:
            self._build()
            self._layout = self._compose()
        return self._layout


def text_pane(text: str) -> pn.pane.HTML:
    """Return an HTML pane in the app's style."""
    return pn.pane.HTML(text, sizing_mode="stretch_width", stylesheets=[CSS])


def query_number(
    query: dict, key: str, low: float, high: float, current: float, integer: bool = False
) -> tuple[float | None, str]:
    """Return (a number from the URL, or None, and a message): within [low, high], or refused and named.

    One parser for every URL number (core.limits's plain_int and plain_float): ASCII digits only, no `2_0`; an
    `integer` key takes whole numbers only (no `7.9`, no `1e1`).
    """
    if key not in query:
        return None, ""
    text = query_value(query[key]).strip()
    shown = repr(text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "...")
    value = plain_int(text) if integer else plain_float(text)
    if value is None:
        what = "a whole number" if integer else "a number"
        return None, f"URL: {key}={shown} is not {what} (allowed {low:g}..{high:g}); kept {current:g}."
    if not low <= value <= high:
        clamped = min(max(value, low), high)
        given = text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."  # as written: 1000000000, not 1e+09
        span = f"{plain_number(low)}..{plain_number(high)}"
        return clamped, f"URL: {key}={given} is out of range {span}; using {plain_number(clamped)}."
    return value, ""


def plain_number(value: float) -> str:
    """Return a number as an address writes it back: whole numbers as integers, others to every digit they have."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class Messages(pn.viewable.Viewer):
    """One visible place for input problems (URL values, uploaded files); the app keeps working."""

    text = param.String(default="")

    def __panel__(self):
        box = pn.pane.HTML(visible=False, sizing_mode="stretch_width", stylesheets=[CSS])

        def show(event=None):
            box.object = f'<div class="bv-message" role="alert">{html.escape(self.text)}</div>'
            box.visible = bool(self.text)

        self.param.watch(show, "text")
        show()
        return box
