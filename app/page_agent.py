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

# The focus ring: outline, not box-shadow, so Windows' forced colours keep it. Offset so it never hides a border.
FOCUS_CSS = """
:focus-visible { outline: 3px solid var(--bv-focus, #0072B2) !important; outline-offset: 2px !important; }
.noUi-handle:focus-visible { outline-offset: 1px !important; }
.bk-label[data-bv-for] { cursor: pointer; }
"""

AGENT_JS = r"""
const agents = window.__bvAgents = window.__bvAgents || [];
// The agent's place on the page: the light-DOM element its shadow roots hang from (one per embedded app).
const top_of = (node) => { let n = node;
  while (n && n.getRootNode() instanceof ShadowRoot) n = n.getRootNode().host;
  return n ? n.closest('[data-root-id], .bk-root, body') || document.body : document.body; };
const me = { data, top: top_of(view.el) };
agents.push(me);
if (window.__bvAgentInstalled) return;
window.__bvAgentInstalled = true;

document.addEventListener('click', (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.composedPath().find((n) => n instanceof HTMLAnchorElement);
  const href = a ? (a.getAttribute('href') || '') : '';
  if (!href.startsWith('?')) return;
  const live = agents.filter((g) => g.top.isConnected);
  const top = top_of(a);
  const agent = live.find((g) => g.top === top || g.top.contains(a)) || (live.length === 1 ? live[0] : null);
  if (!agent) return;  // not one of ours: let the browser follow it
  e.preventDefault();
  // Plain assignments: Panel sends a property to Python only where a script assigns `data.<name> =`.
  const data = agent.data;
  data.link = href;
  data.clicks = data.clicks + 1;
}, true);

const sheet = new CSSStyleSheet();
sheet.replaceSync(FOCUS_CSS);
const text_of = (node) => (node ? node.textContent : '').replace(/\s+/g, ' ').trim();
const own_text = (node) => [...(node ? node.childNodes : [])].filter((c) => c.nodeType === 3)
  .map((c) => c.textContent).join('').replace(/:\s*$/, '').trim();
const name = (elt, label) => {
  if (label && elt.getAttribute('aria-label') !== label) elt.setAttribute('aria-label', label);
};

function fix(root) {
  for (const h of root.querySelectorAll('.noUi-handle')) {
    const group = h.closest('.bk-input-group');
    name(h, own_text(group && group.querySelector('.bk-slider-title')) || 'Slider');
  }
  for (const box of root.querySelectorAll('input[type=checkbox]')) {
    const label = box.nextElementSibling;
    if (box.labels && box.labels.length) continue;
    if (label && label.classList.contains('bk-label')) {
      name(box, text_of(label));
      if (!label.dataset.bvFor) {
        label.dataset.bvFor = '1';
        label.addEventListener('click', () => box.click());  // a click on the words toggles the box
      }
    }
  }
  for (const b of root.querySelectorAll('.bk-spin-btn-up')) name(b, 'Increase');
  for (const b of root.querySelectorAll('.bk-spin-btn-down')) name(b, 'Decrease');
  for (const input of root.querySelectorAll('input[type=file]')) {
    const label = input.previousElementSibling;
    if (label && label.tagName === 'LABEL') { label.htmlFor = input.id; name(input, text_of(label)); }
  }
  for (const box of root.querySelectorAll('.bv-batches, .bv-source, .bv-pre, .bv-loop, .bv-batch')) {
    const scrolls = box.clientWidth > 0 && box.scrollWidth > box.clientWidth + 1;
    if (scrolls && !box.hasAttribute('tabindex')) {
      box.tabIndex = 0;
      box.setAttribute('role', 'group');
      name(box, 'Scrolls sideways: ' + (text_of(box.querySelector('[class$=title], h3, h4')) || 'wide content'));
    }
  }
}

const seen = new WeakSet();
const pending = new Set();
let timer = null;
const later = (root) => { pending.add(root);
  if (timer === null) timer = setTimeout(() => { timer = null;
    const roots = [...pending]; pending.clear(); for (const r of roots) visit(r, true); }, 30); };
function visit(root, again) {
  if (!seen.has(root)) {
    seen.add(root);
    if (root instanceof ShadowRoot && !root.adoptedStyleSheets.includes(sheet))
      root.adoptedStyleSheets = [...root.adoptedStyleSheets, sheet];
    new MutationObserver(() => later(root)).observe(root, { childList: true, subtree: true, attributes: true,
      attributeFilter: ['class'] });
  } else if (!again) return;
  fix(root);
  for (const node of root.querySelectorAll('*')) if (node.shadowRoot) visit(node.shadowRoot, false);
}
if (!document.adoptedStyleSheets.includes(sheet)) document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
visit(document, true);
for (const wait of [300, 1000, 3000]) setTimeout(() => visit(document, true), wait);
window.addEventListener('resize', () => later(document));
window.__bvAgentScan = () => visit(document, true);  // tests: label what is on the page now
"""


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
