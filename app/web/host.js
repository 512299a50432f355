// The served page's simulator tab (app/simulator/widget.py's ChapterWidget): the widget and the story around it, drawn here
// from the server's view JSON, in one module with app/web/widget.js and app/web/batch.js (no globals between views).
// The settings and the replay are Panel's own widgets behind disclosures, made on the server the first time one
// opens and placed here; the story's buttons send their index to the server, which changes the settings. Hooks a benchmark or a test reads: window.__bvWidget,
// window.__bvOnConfirm, window.__bvInterval.
import { compactPair } from "./compare_texts.js";
import { mountWidget } from "./widget.js";
import { escape } from "./words.js";

const CHAPTER_PAIR = ["static", "continuous"];  // the lessons' pair (core/sched/policies.py CHAPTER_PAIR)

function storyPart(tag, cls, html = "") {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (html) node.innerHTML = html;
  return node;
}

/** Return the full head-to-head table: the server's formatted cells in the markup app/simulator/views.py _h2h_table writes. */
export function h2hFullHtml(h2h) {
  const [a, b] = h2h.pair;
  const cell = (key, policy, value) => (key ? `<td data-h2h="${policy}-${key}">${value}</td>` : `<td>${value}</td>`);
  const body = h2h.rows.map(([key, label, s, c]) =>
    `<tr><th scope="row">${label}</th>${cell(key, a, s)}${cell(key, b, c)}</tr>`).join("");
  return `<table class="bv-h2h"><caption>${h2h.caption}</caption>` +
    `<thead><tr><td></td><th scope="col">${h2h.labels[0]}</th><th scope="col">${h2h.labels[1]}</th></tr></thead>` +
    `<tbody>${body}</tbody></table>${h2h.note}`;
}

/** Return the full head-to-head of the two runs `mode` shows: static and continuous, or the mode's own pair. */
export function shownH2h(view, mode) {
  return view.h2h_by?.[mode] ?? view.h2h;
}

/** Return the paired bars: each group's pair scaled to its larger value, labelled with the real numbers. */
export function h2hBarsHtml(h2h, colours) {
  return h2h.bars.map(({ group, values, texts }, g) => {
    const top = Math.max(...values) || 1;
    const rows = h2h.pair.map((policy, k) =>
      // At most 60% of the row, and always room for the label's words whole (a phone broke "continuo|us").
      `<div class="bv-bar-row"><span class="bv-bar" data-bar="${policy}-${g}" style="width:calc(min(60%, 100% - ` +
      `8rem) * ${values[k] / top});background:${colours[k]}"></span>` +
      `<span class="bv-bar-text">${escape(texts[k])}</span></div>`).join("");
    return `<div class="bv-bar-label">${escape(group)}</div><div class="bv-bar-pair">${rows}</div>`;
  }).join("");
}

// ---- the simulator tab's story: the widget's box and the boxes around it, buttons and disclosures ---------------
/** Return the story's boxes: the hover outline's style, the widget's root and the boxes its host fills. */
function storyBoxes() {
  const boxes = {
    outline: storyPart("style"),
    root: storyPart("div", "bv-widget-host"),
    worked: storyPart("div", "bv-worked-box"),
    loop: storyPart("div", "bv-loop-box"),
    batch: storyPart("div", "bv-batch-box"),
    h2h: storyPart("div", "bv-h2h-full"),
    bars: storyPart("div", "bv-bars"),
    here: storyPart("div", "bv-here-box"),
  };
  boxes.worked.hidden = true;
  return boxes;
}

/**
 * Bring the widget (its controls and timelines) into view, where a story button far below it changed it: the
 * learner sees the change the button names. Left alone where its top is already in the upper part of the screen.
 */
function showTimelines(root) {
  const top = root.getBoundingClientRect().top;
  if (top < 0 || top > window.innerHeight / 3) root.scrollIntoView({ block: "start" });
}

/** Return a row of `group`'s story buttons; each sends its index to the server (`story.buttons` keeps them). */
function buttonRow(story, group) {
  const model = story.model, row = storyPart("div", "bv-story-buttons");
  (model.buttons[group] ?? []).forEach((label, index) => {
    const b = storyPart("button", "bv-story-button");
    b.type = "button";
    b.textContent = label;
    b.dataset.group = group;
    b.addEventListener("click", () => {
      model.send_msg({ group, index });
      showTimelines(story.boxes.root);
    });
    story.buttons.push([group, index, b]);  // [group, index, element]
    row.append(b);
  });
  return row;
}

// A disclosure: its contents (Panel's widgets) are made on the server the first time it opens, then placed here.
function disclosure(story, name) {
  const model = story.model, details = storyPart("details", "bv-card");
  details.dataset.disclosure = name;
  const summary = storyPart("summary");
  summary.textContent = model.disclosures[name] ?? name;
  const body = storyPart("div", "bv-card-body");
  details.append(summary, body);
  const place = () => {
    const child = model.get_child(name);
    if (child && body.firstChild !== child) body.replaceChildren(child);
  };
  place();
  model.on(name, place);
  details.addEventListener("toggle", () => {
    if (details.open && !body.childElementCount) model.send_msg({ open: name });
  });
  story.disclosures[name] = details;  // name -> <details>
  return details;
}

/**
 * Return the full head-to-head (every figure as a table, three as bars), shut at first: the first screen's compact
 * table already holds the chapter's figures, and a third rendition open would push the lessons thousands of pixels down.
 */
function fullHeadToHead(boxes) {
  const details = storyPart("details", "bv-card bv-h2h-details"), summary = storyPart("summary");
  summary.textContent = "Every figure of the two runs: lost time, waits, the three averages (a table, and bars)";
  details.append(summary, boxes.h2h, boxes.bars);
  return details;
}

/** Return the elements of one part of the story, [kind, value] as the server lists it. */
function storyItem(story, [kind, value]) {
  const boxes = story.boxes;
  if (kind === "widget") return [boxes.root, boxes.worked];
  if (kind === "html") return [storyPart("div", "bv-text", value)];
  if (kind === "loop") return [boxes.loop];
  if (kind === "batch") return [boxes.batch];
  if (kind === "h2h") return [storyPart("h3", "", "Head to head"), fullHeadToHead(boxes)];
  if (kind === "here") return [boxes.here];
  if (kind === "buttons") return [buttonRow(story, value)];
  if (kind === "disclosure") return [disclosure(story, value)];
  if (kind === "row") {
    const row = storyPart("div", "bv-settings-row");
    for (const p of value) row.append(...storyItem(story, p));
    return [row];
  }
  return [];
}

/** Keep the story's buttons hidden and its disclosures opened as the server says. */
function followStory(story) {
  const model = story.model;
  const showHidden = () => {
    const hidden = new Set(model.hidden);
    for (const [group, index, b] of story.buttons) b.hidden = hidden.has(`${group}:${index}`);
  };
  const showOpened = () => {
    for (const name of model.opened) if (story.disclosures[name]) story.disclosures[name].open = true;
  };
  showHidden();
  showOpened();
  model.on("hidden", showHidden);
  model.on("opened", showOpened);
}

// ---- the page: its header, the tab bar, the page's messages (above every tab), then the panels --------------------
/**
 * Return the two panels: the simulator's, drawn here, and one that holds whichever other tab's view the server sent
 * (every other tab's view is made on the server the first time the tab opens: its `tab_<key>` child).
 */
function tabPanels(model, simulator) {
  const tabPanel = (id, content) => {
    const body = storyPart("div", "bv-tab-panel");
    body.id = id;
    body.setAttribute("role", "tabpanel");
    body.append(content);
    return body;
  };
  const others = storyPart("div", "bv-tab-body");
  const panelOf = { simulator: tabPanel("bv-panel-simulator", simulator), view: tabPanel("bv-panel-view", others) };
  const placeBody = () => {
    const child = model.get_child("tab_body");
    if (child && others.firstChild !== child) others.replaceChildren(child);
  };
  placeBody();
  model.on("tab_body", placeBody);
  return panelOf;
}

/** Show tab `key` (`tabs`: the model, the tab buttons and the panels); `fromLearner`: tell the server. */
function selectTab(tabs, key, focus, fromLearner) {
  for (const tab of tabs.buttons) {
    const on = tab.dataset.tab === key;
    tab.setAttribute("aria-selected", String(on));
    tab.classList.toggle("bv-active", on);
    tab.tabIndex = on ? 0 : -1;
    if (on && focus) tab.focus();
  }
  tabs.panelOf.simulator.hidden = key !== "simulator";
  tabs.panelOf.view.hidden = key === "simulator";
  tabs.panelOf.view.setAttribute("aria-labelledby", `bv-tab-${key}`);
  if (fromLearner && tabs.model.tab !== key) tabs.model.tab = key;
  // No window resize here: Bokeh lays out a panel shown again from its own ResizeObserver, and a resize event
  // while a tab's view is arriving would measure a plot not yet rendered.
}

/** Return the tab bar, a button for each tab in `keys` (the arrow keys, Home and End move between them). */
function tabBar(tabs, keys) {
  const tablist = storyPart("div", "bv-tabs");
  tablist.setAttribute("role", "tablist");
  tablist.setAttribute("aria-label", "Parts of the page");
  for (const key of keys) {
    const tab = storyPart("button", "bv-tab");
    Object.assign(tab, { type: "button", id: `bv-tab-${key}`, textContent: tabs.model.tabs[key] });
    tab.dataset.tab = key;
    tab.setAttribute("role", "tab");
    tab.setAttribute("aria-controls", key === "simulator" ? "bv-panel-simulator" : "bv-panel-view");
    tab.addEventListener("click", () => selectTab(tabs, key, false, true));
    tabs.buttons.push(tab);
    tablist.append(tab);
  }
  tablist.addEventListener("keydown", (e) => {
    const buttons = tabs.buttons, k = buttons.findIndex((t) => t.getAttribute("aria-selected") === "true");
    const to = { ArrowRight: k + 1, ArrowLeft: k - 1, Home: 0, End: buttons.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    selectTab(tabs, buttons[(to + buttons.length) % buttons.length].dataset.tab, true, true);
  });
  return tablist;
}

/** Put the page in `el`: with tabs, its header, tab bar, message and panels; without, the simulator alone. */
function mountPage(el, model, simulator) {
  const keys = Object.keys(model.tabs);
  if (!keys.length) el.append(simulator);  // a widget alone (a test's, an embed's)
  const message = storyPart("div", "bv-message");
  message.setAttribute("role", "alert");
  const tabs = { model, buttons: [], panelOf: tabPanels(model, simulator) };
  const tablist = tabBar(tabs, keys);
  if (keys.length) {
    el.classList.add("bv-page");
    el.append(storyPart("div", "bv-header", model.header), tablist, message, tabs.panelOf.simulator,
      tabs.panelOf.view);
  }
  const showMessage = () => { message.textContent = model.message; message.hidden = !model.message; };
  showMessage();
  model.on("message", showMessage);
  if (keys.length) {
    selectTab(tabs, model.tab, false, false);
    model.on("tab", () => selectTab(tabs, model.tab, false, false));
  }
}

/**
 * Return what holds here: the view's line on static against continuous (the lessons' pair), or, where the mode on
 * screen shows another pair, which pair it is and how to read the lessons' (their figures are not on screen).
 */
export function hereHtml(view, mode) {
  const pair = compactPair(view, mode);
  if (pair.every((p) => CHAPTER_PAIR.includes(p))) return view.here ?? "";
  const label = (p) => escape(view.runs[p].traits.label);
  const other = pair[0] === mode ? pair[1] : pair[0];
  return `<p class="bv-here" data-here="other"><b>Here</b> the timelines show ${label(mode)} against ` +
    `${label(other)}. The lessons above compare static and continuous batching: choose either to see them on ` +
    "this traffic.</p>";
}

// ---- the widget's host: the server's view in, the settings and the step out --------------------------------------
/** Return the host the widget reads its data through (`state`: what the host and `receive` share). */
function widgetHost(model, boxes, state) {
  // What follows the view but not the step: the full head-to-head, what holds here, the worked example's figures.
  const showView = (view, settings) => {
    const mode = settings?.mode ?? "continuous";
    if (view.h2h) boxes.here.innerHTML = hereHtml(view, mode);  // follows the mode too
    if (!view.h2h) return;
    const h2h = shownH2h(view, mode);  // the two runs on screen: the mode's pair
    const shown = `${view.key}:${h2h.pair.join(",")}`;
    if (shown === state.shownKey) return;
    state.shownKey = shown;
    boxes.h2h.innerHTML = h2hFullHtml(h2h);
    boxes.bars.innerHTML = h2hBarsHtml(h2h, h2h.pair.map((p) => view.runs[p].traits.colour));
    boxes.worked.innerHTML = view.worked ?? "";
    boxes.worked.hidden = !view.worked;
  };
  return {
    config: model.config,
    // A neighbour the server sent ahead draws at once, but only from the settings it was computed beside.
    lookup: (s) => (state.waiting ? null : state.ahead[`${s.slots}:${s.seed}`] ?? null),
    settle: (s) => {
      state.waiting = { ...s, at: performance.now() };
      model.mode = s.mode; model.slots = s.slots; model.seed = s.seed;
    },
    onStep: (t, final) => {
      clearTimeout(state.stepTimer);
      if (final) { model.step = t; return; }
      state.stepTimer = setTimeout(() => { model.step = state.widget.step; }, model.config.step_sync_ms ?? 150);
    },
    onView: showView,
    onLoop: (html) => { if (boxes.loop.innerHTML !== html) boxes.loop.innerHTML = html; },
    onBatch: (html) => { boxes.batch.innerHTML = html; },
    // Hovering a request in either timeline outlines its tokens, block-table row and blocks in the batch view.
    onHover: (id) => {
      boxes.outline.textContent = id === null ? "" : `.bv-batch-box [data-req="${CSS.escape(id)}"] ` +
        `{ outline: 3px solid ${model.config.colours.text}; outline-offset: 1px; }`;
    },
  };
}

/** Hand the server's payload to the widget, unless it answers settings the learner has already moved past. */
function receivePayload(model, state) {
  // The served page's payload is JSON text; the exported page's server (app/web/export/export_host.js) hands the object.
  const p = typeof model.payload === "string" ? JSON.parse(model.payload) : model.payload;
  // A server that kept other settings than asked (the exported page's, at a seed it does not carry) says so.
  const waiting = state.waiting;
  const stale = waiting && !p.kept && performance.now() - waiting.at < 3000 &&
    (p.settings.slots !== waiting.slots || p.settings.seed !== waiting.seed || p.settings.mode !== waiting.mode);
  if (stale) return;  // an answer for settings the learner has already moved past
  state.waiting = null;
  state.ahead = p.ahead;
  // The step is the model's: the server may change it in the same patch after this payload was made (a quiz
  // link opens the worked example, whose window clamps the step, then sets the link's), and the patch's order
  // of the two is not the order they were made in.
  state.widget.confirm(p.view, p.settings, Math.min(model.step, p.view.window - 1));
  window.__bvOnConfirm?.();  // a benchmark's hook
}

export function render({ model, el }) {
  const boxes = storyBoxes();
  el.append(boxes.outline);
  const story = { model, boxes, buttons: [], disclosures: {} };
  const simulator = storyPart("div", "bv-simulator");
  for (const p of (model.story.length ? model.story : [["widget"]])) simulator.append(...storyItem(story, p));
  mountPage(el, model, simulator);
  followStory(story);
  const state = { ahead: {}, waiting: null, stepTimer: null, shownKey: null, widget: null };
  state.widget = mountWidget(boxes.root, widgetHost(model, boxes, state));
  const receive = () => receivePayload(model, state);
  receive();
  model.on("payload", receive);
  model.on("step", () => state.widget.setStep(model.step));
  window.__bvWidget = state.widget;
}
