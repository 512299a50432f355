"""The page agent: in-app links open in place, and every control gets a name, a label and a visible focus ring.

Bokeh renders each widget in its own shadow root, so neither a page stylesheet nor a label outside reaches it. One
small invisible component walks those roots in the browser, and keeps walking the ones Bokeh adds later:
- a click on a link whose address is a query (`?tab=knee`, `?clock=ms`) is sent to the app, which opens that view
  in place: no reload, and in a course page the host page's address is left alone;
- every slider handle is named by its slider's title, every checkbox by its label (a click on the label toggles
  it), the spinners' arrow buttons and the trace file input get names;
- every shadow root adopts one stylesheet with the focus ring (3 px, the theme's --bv-focus, at least 3:1);
- a block that scrolls sideways takes the keyboard focus, so it can be scrolled without a mouse.
"""

from __future__ import annotations

import json

import param
from panel.reactive import ReactiveHTML

from app.web.bundle import ASSETS

# The focus ring: outline, not box-shadow, so Windows' forced colours keep it. Offset so it never hides a border.
FOCUS_CSS = """
:focus-visible { outline: 3px solid var(--bv-focus, #0072B2) !important; outline-offset: 2px !important; }
.noUi-handle:focus-visible { outline-offset: 1px !important; }
.bk-label[data-bv-for] { cursor: pointer; }
"""

# Panel runs it as the body of the component's render script, with `data` and `view` in scope (not a module).
AGENT_JS = (ASSETS / "page_agent.js").read_text(encoding="utf-8")


class PageAgent(ReactiveHTML):
    """An invisible component that makes the page's links open in place and its controls accessible (see above).

    `link` is the query string of the last in-app link clicked; `clicks` counts them, so the same link twice opens
    its view twice. The app watches `clicks`.
    """

    link = param.String(default="", doc="Query string of the last in-app link clicked, e.g. ?tab=knee")
    clicks = param.Integer(default=0, doc="How many in-app links were clicked")

    _template = '<div id="agent" aria-hidden="true"></div>'
    _scripts = {"render": f"const FOCUS_CSS = {json.dumps(FOCUS_CSS)};\n{AGENT_JS}"}

    def __init__(self, **params):
        params.setdefault("height", 0)
        params.setdefault("width", 0)
        params.setdefault("margin", 0)
        super().__init__(**params)
