// batchviz static page: redraws the timeline, stats and head-to-head from runs the core precomputed.
// The scheduler never runs here: every (mode, slots, seed) run was computed by core.simulate and
// embedded as JSON; this script only draws it, mirroring app/plots.py and app/progress.py.
const D = (window.__bvData ??= JSON.parse(data_json));
const W = D.window;
const MODES = ["continuous", "static"];

// Python's float formatting rounds exact ties to even; JavaScript's toFixed rounds them up.
function fixed(x, digits) {
  const v = x * 10 ** digits;
  const f = Math.floor(v);
  if (v - f === 0.5) return ((f % 2 === 0 ? f : f + 1) / 10 ** digits).toFixed(digits);
  return x.toFixed(digits);
}
function pct(x) {
  const v = x * 100;
  const f = Math.floor(v);
  return (v - f === 0.5 ? (f % 2 === 0 ? f : f + 1) : Math.round(v)) + "%";
}

// The chosen traffic: the generator's at a seed, or the chapter's worked example (its own runs, static timeout 1).
const WORKED = traffic_group.active === 1;
if (window.__bvPreset === undefined) {  // first draw: ?preset=worked opens the worked example, as on the server
  window.__bvPreset = new URLSearchParams(window.location.search).get("preset") === "worked";
  if (window.__bvPreset && !WORKED) { traffic_group.active = 1; return; }  // the change runs this script again
}
seed_slider.disabled = WORKED;

function runOf(mode, slots, seed) {
  const flat = WORKED ? D.worked.runs[mode][slots - 1] : D.runs[mode][slots - 1][seed];
  const n = flat.length / 4;
  const traffic = WORKED ? D.worked.traffic : D.traffic[seed];
  return {
    slots, n, ids: traffic.ids, arrival: traffic.arrival,
    start: flat.slice(0, n), finish: flat.slice(n, 2 * n), slot: flat.slice(2 * n, 3 * n),
    release: flat.slice(3 * n, 4 * n),
  };
}

function timelineData(r) {
  const gen = {left: [], right: [], bottom: [], top: [], id: [], arrival: [], start: [], finish: [],
               latency: [], wait: [], label_x: [], label_y: [], label: []};
  const pad = {left: [], right: [], bottom: [], top: [], id: []};
  for (let i = 0; i < r.n; i++) {
    if (r.start[i] < W) {
      const right = Math.min(r.finish[i], W);
      gen.left.push(r.start[i]); gen.right.push(right);
      gen.bottom.push(r.slot[i]); gen.top.push(r.slot[i] + 1);
      gen.id.push(r.ids[i]); gen.arrival.push(r.arrival[i]);
      gen.start.push(r.start[i]); gen.finish.push(r.finish[i]);
      gen.latency.push(r.finish[i] - r.arrival[i]); gen.wait.push(r.start[i] - r.arrival[i]);
      gen.label_x.push(r.start[i] + 0.12); gen.label_y.push(r.slot[i] + 0.06);
      gen.label.push(right - r.start[i] >= D.min_label_cells ? r.ids[i] : "");
    }
    if (r.release[i] > r.finish[i] && r.finish[i] < W) {
      pad.left.push(r.finish[i]); pad.right.push(Math.min(r.release[i], W));
      pad.bottom.push(r.slot[i]); pad.top.push(r.slot[i] + 1); pad.id.push(r.ids[i]);
    }
  }
  const idle = {left: [], right: [], bottom: [], top: []};
  for (let s = 0; s < r.slots; s++) { idle.left.push(0); idle.right.push(W); idle.bottom.push(s); idle.top.push(s + 1); }
  return {gen, pad, idle};
}

function clipped(lo, hi, t) {
  let cells = 0;
  for (let i = 0; i < lo.length; i++) cells += Math.max(Math.min(hi[i], t) - Math.min(lo[i], t), 0);
  return cells;
}

// What the run did in steps [0, t): the numbers of core.metrics.compute_metrics.
function metricsAt(r, t) {
  const useful = clipped(r.start, r.finish, t), padding = clipped(r.finish, r.release, t);
  let done = 0, latency = 0, all = 0;
  for (let i = 0; i < r.n; i++) {
    all += r.finish[i] - r.arrival[i];  // every request to its finish (the runs drain): the latency that compares
    if (r.finish[i] <= t) { done++; latency += r.finish[i] - r.arrival[i]; }
  }
  return {done, useful, padding, idle: t * r.slots - useful - padding,
          util: t ? useful / (t * r.slots) : 0, avg: done ? latency / done : null, avgAll: r.n ? all / r.n : null};
}

function statsHtml(m, total) {
  const items = [["completed", "Completed", `${m.done}/${total}`], ["useful_tokens", "Useful tokens", `${m.useful}`],
                 ["utilisation", "GPU utilisation", pct(m.util)],
                 ["avg_latency", "Avg latency, completed only (steps)", m.avg === null ? "–" : fixed(m.avg, 1)]];
  return '<div class="bv-stats">' + items.map(([k, label, v]) =>
    `<div class="bv-stat"><div class="bv-stat-label">${label}</div>` +
    `<div class="bv-stat-value" data-stat="${k}">${v}</div></div>`).join("") + "</div>";
}

// The decisions taken before step t, worded as core.run.Run.describe_step words them.
function describeStep(r, t) {
  const parts = [];
  const order = {finish: 0, release: 1, admit: 2};
  const items = [];
  for (let i = 0; i < r.n; i++) {
    if (r.finish[i] === t) items.push(["finish", i]);
    if (r.release[i] > r.finish[i] && r.release[i] === t) items.push(["release", i]);
    if (r.start[i] === t) items.push(["admit", i]);
  }
  items.sort((a, b) => order[a[0]] - order[b[0]] || r.slot[a[1]] - r.slot[b[1]]);
  for (const [kind, i] of items) {
    const name = r.ids[i], slot = r.slot[i];
    if (kind === "admit") parts.push(`${name} admitted to slot ${slot}`);
    else if (kind === "release") parts.push(`slot ${slot} released (${name}'s padding ends)`);
    else if (r.release[i] > t) parts.push(`${name} finished, slot ${slot} now padding`);
    else parts.push(`${name} finished, slot ${slot} freed`);
  }
  const text = `step ${t}: ` + (parts.length ? parts.join("; ") : "no change");
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;").replaceAll("'", "&#x27;");
}

function h2h(slots, seed) {
  const s = metricsAt(runOf("static", slots, seed), W), c = metricsAt(runOf("continuous", slots, seed), W);
  // The cells were formatted in Python by the served page's own h2h_rows; this only places them.
  const rows = WORKED ? D.worked.h2h_rows : D.h2h_rows;
  const cells = WORKED ? D.worked.h2h[slots - 1] : D.h2h[slots - 1][seed];
  const td = (k, policy, v) => k ? `<td data-h2h="${policy}-${k}">${v}</td>` : `<td>${v}</td>`;
  table.text = '<table class="bv-h2h"><caption>Same traffic and same slots, over the window shown</caption>' +
    "<thead><tr><th></th><th>static</th><th>continuous</th></tr></thead><tbody>" +
    rows.map(([k, label], i) => `<tr><th scope="row">${label}</th>${td(k, "static", cells[i][0])}` +
      `${td(k, "continuous", cells[i][1])}</tr>`).join("") + "</tbody></table>";
  const values = {static: [s.done, 100 * s.util, s.avgAll ?? 0], continuous: [c.done, 100 * c.util, c.avgAll ?? 0]};
  const bars = {y: [], w: [], color: [], text: []};
  for (let g = 0; g < 3; g++) {
    const top = Math.max(values.static[g], values.continuous[g]) || 1;
    [["static", D.colors.static], ["continuous", D.colors.continuous]].forEach(([policy, color], k) => {
      const v = values[policy][g];
      bars.y.push(g + 0.3 + 0.38 * k); bars.w.push(v / top); bars.color.push(color);
      bars.text.push(`${policy}: ${fixed(v, g === 2 ? 1 : 0)}`);
    });
  }
  bar_source.data = bars;
}

const mode = MODES[mode_group.active], slots = slots_slider.value, seed = seed_slider.value;
const step = Math.max(0, Math.min(step_slider.value, W - 1));  // the pass at the cursor: steps 0..step have run
const r = runOf(mode, slots, seed);
const key = `${WORKED}/${mode}/${slots}/${seed}`;
if (window.__bvKey !== key) {
  window.__bvKey = key;
  const data = timelineData(r);
  gen_source.data = data.gen; pad_source.data = data.pad; idle_source.data = data.idle;
  fig.y_range.start = slots; fig.y_range.end = 0;
  yaxis.ticker.ticks = Array.from({length: slots}, (_, i) => i + 0.5);
  yaxis.major_label_overrides = new Map(Array.from({length: slots}, (_, i) => [i + 0.5, `slot${i}`]));
  fig.frame_height = slots <= 8 ? Math.max(D.row_px * slots, 60) : 22 * slots;
  // The request labels' size, as app/plots.py label_size: above the row's centre, where the cells are read.
  for (const r of fig.renderers)
    if (r.glyph != null && r.glyph.properties.text_font_size !== undefined)
      r.glyph.text_font_size = slots <= 8 ? "12px" : "9px";
  caption.text = D.captions[mode];
  fig.title.text = `${mode} batching`;
  h2h(slots, seed);
}
curtain.left = step + 1; cursor.location = step + 1;
readout.text = `<span class="bv-step" data-step="${step}">step ${step}</span>` +
  `<span class="bv-step-note"> of 0–${W - 1}: the figures below count steps 0–${step}</span>`;
const m = metricsAt(r, step + 1);
stats.text = statsHtml(m, r.n);
const drain = Math.max(...r.finish), after = Math.max(step + 1 - drain, 0) * r.slots;  // as app/progress.py
waste.text = `<span class="bv-waste">Waste so far: <b data-waste="padding">${m.padding}</b> padding + ` +
             `<b data-waste="idle">${m.idle}</b> idle slot-steps` +
             (after ? ` (${after} of them after the last request finished at step ${drain})` : "") + "</span>";
log.text = describeStep(r, step);
