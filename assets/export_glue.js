// The exported page's host for the renderer (app/export.py builds the page; app/widget.py's GLUE_JS is the served
// page's host). Its views come from the table the core computed at export time (<script id="bv-data">), assembled
// into the shape app/widget_data.py view_json gives; it also runs the page around the widget: the tabs, the traffic
// choice, the lessons, the head-to-head, the loop and batch at the cursor, in-app links and the quiz.

const D = JSON.parse(document.getElementById("bv-data").textContent);
const MODES = Object.keys(D.policies), POLICIES = D.pair;  // every mode; the full head-to-head's pair
const LINK_KEYS = new Set(["tab", "preset", "mode", "slots", "seed", "step", "lengths", "arrival_window"]);
const $ = (id) => document.getElementById(id);

// ---- views, as view_json builds them, from the flat runs ---------------------------------------------------------
const table = (name) => (name === "generated" ? D.generated : D.fixed[name]);
const viewCache = new Map();

/** Return the view of `name`'s traffic ("generated", "chapter", "worked" or a lesson) at `slots` (and `seed`). */
function viewOf(name, slots, seed) {
  const generated = name === "generated";
  const key = generated ? `generated:${seed}:${slots}` : `${name}:${slots}`;
  const known = viewCache.get(key);
  if (known) return known;
  const t = table(name), traffic = generated ? t.traffic[seed] : t, n = traffic.ids.length;
  const runs = {};
  for (const policy of MODES) {
    const flat = generated ? t.runs[policy][slots - 1][seed] : t.runs[policy][slots - 1];
    const finish = flat.slice(n, 2 * n);
    runs[policy] = {
      ...D.policies[policy], slots, drain: n ? Math.max(...finish) : 0, start: flat.slice(0, n), finish,
      slot: flat.slice(2 * n, 3 * n), release: flat.slice(3 * n, 4 * n),
    };
  }
  const view = {
    key, window: t.window, clock: "steps", both: true, generator: generated || t.generator, slots,
    slots_end: D.slots_end, min_label_cells: D.min_label_cells, ids: traffic.ids, arrival: traffic.arrival,
    prompt: traffic.prompt, output: traffic.output, priority: traffic.priority, runs,
  };
  viewCache.set(key, view);
  return view;
}

// ---- the full head-to-head and its bars: cells formatted in Python, placed here ------------------------------------
function h2hCells(name, slots, seed) {
  const t = table(name), tpl = D.h2h_templates[String(t.requests)];
  const cells = (name === "generated" ? t.h2h[slots - 1][seed] : t.h2h[slots - 1]).split("|");
  const only = tpl.keys.indexOf(null), done = tpl.keys.indexOf("completed");
  POLICIES.forEach((policy, j) => {
    cells[2 * only + j] = D.completed_only.replace("{policy}", policy).replace("{latency}", cells[2 * only + j])
      .replace("{completed}", cells[2 * done + j].split("/")[0]);
  });
  return { cells, tpl };
}

function h2hHtml(name, slots, seed) {
  const { cells, tpl } = h2hCells(name, slots, seed);
  return tpl.html.replace(/\{\{(\d+)\}\}/g, (_m, k) => cells[Number(k)]);
}

/** The served page's paired bars (completed, utilisation, latency over every request), from the table's cells. */
function barsHtml(name, slots, seed) {
  const { cells, tpl } = h2hCells(name, slots, seed);
  const at = (key, j) => cells[2 * tpl.keys.indexOf(key) + j];
  const groups = [
    ["completed", (j) => at("completed", j).split("/")[0]],
    ["utilisation", (j) => at("utilisation", j).replace("%", "")],
    ["avg_latency_all", (j) => (at("avg_latency_all", j) === "–" ? "0.0" : at("avg_latency_all", j))],
  ];
  return groups.map(([key, value], g) => {
    const values = POLICIES.map((_p, j) => value(j)), top = Math.max(...values.map(Number)) || 1;
    const rows = POLICIES.map((policy, j) =>
      `<div class="bv-bar-row"><span class="bv-bar" data-bar="${policy}-${key}" style="width:${
        (60 * Number(values[j])) / top}%;background:${D.bars.colours[policy]}"></span>` +
      `<span class="bv-bar-text">${policy}: ${values[j]}</span></div>`).join("");
    return `<div class="bv-bar-label">${D.bars.groups[g]}</div><div class="bv-bar-pair">${rows}</div>`;
  }).join("");
}

// ---- the widget and its host -----------------------------------------------------------------------------------
const cur = { traffic: "chapter", mode: D.defaults.mode, slots: D.defaults.slots, seed: D.defaults.seed };
const loopEl = $("bv-loop"), batchEl = $("bv-batch");
const hoverStyle = document.head.appendChild(document.createElement("style"));
let widget = null;

// Moving the seed on the chapter's traffic shows generated traffic at that seed, as on the served page.
const trafficFor = (s) => (s.seed !== cur.seed && viewOf(cur.traffic, cur.slots, cur.seed).generator
  ? "generated" : cur.traffic);

/** Show what follows the settings but not the step: the traffic choice, the worked caption, the head-to-head. */
function commit(traffic, settings) {
  Object.assign(cur, settings, { traffic });
  for (const b of document.querySelectorAll("[data-traffic], [data-lesson]")) {
    b.setAttribute("aria-pressed", String((b.dataset.traffic ?? b.dataset.lesson) === traffic));
  }
  $("bv-worked").hidden = !(traffic === "worked" && cur.slots === D.worked_slots);
  $("bv-h2h").innerHTML = h2hHtml(traffic, cur.slots, cur.seed);
  $("bv-bars").innerHTML = barsHtml(traffic, cur.slots, cur.seed);
  document.body.dataset.bvTraffic = traffic;
}

const host = {
  config: D.config,
  lookup: (s) => viewOf(trafficFor(s), s.slots, s.seed),  // every setting the page offers is in its table
  settle: (s) => commit(trafficFor(s), s),
  onStep: () => {},
  onLoop: (html, t) => {
    if (loopEl.innerHTML !== html) loopEl.innerHTML = html;
    // The batch at the cursor (assets/batch.js, concatenated in when app/export.py finds it).
    if (batchEl && typeof batchHtml === "function" && widget?.view) {
      const b = batchHtml(widget.view, D.config, widget.settings.mode, t);  // its constants: D.config.batch
      if (batchEl.innerHTML !== b) batchEl.innerHTML = b;
    }
  },
  onHover: (id) => {
    hoverStyle.textContent = id === null ? "" : `#bv-batch [data-req="${CSS.escape(id)}"] { outline: 3px solid ` +
      `${D.config.colours.highlight}; outline-offset: 1px; }`;
  },
};

/** Show `traffic` at `settings` and `step`, from a button or a link (the widget's own controls go through host). */
function open(traffic, settings, step) {
  widget.stop();
  const view = viewOf(traffic, settings.slots, settings.seed);
  commit(traffic, settings);
  widget.confirm(view, { mode: settings.mode, slots: settings.slots, seed: settings.seed },
    Math.max(0, Math.min(step ?? view.window - 1, view.window - 1)));
}

/** Keep the step where the window stays; a traffic with another window opens on its last step, as served. */
function stepFor(traffic) {
  return widget.view && table(traffic).window === widget.view.window ? widget.step : null;
}

// ---- tabs -------------------------------------------------------------------------------------------------------
const tabs = [...document.querySelectorAll(".bv-tabs [role=tab]")];

function selectTab(key, focus = false) {
  for (const tab of tabs) {
    const on = tab.dataset.tab === key;
    tab.setAttribute("aria-selected", String(on));
    tab.tabIndex = on ? 0 : -1;
    $(tab.getAttribute("aria-controls")).hidden = !on;
    if (on && focus) tab.focus();
  }
  document.body.dataset.bvTab = key;
  // Bokeh lays out a panel it could not measure while hidden once the window says its size changed.
  window.dispatchEvent(new Event("resize"));
}

for (const tab of tabs) tab.addEventListener("click", () => selectTab(tab.dataset.tab));
document.querySelector(".bv-tabs").addEventListener("keydown", (e) => {
  const k = tabs.findIndex((t) => t.getAttribute("aria-selected") === "true");
  const to = { ArrowRight: k + 1, ArrowLeft: k - 1, Home: 0, End: tabs.length - 1 }[e.key];
  if (to === undefined) return;
  e.preventDefault();
  selectTab(tabs[(to + tabs.length) % tabs.length].dataset.tab, true);
});

// ---- in-app links: the page's own address, the story's links and the quiz's, opened in place --------------------
const showValue = (v) => `'${v.length <= 40 ? v : v.slice(0, 37) + "..."}'`;
// Plain ASCII digits only (no `1_0`, no other scripts' digits), at most 18 of them: a number, never Infinity.
const wholeNumber = (v) => (/^\s*[0-9]{1,18}\s*$/.test(v) ? Number(v) : null);

/** Open a query string of the app (`?preset=worked&step=5`) from the default settings, as the served page does. */
function openLink(query) {
  const q = new URLSearchParams(query), messages = [], d = D.defaults;
  let tab = "simulator", traffic = "chapter", seed = d.seed, mode = d.mode, slots = d.slots, step = null;
  for (const key of new Set(q.keys())) {
    if (!LINK_KEYS.has(key)) messages.push(`URL: ${key} is set on the served app only; this page ignores it.`);
  }
  const value = (key) => q.getAll(key).at(-1).trim();
  if (q.has("tab")) {
    if (D.tabs.includes(value("tab"))) tab = value("tab");
    else messages.push(`URL: tab=${showValue(value("tab"))} is not on this page (use ${D.tabs.join(", ")}); ` +
      "showing simulator.");
  }
  if (q.has("seed")) {
    const n = wholeNumber(value("seed"));
    if (n !== null && n <= 99) { seed = n; traffic = "generated"; }
    else messages.push(`URL: seed=${showValue(value("seed"))} is not allowed (use 0-99); kept ${seed}.`);
  }
  const junk = [];  // a traffic setting that is no value at all is named, not read as "not asked"
  if (q.has("arrival_window") && wholeNumber(value("arrival_window")) === null) junk.push("arrival_window");
  if (q.has("lengths") && !D.length_kinds.includes(value("lengths"))) junk.push("lengths");
  for (const key of junk) {
    messages.push(`URL: ${key}=${showValue(value(key))} is not allowed (` +
      (key === "lengths" ? `use ${D.length_kinds.join(", ")}` : "use a whole number") + "); kept this page's traffic.");
  }
  if (!junk.length && (q.has("lengths") || q.has("arrival_window"))) {
    const asked = { lengths: q.has("lengths") ? value("lengths") : null,
                    arrival_window: q.has("arrival_window") ? wholeNumber(value("arrival_window")) : null };
    const same = (want) => (asked.lengths ?? want.base.lengths) === want.lengths &&
      (asked.arrival_window ?? want.base.arrival_window) === want.arrival_window;
    const lesson = Object.entries(D.lessons).find(([, l]) => same({ ...l, base: D.lesson_base }));
    if (same({ ...D.generator_defaults, base: D.generator_defaults })) traffic = "generated";
    else if (lesson && seed === d.seed) traffic = lesson[0];
    else messages.push("URL: these lengths and arrival window are set on the served app only (this page holds " +
      `its own traffic and the story's lessons, at seed ${d.seed}); kept this page's traffic.`);
  }
  if (q.has("preset")) {
    if (value("preset") === "worked") { traffic = "worked"; slots = D.worked_slots; }
    else messages.push(`URL: preset=${showValue(value("preset"))} is not allowed (use worked); kept the traffic.`);
  }
  if (q.has("mode")) {
    if (MODES.includes(value("mode"))) mode = value("mode");
    else messages.push(`URL: mode=${showValue(value("mode"))} is not allowed (use ${MODES.join(" or ")}); ` +
      `kept ${mode}.`);
  }
  if (q.has("slots")) {
    const n = wholeNumber(value("slots"));
    const shown = showValue(value("slots"));
    if (n === null) messages.push(`URL: slots=${shown} is not a whole number (allowed 1-${D.slots_end}); kept ${slots}.`);
    else {
      slots = Math.max(1, Math.min(n, D.slots_end));
      if (slots !== n) messages.push(`URL: slots=${shown} is outside 1-${D.slots_end} on this page; using ${slots}.`);
    }
  }
  const last = table(traffic).window - 1;
  if (q.has("step")) {
    const n = wholeNumber(value("step"));
    if (n === null) messages.push(`URL: step=${showValue(value("step"))} is not a whole number; kept ${last}.`);
    else {
      step = Math.min(n, last);
      if (step !== n) messages.push(`URL: step=${showValue(value("step"))} is past the last step; using ${last}.`);
    }
  }
  const box = $("bv-message");
  box.textContent = messages.join(" ");
  box.hidden = messages.length === 0;
  open(traffic, { mode, slots, seed }, step);
  selectTab(tab);
}

function follow(query) {
  openLink(query);
  document.querySelector(".bv-tabs").scrollIntoView({ block: "start" });
}

document.addEventListener("click", (e) => {
  const a = e.target.closest?.('a[href^="?"]');
  if (!a || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;  // a new tab loads the URL
  e.preventDefault();
  follow(a.getAttribute("href"));
});

// ---- the traffic choice, the lessons, "Try slots = 1" -----------------------------------------------------------
const settings = () => ({ mode: cur.mode, slots: cur.slots, seed: cur.seed });
for (const b of document.querySelectorAll("[data-traffic]")) {
  b.addEventListener("click", () => {
    const traffic = b.dataset.traffic;
    if (traffic === "worked") open("worked", { ...settings(), slots: D.worked_slots }, null);
    else open(traffic, settings(), stepFor(traffic));
  });
}
for (const b of document.querySelectorAll("[data-lesson]")) {
  // A lesson's sentence holds on its own slot count (app/story.py LESSON_SLOTS), so its click sets that too.
  b.addEventListener("click", () =>
    open(b.dataset.lesson, { ...settings(), slots: D.lesson_slots }, stepFor(b.dataset.lesson)));
}
document.querySelector("[data-one-slot]").addEventListener("click", () =>
  open(cur.traffic, { ...settings(), slots: 1 }, widget.step));

// Code and output frames that scroll sideways take the keyboard focus, so they can be scrolled without a mouse.
function focusable() {
  for (const el of document.querySelectorAll(".bv-source, .bv-pre, .bv-h2h-full")) {
    if (el.scrollWidth > el.clientWidth) el.tabIndex = 0;
    else el.removeAttribute("tabindex");
  }
}

widget = mountWidget($("bv-widget"), host);
window.__bvWidget = widget;
mountQuiz($("bv-quiz"), D.quiz, follow);
openLink(window.location.search);
focusable();
new ResizeObserver(focusable).observe(document.body);
window.__bvExport = { viewOf, openLink, selectTab, h2hHtml, state: cur, data: D };
document.body.dataset.ready = "1";
