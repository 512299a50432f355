// The exported page's server, in the page: it answers app/web/host.js exactly as app/simulator/widget.py's ChapterWidget does,
// from the served page's own view JSON computed at export time (app/export/views.py), so the two pages share one
// host, one renderer and one data contract. A "model" here stands in for Panel's: the host reads and sets its
// properties, listens to them, and sends it the story's button presses.
// Hooks a test reads: window.__bvExport (the data, the state, openLink, viewAt), window.__bvWidget (host.js).
import { render } from "../host.js";
import { inflate } from "./export_pack.js";
import { mountQuiz } from "../tabs/quiz.js";

export const D = JSON.parse(document.getElementById("bv-data").textContent);
const $ = (id) => document.getElementById(id);

// ---- the views: each place's pack inflated when first reached -------------------------------------------------
const inflated = new Map(), ready = new Map();  // pack key -> Promise of its views; -> its views once inflated

// The other tabs' own state in the address and links (app/web/export/export_memory.js registers the Memory tab's).
export const tabs = { changed: () => followAddress() };

const packKey = (place, seed) => (D.places[place].seeds.length ? `${place}:${seed}` : place);
function views(key) {
  if (!inflated.has(key)) {
    inflated.set(key, inflate(D.packs[key]).then((v) => { ready.set(key, v); return v; }));
  }
  return inflated.get(key);
}
/** Return the view of `place` at `slots` (and `seed`): the JSON the served page sends for the same settings. */
async function viewAt(place, slots, seed) {
  return (await views(packKey(place, seed)))[slots - 1];
}

// ---- the theme: ?theme=dark is read when the page opens, as the served page reads it ---------------------------
const asked_theme = (new URLSearchParams(window.location.search).getAll("theme").at(-1) ?? "").trim().toLowerCase();
export const THEME = asked_theme === "dark" ? "dark" : "light";
if (THEME === "dark") document.body.classList.add("bv-dark");
for (const [name, value] of Object.entries(D.themes[THEME].variables)) {
  document.querySelector(".bv-app")?.style.setProperty(name, value);
}

// ---- the model host.js draws from, and the server's state behind it -------------------------------------------
const cur = { place: "chapter", mode: D.defaults.mode, slots: D.defaults.slots, seed: D.defaults.seed, step: 0 };
const listeners = new Map(), children = {};
const model = {
  on(name, callback) { (listeners.get(name) ?? listeners.set(name, []).get(name)).push(callback); },
  get_child(name) { return children[name] ?? null; },
  send_msg(message) { press(message); },
};
const emit = (name) => { for (const callback of listeners.get(name) ?? []) callback(); };
/** A property of the model: the host's set reaches `onSet`; the server's own set (`serve`) reaches the host. */
function property(name, value, onSet) {
  let v = value, serving = false;
  Object.defineProperty(model, name, {
    enumerable: true,
    get: () => v,
    set: (x) => { if (x === v) return; v = x; emit(name); if (!serving) onSet?.(x); },
  });
  return (x) => { serving = true; try { model[name] = x; } finally { serving = false; } };
}
let settleQueued = false;
const settleSoon = () => {
  if (settleQueued) return;
  settleQueued = true;
  queueMicrotask(() => { settleQueued = false; settle(); });
};
const serve = {};
for (const [name, value] of Object.entries({ config: D.themes[THEME].config, story: D.story, buttons: D.buttons, hidden: [],
  disclosures: {}, opened: [], header: D.header, tabs: D.tabs, payload: null })) serve[name] = property(name, value);
serve.mode = property("mode", cur.mode, settleSoon);
serve.slots = property("slots", cur.slots, settleSoon);
serve.seed = property("seed", cur.seed, settleSoon);
serve.step = property("step", 0, (t) => { cur.step = t; followAddress(); });
serve.tab = property("tab", "simulator", (key) => { showTab(key); followAddress(); });
serve.message = property("message", "");

// ---- answering the host -----------------------------------------------------------------------------------------
let asked = 0, answered = 0;  // the latest question's number (an answer to an older one is dropped); the last shown

/** Send the view of `place` at these settings with its neighbours, as ChapterWidget._send does. */
async function show(place, settings, step, kept = false) {
  const n = ++asked;
  Object.assign(cur, settings, { place });  // at once: the next move starts from here, not from the last drawn
  const view = await viewAt(place, settings.slots, settings.seed);
  if (n !== asked) return;
  cur.step = Math.max(0, Math.min(step ?? cur.step, view.window - 1));
  serve.mode(settings.mode); serve.slots(settings.slots); serve.seed(settings.seed);
  serve.step(cur.step);
  serve.payload({ settings, step: cur.step, view, ahead: ahead(place, settings), kept });
  answered = n;
  serve.hidden(hiddenButtons(place));
  document.body.dataset.bvPlace = place;
  followAddress();
  for (const seed of [settings.seed - 1, settings.seed + 1]) {  // the seed's neighbours, ready for the next move
    if (D.places[place].seeds.includes(seed)) views(packKey(place, seed));
  }
}

/** Return the neighbouring settings' views already inflated (slots and seed one either side). */
function ahead(place, s) {
  const out = {}, own = ready.get(packKey(place, s.seed));
  for (const slots of [s.slots - 1, s.slots + 1]) if (own?.[slots - 1]) out[`${slots}:${s.seed}`] = own[slots - 1];
  const seeded = D.places[{ chapter: "generated", "chapter@ms": "generated@ms" }[place] ?? place];
  for (const seed of [s.seed - 1, s.seed + 1]) {
    const pack = seeded.seeds.includes(seed) ? ready.get(packKey(seeded.name, seed)) : null;
    if (pack) out[`${s.slots}:${seed}`] = pack[s.slots - 1];
  }
  return out;
}

/** The traffic buttons hidden, as App._show_traffic_buttons: no way to where the learner already is. */
function hiddenButtons(place) {
  const base = baseOf(place), onTrace = !D.places[base].seeds.length;  // the chapter's, the worked example, memory
  const clock = place.endsWith("@ms") ? ["clock:0"] : D.places[`${place}@ms`] ? ["clock:1"] : ["clock:0", "clock:1"];
  // A clock this page does not carry at the seed shown stays offered: pressed, it says so (settle's words).
  return [...(base === "chapter" ? ["traffic:1"] : []), ...(onTrace ? [] : ["traffic:2"]), ...clock];
}
const baseOf = (place) => place.replace(/@ms$/, "");
const clockSeeds = D.places["generated@ms"]?.seeds ?? [];
const CLOCK_ONLY = "This page carries the clock on the chapter's traffic, the worked example" + (clockSeeds.length
  ? ` and generated traffic at seeds ${clockSeeds[0]}-${clockSeeds.at(-1)}` : "") +
  " (the served app runs any traffic on a clock)";
/** Return where the clock button leads from `place` at `seed` on this page, or null where it is not carried. */
function clockOf(place, seed) {
  const to = D.places[`${baseOf(place)}@ms`];
  return to && (!to.seeds.length || to.seeds.includes(seed)) ? to.name : null;
}

const say = (text) => serve.message(text);

/** The learner moved the mode, slots or seed (host.js set the model's): show that view, or say why not and stay. */
function settle() {
  const want = { mode: model.mode, slots: model.slots, seed: model.seed };
  let place = cur.place;
  if (want.seed !== cur.seed) {
    if (baseOf(place) === "chapter") {
      place = place.endsWith("@ms") ? "generated@ms" : "generated";
      say(D.words.generated.replace("{seed}", want.seed));
    }
    const seeds = D.places[place].seeds;
    if (!seeds.includes(want.seed)) {
      say(place.endsWith("@ms") ? `${CLOCK_ONLY}; kept seed ${cur.seed}.` : seeds.length ? "This page carries " +
        `this traffic at seeds ${seeds[0]}-${seeds.at(-1)} (the served app runs any seed); kept seed ${cur.seed}.`
        : "This page carries the memory lessons on the chapter's traffic only (the served app runs any seed on a " +
        `pool); kept seed ${cur.seed}.`);
      want.seed = cur.seed;
      place = cur.place;
      show(place, want, null, true);
      return;
    }
  }
  show(place, want, null);
}

/** A story button: what App.press does for it, here. */
function press(message) {
  const { group, index } = message ?? {};
  const target = D.actions[group]?.[index];
  if (target === undefined) { console.info("ignored a story button message", message); return; }
  say("");
  if (group === "one_slot") {  // with the chapter's pair on screen, as App._one_slot
    const mode = ["static", "continuous"].includes(settings().mode) ? settings().mode : "continuous";
    show(cur.place, { ...settings(), slots: 1, mode }, cur.step);
    return;
  }
  if (group === "clock") {
    const to = target === "ms" ? clockOf(cur.place, cur.seed) : baseOf(cur.place);
    if (to) show(to, settings(), 1e9);  // a clock's window is its frames: open on the last
    else say(`${CLOCK_ONLY}; kept the step axis.`);
    return;
  }
  // On a clock a traffic button keeps the clock where this page carries it (as served); a lesson returns to steps.
  let name = target;
  if (cur.place.endsWith("@ms") && group === "traffic") {
    if (clockOf(target, cur.seed)) name = `${target}@ms`;
    else say(`${CLOCK_ONLY}; showing the step axis.`);
  }
  const place = D.places[name], s = settings();
  if (place.slots !== null) s.slots = place.slots;
  if (place.seeds.length && !place.seeds.includes(s.seed)) {
    say(`This page carries this traffic at seeds ${place.seeds[0]}-${place.seeds.at(-1)}; showing seed ` +
      `${D.defaults.seed}.`);
    s.seed = D.defaults.seed;
  }
  show(name, s, place.step ?? stepFor(name));
}
const settings = () => ({ mode: cur.mode, slots: cur.slots, seed: cur.seed });
/** Keep the step where the window stays; a traffic with another window opens on its last step, as served. */
const stepFor = (place) => (ready.get(packKey(place, cur.seed))?.[0]?.window ?? D.defaults.window) ===
  model.payload?.view?.window ? cur.step : 1e9;

// ---- the address: it follows the settings, as the served page's does (App.sync_url), so a link shared opens here --
/** Return the query that opens what is shown now, in the served page's keys (the defaults left out). */
function addressOf() {
  const q = new URLSearchParams(), d = D.defaults, place = baseOf(cur.place), view = model.payload?.view;
  if (THEME === "dark") q.set("theme", "dark");
  if (model.tab !== "simulator") q.set("tab", model.tab);
  if (place === "worked") q.set("preset", "worked");
  const lesson = D.lessons[place], memory = D.memory[place];
  if (lesson) { q.set("lengths", lesson.lengths); q.set("arrival_window", String(lesson.arrival_window)); }
  if (memory) { q.set("kv_blocks", String(memory.kv_blocks)); if (memory.allocation !== "paged") q.set("allocation", memory.allocation); }
  if (place === "generated" || lesson) q.set("seed", String(cur.seed));
  if (cur.place.endsWith("@ms")) q.set("clock", "ms");
  if (cur.mode !== d.mode) q.set("mode", cur.mode);
  if (cur.slots !== (D.places[place].slots ?? d.slots)) q.set("slots", String(cur.slots));
  if (view && cur.step !== view.window - 1) q.set("step", String(cur.step));
  tabs.memory?.query(q);
  return q.toString();
}
let addressTimer = null;
function followAddress() {
  clearTimeout(addressTimer);
  addressTimer = setTimeout(() => {
    const query = addressOf(), want = query ? `?${query}` : "";
    if (window.location.search !== want) {
      try { history.replaceState(null, "", window.location.pathname + want); } catch { /* a sandboxed frame */ }
    }
  }, 100);
}

// ---- tabs: the simulator is host.js's; the others are this page's sections, shown in the host's other panel -----
const sections = $("bv-sections");
function showTab(key) {
  for (const section of sections.children) section.hidden = section.dataset.tab !== key;
  document.body.dataset.bvTab = key;  // a section's figures redraw at its width from their own ResizeObservers
}

// ---- in-app links: the page's own address, the story's links and the quiz's, opened in place --------------------
const LINK_KEYS = new Set(D.link_keys);  // app/export/page.py LINK_KEYS: one list for the page's links and its address
const showValue = (v) => `'${v.length <= 40 ? v : v.slice(0, 37) + "..."}'`;
// Plain ASCII digits only (no `1_0`, no other scripts' digits), at most 18 of them: a number, never Infinity.
const wholeNumber = (v) => (/^\s*[0-9]{1,18}\s*$/.test(v) ? Number(v) : null);
const MODES = D.themes[THEME].config.modes.map(([mode]) => mode);

/** Open a query string of the app (`?preset=worked&step=5`) from the default settings, as the served page does. */
async function openLink(query) {
  const q = new URLSearchParams(query), messages = [], d = D.defaults;
  let tab = "simulator", place = "chapter", seed = d.seed, mode = d.mode, slots = d.slots, step = null;
  for (const key of new Set(q.keys())) {
    if (!LINK_KEYS.has(key)) messages.push(`URL: ${key} is set on the served app only; this page ignores it.`);
  }
  const value = (key) => q.getAll(key).at(-1).trim();
  if (q.has("tab")) {
    if (Object.hasOwn(D.tabs, value("tab"))) tab = value("tab");  // own keys: `constructor` is no tab
    else messages.push(`URL: tab=${showValue(value("tab"))} is not on this page (use ${Object.keys(D.tabs)
      .join(", ")}); showing simulator.`);
  }
  if (q.has("theme") && !["light", "dark"].includes(value("theme").toLowerCase())) {
    messages.push(`URL: theme=${showValue(value("theme"))} is not allowed (use light or dark); using light.`);
  }
  if (q.has("seed")) {
    const n = wholeNumber(value("seed")), seeds = D.places.generated.seeds;
    if (n !== null && seeds.includes(n)) { seed = n; place = "generated"; }
    else messages.push(`URL: seed=${showValue(value("seed"))} is not allowed (use ${seeds[0]}-${seeds.at(-1)}); ` +
      `kept ${seed}.`);
  }
  const junk = [];  // a traffic setting that is no value at all is named, not read as "not asked"
  if (q.has("arrival_window") && wholeNumber(value("arrival_window")) === null) junk.push("arrival_window");
  if (q.has("lengths") && !D.length_kinds.includes(value("lengths"))) junk.push("lengths");
  for (const key of junk) {
    messages.push(`URL: ${key}=${showValue(value(key))} is not allowed (` +
      (key === "lengths" ? `use ${D.length_kinds.join(", ")}` : "use a whole number") + "); kept this page's traffic.");
  }
  if (!junk.length && (q.has("lengths") || q.has("arrival_window"))) {
    const want = { lengths: q.has("lengths") ? value("lengths") : D.generator.lengths,
                   arrival_window: q.has("arrival_window") ? wholeNumber(value("arrival_window"))
                     : D.generator.arrival_window };
    const lesson = Object.entries(D.lessons).find(([, l]) =>
      l.lengths === want.lengths && l.arrival_window === want.arrival_window);
    if (want.lengths === D.generator.lengths && want.arrival_window === D.generator.arrival_window) {
      place = "generated";
    } else if (lesson && D.places[lesson[0]].seeds.includes(seed)) place = lesson[0];
    else messages.push("URL: these lengths and arrival window are set on the served app only (this page holds " +
      "its own traffic and the story's lessons); kept this page's traffic.");
  }
  if (q.has("kv_blocks") || q.has("allocation")) {  // the memory lesson's pools, on the chapter's traffic
    const want = { kv_blocks: q.has("kv_blocks") ? wholeNumber(value("kv_blocks")) : 0,
                   allocation: q.has("allocation") ? value("allocation") : "paged" };
    const memory = Object.entries(D.memory).find(([, m]) =>
      m.kv_blocks === want.kv_blocks && m.allocation === want.allocation);
    if (memory && place === "chapter") { place = memory[0]; slots = D.places[place].slots; }
    else if (!(want.kv_blocks === 0 && want.allocation === "paged")) {
      messages.push("URL: this KV pool is set on the served app only (this page holds the memory lesson's pools: " +
        `${Object.values(D.memory).filter((m) => m.kv_blocks).map((m) => `${m.kv_blocks} ${m.allocation}`)
          .join(", ")}, on the chapter's traffic); kept an unlimited pool.`);
    }
  }
  if (q.has("preset")) {
    if (value("preset") === "worked") { place = "worked"; slots = D.places.worked.slots; }
    else messages.push(`URL: preset=${showValue(value("preset"))} is not allowed (use worked); kept the traffic.`);
  }
  if (q.has("clock")) {
    if (value("clock") === "ms") {
      if (clockOf(place, seed)) place = `${place}@ms`;
      else messages.push(`URL: ${CLOCK_ONLY}; showing the step axis.`);
    } else if (value("clock") !== "steps") {
      messages.push(`URL: clock=${showValue(value("clock"))} is not allowed (use steps or ms); kept steps.`);
    }
  }
  if (q.has("mode")) {
    if (MODES.includes(value("mode"))) mode = value("mode");
    else messages.push(`URL: mode=${showValue(value("mode"))} is not allowed (use ${MODES.join(" or ")}); ` +
      `kept ${mode}.`);
  }
  if (q.has("slots")) {
    const n = wholeNumber(value("slots")), shown = showValue(value("slots")), end = D.slots_end;
    if (n === null) messages.push(`URL: slots=${shown} is not a whole number (allowed 1-${end}); kept ${slots}.`);
    else {
      slots = Math.max(1, Math.min(n, end));
      if (slots !== n) messages.push(`URL: slots=${shown} is outside 1-${end} on this page; using ${slots}.`);
    }
  }
  const last = (await viewAt(place, slots, seed)).window - 1;
  if (q.has("step")) {
    const n = wholeNumber(value("step"));
    if (n === null) messages.push(`URL: step=${showValue(value("step"))} is not a whole number; kept ${last}.`);
    else {
      step = Math.min(n, last);
      if (step !== n) messages.push(`URL: step=${showValue(value("step"))} is past the last step; using ${last}.`);
    }
  }
  tabs.memory?.apply(q, messages);
  say(messages.join(" "));
  await show(place, { mode, slots, seed }, step ?? last);
  serve.tab(tab);
  showTab(tab);
}

function follow(query) {
  openLink(query).then(() => document.querySelector(".bv-tabs")?.scrollIntoView({ block: "start" }));
}

document.addEventListener("click", (e) => {
  const a = e.target.closest?.('a[href^="?"]');
  if (!a || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;  // a new tab loads the URL
  e.preventDefault();
  follow(a.getAttribute("href"));
});

// Code and output frames that scroll sideways take the keyboard focus, so they can be scrolled without a mouse.
function focusable() {
  for (const el of document.querySelectorAll(".bv-source, .bv-pre, .bv-h2h-full")) {
    if (el.scrollWidth > el.clientWidth) el.tabIndex = 0;
    else el.removeAttribute("tabindex");
  }
}

// ---- start: the first view, then the served page's host draws the page --------------------------------------
async function start() {
  const first = await viewAt("chapter", cur.slots, cur.seed);
  cur.step = first.window - 1;
  serve.step(cur.step);
  serve.payload({ settings: settings(), step: cur.step, view: first, ahead: {} });
  children.tab_body = sections;
  render({ model, el: $("bv-page") });
  mountQuiz($("bv-quiz"), D.quiz, follow);
  await openLink(window.location.search);
  focusable();
  new ResizeObserver(focusable).observe(document.body);
  // `fresh`: a place's view inflated anew, as embedded (the drawn one carries the renderer's own caches).
  const fresh = async (place, slots, seed) => (await inflate(D.packs[packKey(place, seed)]))[slots - 1];
  // `idle`: every question the host asked is answered and drawn (a test reads the pixels then).
  const idle = () => !settleQueued && answered === asked;
  window.__bvExport = { data: D, state: cur, model, openLink, viewAt, fresh, press, idle };
  document.body.dataset.ready = "1";
}
start();
