// The page agent's script (app/page/page_agent.py): the body of a ReactiveHTML `render` script, not a module. Panel runs
// it with `data` (the agent's properties) and `view` in scope, and app/page/page_agent.py puts FOCUS_CSS before it.
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
