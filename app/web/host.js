// The served page's simulator tab (app/simulator/widget.py's ChapterWidget): the widget and the story around it, drawn here
// from the server's view JSON, in one module with app/web/widget.js and app/web/batch.js (no globals between views).
// The settings and the replay are Panel's own widgets behind disclosures, made on the server the first time one
// opens and placed here; the story's buttons send their index to the server, which changes the settings. Hooks a benchmark or a test reads: window.__bvWidget,
// window.__bvOnConfirm, window.__bvInterval.
import { mountWidget } from "./widget.js";
import { escape } from "./words.js";



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

export function render({ model, el }) {
  let ahead = {}, waiting = null, stepTimer = null, shownKey = null;
  const outline = storyPart("style");
  const root = storyPart("div", "bv-widget-host");
  const worked = storyPart("div", "bv-worked-box");
  const loop = storyPart("div", "bv-loop-box");
  const batch = storyPart("div", "bv-batch-box");
  const h2h = storyPart("div", "bv-h2h-full");
  const bars = storyPart("div", "bv-bars");
  const here = storyPart("div", "bv-here-box");
  worked.hidden = true;
  el.append(outline);
  const buttons = [];  // [group, index, element]
  const disclosures = {};  // name -> <details>

  function buttonRow(group) {
    const row = storyPart("div", "bv-story-buttons");
    (model.buttons[group] ?? []).forEach((label, index) => {
      const b = storyPart("button", "bv-story-button");
      b.type = "button";
      b.textContent = label;
      b.dataset.group = group;
      b.addEventListener("click", () => model.send_msg({ group, index }));
      buttons.push([group, index, b]);
      row.append(b);
    });
    return row;
  }

  // A disclosure: its contents (Panel's widgets) are made on the server the first time it opens, then placed here.
  function disclosure(name) {
    const details = storyPart("details", "bv-card");
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
    disclosures[name] = details;
    return details;
  }

  function part([kind, value]) {
    if (kind === "widget") return [root, worked];
    if (kind === "html") return [storyPart("div", "bv-text", value)];
    if (kind === "loop") return [loop];
    if (kind === "batch") return [batch];
    if (kind === "h2h") return [storyPart("h3", "", "Head to head"), h2h, bars];
    if (kind === "here") return [here];
    if (kind === "buttons") return [buttonRow(value)];
    if (kind === "disclosure") return [disclosure(value)];
    if (kind === "row") {
      const row = storyPart("div", "bv-settings-row");
      for (const p of value) row.append(...part(p));
      return [row];
    }
    return [];
  }
  // The page: its header, the tab bar, the page's messages (above every tab), then the panels. The simulator's is
  // drawn here; every other tab's view is made on the server the first time the tab opens (its `tab_<key>` child).
  const keys = Object.keys(model.tabs);
  const simulator = storyPart("div", "bv-simulator");
  for (const p of (model.story.length ? model.story : [["widget"]])) simulator.append(...part(p));
  if (!keys.length) el.append(simulator);  // a widget alone (a test's, an embed's)
  const tabButtons = [], panels = {};
  const tablist = storyPart("div", "bv-tabs");
  tablist.setAttribute("role", "tablist");
  tablist.setAttribute("aria-label", "Parts of the page");
  const message = storyPart("div", "bv-message");
  message.setAttribute("role", "alert");
  // Two panels: the simulator's, drawn here, and one that holds whichever other tab's view the server sent.
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
  for (const key of keys) {
    const tab = storyPart("button", "bv-tab");
    Object.assign(tab, { type: "button", id: `bv-tab-${key}`, textContent: model.tabs[key] });
    tab.dataset.tab = key;
    tab.setAttribute("role", "tab");
    tab.setAttribute("aria-controls", key === "simulator" ? "bv-panel-simulator" : "bv-panel-view");
    tab.addEventListener("click", () => selectTab(key, false, true));
    tabButtons.push(tab);
    tablist.append(tab);
    panels[key] = key === "simulator" ? panelOf.simulator : panelOf.view;
  }
  if (keys.length) {
    el.classList.add("bv-page");
    el.append(storyPart("div", "bv-header", model.header), tablist, message, panelOf.simulator, panelOf.view);
  }

  function selectTab(key, focus, fromLearner) {
    for (const tab of tabButtons) {
      const on = tab.dataset.tab === key;
      tab.setAttribute("aria-selected", String(on));
      tab.classList.toggle("bv-active", on);
      tab.tabIndex = on ? 0 : -1;
      if (on && focus) tab.focus();
    }
    panelOf.simulator.hidden = key !== "simulator";
    panelOf.view.hidden = key === "simulator";
    panelOf.view.setAttribute("aria-labelledby", `bv-tab-${key}`);
    if (fromLearner && model.tab !== key) model.tab = key;
    // No window resize here: Bokeh lays out a panel shown again from its own ResizeObserver, and a resize event
    // while a tab's view is arriving would measure a plot not yet rendered.
  }
  tablist.addEventListener("keydown", (e) => {
    const k = tabButtons.findIndex((t) => t.getAttribute("aria-selected") === "true");
    const to = { ArrowRight: k + 1, ArrowLeft: k - 1, Home: 0, End: tabButtons.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    selectTab(tabButtons[(to + tabButtons.length) % tabButtons.length].dataset.tab, true, true);
  });
  const showMessage = () => { message.textContent = model.message; message.hidden = !model.message; };
  showMessage();
  model.on("message", showMessage);
  if (keys.length) {
    selectTab(model.tab, false, false);
    model.on("tab", () => selectTab(model.tab, false, false));
  }

  const showHidden = () => {
    const hidden = new Set(model.hidden);
    for (const [group, index, b] of buttons) b.hidden = hidden.has(`${group}:${index}`);
  };
  const showOpened = () => {
    for (const name of model.opened) if (disclosures[name]) disclosures[name].open = true;
  };
  showHidden();
  showOpened();
  model.on("hidden", showHidden);
  model.on("opened", showOpened);

  // What follows the view but not the step: the full head-to-head, what holds here, the worked example's figures.
  const showView = (view) => {
    if (view.key === shownKey || !view.h2h) return;
    shownKey = view.key;
    h2h.innerHTML = h2hFullHtml(view.h2h);
    bars.innerHTML = h2hBarsHtml(view.h2h, model.config.colours.pair);
    here.innerHTML = view.here ?? "";
    worked.innerHTML = view.worked ?? "";
    worked.hidden = !view.worked;
  };

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
      stepTimer = setTimeout(() => { model.step = widget.step; }, model.config.step_sync_ms ?? 150);
    },
    onView: showView,
    onLoop: (html) => { if (loop.innerHTML !== html) loop.innerHTML = html; },
    onBatch: (html) => { batch.innerHTML = html; },
    // Hovering a request in either timeline outlines its tokens, block-table row and blocks in the batch view.
    onHover: (id) => {
      outline.textContent = id === null ? "" : `.bv-batch-box [data-req="${CSS.escape(id)}"] ` +
        `{ outline: 3px solid ${model.config.colours.text}; outline-offset: 1px; }`;
    },
  };
  const widget = mountWidget(root, host);
  const receive = () => {
    // The served page's payload is JSON text; the exported page's server (app/web/export_host.js) hands the object.
    const p = typeof model.payload === "string" ? JSON.parse(model.payload) : model.payload;
    // A server that kept other settings than asked (the exported page's, at a seed it does not carry) says so.
    const stale = waiting && !p.kept && performance.now() - waiting.at < 3000 &&
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
