// batchviz's one browser-side renderer: the chapter's widget drawn from a run's flat arrays, at any step, in a frame.
// The served page (app/simulator/widget.py) and the exported page (app/export/page.py) both mount it; the server only computes
// runs. Every text it writes equals what app/progress.py and app/simulator/story.py build (tests/browser/test_renderer.py).
import { batchHtml } from "./batch.js";
import { escape, plural } from "./words.js";

// ---- formatting as Python's: exact ties round to even there, up in JavaScript's toFixed --------------------------
export function fixed(x, digits) {
  // toFixed rounds the double's exact value, as Python does, except that an exact tie goes up: find those from the
  // exact expansion (9.95 is 9.9499999… and no tie; 0.25 is one) and round them to even.
  const exact = x.toFixed(Math.min(100, digits + 60)), cut = exact.length - (60 + (digits ? 0 : 1));
  if (!/^50*$/.test(exact.slice(cut).replace(".", ""))) return x.toFixed(digits);
  const f = Math.floor(x * 10 ** digits);
  return ((f % 2 === 0 ? f : f + 1) / 10 ** digits).toFixed(digits);
}
export function pct(x) {
  return fixed(x * 100, 0) + "%";  // Python's "{:.0%}" multiplies the double by 100, then rounds as "{:.0f}"
}
const thousands = (x, digits) => {
  const [whole, frac] = fixed(x, digits).split(".");
  const sign = whole.startsWith("-") ? "-" : "";
  const w = sign ? whole.slice(1) : whole;
  return sign + w.replace(/\B(?=(\d{3})+(?!\d))/g, ",") + (frac === undefined ? "" : "." + frac);
};

// ---- per-step texts: the readout, live stats, waste meter and decision log (app/progress.py) ----------------------
function clipped(lo, hi, t) {
  let cells = 0;
  for (let i = 0; i < lo.length; i++) cells += Math.max(Math.min(hi[i], t) - Math.min(lo[i], t), 0);
  return cells;
}

export function statsHtml(completed, total, useful, util, avg) {
  const items = [
    ["completed", "Completed", `${completed}/${total}`],
    ["useful_tokens", "Useful tokens", `${useful}`],
    ["utilisation", "GPU utilisation", pct(util)],
    ["avg_latency", "Avg latency so far, every request (steps)", avg === null ? "–" : fixed(avg, 1)],
  ];
  const cells = items.map(([key, label, value]) =>
    `<div class="bv-stat"><div class="bv-stat-label">${label}</div>` +
    `<div class="bv-stat-value" data-stat="${key}">${value}</div></div>`).join("");
  return `<div class="bv-stats">${cells}</div>`;
}

// A run's cells and stays. The memory engine sends them when a request was preempted (it then has several stays,
// and recompute cells); otherwise each request is one stay: generating from start to finish, padding to release.
// The cell states' numbers come with each run (core/states.py, defined once): generating, padding, recompute, prefill.
const codes = (r) => [r.states.generating, r.states.padding, r.states.recompute, r.states.prefill];
const chunks = (flat, width) => {
  const out = [];
  for (let k = 0; k < flat.length; k += width) out.push(flat.slice(k, k + width));
  return out;
};
export function cellsOf(r) {
  if (r._cells) return r._cells;
  if (r.cells) return (r._cells = chunks(r.cells, 5));
  const [GEN, PAD] = codes(r), out = [];
  for (let i = 0; i < r.start.length; i++) {
    out.push([i, r.slot[i], r.start[i], r.finish[i], GEN]);
    if (r.release[i] > r.finish[i]) out.push([i, r.slot[i], r.finish[i], r.release[i], PAD]);
  }
  return (r._cells = out);
}
function staysOf(r) {
  if (r._stays) return r._stays;
  if (r.stays) return (r._stays = chunks(r.stays, 5));
  return (r._stays = r.start.map((s, i) => [i, r.slot[i], s, r.finish[i], r.release[i]]));
}
/** Return the slot-steps before t of the cells in `states` (GEN, PAD, REC, PRE). */
function cellsBefore(r, states, t) {
  let n = 0;
  for (const [, , lo, hi, state] of cellsOf(r)) if (states.includes(state)) n += Math.max(Math.min(hi, t) - Math.min(lo, t), 0);
  return n;
}

// core/sched/run.py's Decision kinds, numbered as app/simulator/widget_data.py's LOG_KINDS.
const KINDS = ["finish", "release", "preempt", "admit", "wait"];

/** Return a run's decisions as flat [step, kind, request, slot, tokens, other, free, longest] rows (Run.log). */
export function deriveLog(r) {
  const items = [];
  for (let i = 0; i < r.start.length; i++) {
    items.push([r.finish[i], 0, i, r.slot[i], 0, -1, 0, 0]);
    if (r.release[i] > r.finish[i]) items.push([r.release[i], 1, i, r.slot[i], 0, -1, 0, 0]);
    items.push([r.start[i], 3, i, r.slot[i], 0, -1, 0, 0]);
  }
  // Python's sort is stable on (step, kind, slot): ties keep insertion order, as they do here (Array.sort is stable).
  items.sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[3] - b[3]);
  return items.flat();
}

export function describeStep(r, ids, t) {
  const parts = [];
  const log = (r.log ??= deriveLog(r));
  for (let k = 0; k < log.length; k += 8) {
    if (log[k] !== t) continue;
    const kind = KINDS[log[k + 1]], i = log[k + 2], slot = log[k + 3], name = ids[i];
    const [tokens, other, free, longest] = log.slice(k + 4, k + 8);
    if (kind === "admit") {
      parts.push(r.start[i] < t ? `${name} readmitted to slot ${slot}, recomputing its KV` :
        `${name} admitted to slot ${slot}`);
    } else if (kind === "release") parts.push(`slot ${slot} released (${name}'s padding ends)`);
    else if (kind === "preempt") {
      parts.push(`no free block for ${other >= 0 ? ids[other] : "another request"}; ${name} preempted from slot ` +
        `${slot}, ${plural(tokens, "token")} to recompute`);
    } else if (kind === "wait" && other >= 0) {  // static: `other` rows of `tokens` blocks would be needed
      parts.push(`${name} waits for memory: with it the batch would be ${other} rows of ${plural(tokens, "block")}, ` +
        `${other * tokens} blocks, and the pool holds ${r.pool}`);
    } else if (kind === "wait") {
      const why = free >= tokens && tokens > longest ? `, the longest run ${longest}` : "";
      parts.push(`${name} waits for memory: needs ${plural(tokens, "block")}, ${free} free${why}`);
    } else if (r.release[i] > t) parts.push(`${name} finished, slot ${slot} now padding`);
    else parts.push(`${name} finished, slot ${slot} freed`);
  }
  return `step ${t}: ` + (parts.length ? parts.join("; ") : "no change");
}

/** Return step t's KV line (app/progress.py's kv_html): blocks held (static: reserved), the peak, preemptions. */
export function kvHtml(view, r, t) {
  const held = t < r.kv.length ? r.kv[t] : 0;
  let peak = 0, preemptions = 0;
  for (let s = 0; s <= Math.min(t, r.kv.length - 1); s++) peak = Math.max(peak, r.kv[s]);
  const log = (r.log ??= deriveLog(r));
  for (let k = 0; k < log.length; k += 8) if (log[k + 1] === 2 && log[k] <= t) preemptions++;
  const verb = r.reserves ? "reserved" : "held", pool = view.pool;  // reserved: room for the longest answer
  const tail = pool ? `; <b data-kv="preemptions">${preemptions}</b> ` +
    `${preemptions === 1 ? "preemption" : "preemptions"} so far` : " (unlimited pool)";
  return `<span class="bv-kv">KV cache at step ${t}: <b data-kv="held">${held}</b>${pool ? ` of ${pool}` : ""} ` +
    `blocks of ${view.block_size} tokens ${verb}, peak so far <b data-kv="peak">${peak}</b>${tail}</span>`;
}

/** Return step t's readout, stats, waste meter and log as one block: app/progress.py's playback_texts(run)[t]. */
export function playbackHtml(view, policy, t) {
  const r = view.runs[policy], W = view.window, ran = t + 1, n = r.start.length, [GEN, PAD, REC, PRE] = codes(r);
  const useful = cellsBefore(r, [GEN, REC], ran), padding = cellsBefore(r, [PAD], ran);
  const idle = ran * r.slots - useful - padding - cellsBefore(r, [PRE], ran);
  let done = 0, latency = 0, arrived = 0;  // every request arrived by now, a finished one to its finish
  for (let i = 0; i < n; i++) {
    if (r.finish[i] <= ran) done++;
    if (view.arrival[i] < ran) { arrived++; latency += Math.min(r.finish[i], ran) - view.arrival[i]; }
  }
  const readout = `<span class="bv-step" data-step="${t}">step ${t}</span>` +
    `<span class="bv-step-note"> of 0–${W - 1}: the figures below count steps 0–${t}</span>`;
  const stats = statsHtml(done, n, useful, useful / (ran * r.slots), arrived ? latency / arrived : null);
  const after = Math.max(ran - r.drain, 0) * r.slots;
  const note = after ? ` (${after} of them after the last request finished at step ${r.drain})` : "";
  const waste = `<span class="bv-waste">Waste so far: <b data-waste="padding">${padding}</b> padding + ` +
    `<b data-waste="idle">${idle}</b> idle slot-steps${note}</span>`;
  const log = escape(describeStep(r, view.ids, t));
  const kv = r.kv ? `<div class="bv-kv-row">${kvHtml(view, r, t)}</div>` : "";
  return `<div class="bv-readout">${readout}</div>${stats}<div class="bv-waste-row">${waste}</div>${kv}` +
    `<div class="bv-log">${log}</div>`;
}

// ---- the first screen's head-to-head: app/simulator/views.py's compact table, over the window -----------------------------
function windowMetrics(view, policy) {
  const r = view.runs[policy], W = view.window, n = r.start.length;
  let done = 0, all = 0;
  for (let i = 0; i < n; i++) {
    if (r.finish[i] <= W) done++;
    all += r.finish[i] - view.arrival[i];
  }
  const [GEN, , REC] = codes(r), useful = cellsBefore(r, [GEN, REC], W), cells = W * r.slots;
  return { completed: `${done}/${n}`, utilisation: pct(cells ? useful / cells : 0), drain: `${r.drain}`,
           avg_latency_all: n ? fixed(all / n, 1) : "–" };
}

/**
 * Return the words the caption adds when an ordered policy's run is exactly the run it is compared with: why (every
 * request has the same key) or that its order changed nobody's admission here. "" when the runs differ.
 */
/**
 * Return what the caption adds when a batch policy runs with a batch timeout: it waits, up to the timeout, for its
 * batch to fill (core/sched/policies.py Static.batch_forms_at), so "a batch forms when every slot is free" is not all.
 */
export function timeoutNote(view, mode) {
  if (!view.timeout || !view.runs[mode].traits.has_timeout) return "";
  return ` Here it also waits for the batch to fill, at most ${plural(view.timeout, "step")} after its oldest ` +
    "request arrived (the batch timeout), so a slot can stand empty while a request waits.";
}

export function sameRunNote(view, mode) {
  const r = view.runs[mode], v = view.runs[r.traits.versus];
  if (!r.traits.ordered || !v) return "";
  if (!["start", "finish", "slot"].every((k) => r[k].every((x, i) => x === v[k][i]))) return "";
  const keys = view[r.traits.order_field] ?? [];
  const why = keys.length && keys.every((k) => k === keys[0])
    ? `every request here has the same ${r.traits.order_words}, so the queue's order is arrival order`
    : "on this traffic its order never changes who is admitted, or when";
  return ` Here it runs exactly as ${v.traits.label} batching: ${why}.`;
}

/** Return the two policies the compact table shows for `mode` (app/simulator/widget_data.py's compact_pair). */
export function compactPair(view, mode) {
  const r = view.runs[mode], versus = r.traits.versus;
  return r.traits.forms_batches ? [mode, versus] : [versus, mode];
}

/** Return the compact head-to-head table (completed, utilisation, latency over every request) on steps. */
export function h2hCompactHtml(view, mode = "continuous") {
  if (view.h2h_compact) return view.h2h_compact[mode];  // on a clock the server sends its timed tables
  const [a, b] = compactPair(view, mode), ma = windowMetrics(view, a), mb = windowMetrics(view, b);
  const rows = [["completed", "Completed"], ["utilisation", "GPU utilisation"], ["drain", "All done at step"],
                ["avg_latency_all", "Avg latency, all, each to its finish (steps)"]];
  // A policy ordered by priority on classed traffic: each class's latency (app/simulator/widget_data.py's class_rows).
  const classes = [...new Set(view.priority ?? [])].sort((x, y) => x - y);
  if (classes.length > 1 && [a, b].some((p) => view.runs[p].traits.orders_by_class)) {
    for (const c of classes) {
      const mine = view.priority.map((q, i) => (q === c ? i : -1)).filter((i) => i >= 0);
      const mean = (r) => fixed(mine.reduce((s, i) => s + r.finish[i] - view.arrival[i], 0) / mine.length, 1);
      ma[`latency_class${c}`] = mean(view.runs[a]);
      mb[`latency_class${c}`] = mean(view.runs[b]);
      rows.push([`latency_class${c}`, `Avg latency, priority ${c} (${mine.length}), to finish (steps)`]);
    }
  }
  const body = rows.map(([key, label]) => `<tr><th scope="row">${label}</th>` +
    `<td data-h2h="${a}-${key}">${ma[key]}</td><td data-h2h="${b}-${key}">${mb[key]}</td>` +
    "</tr>").join("");
  return '<table class="bv-h2h"><caption>Head to head, same traffic (completed and utilisation over steps ' +
    `0–${view.window - 1})</caption>` +
    `<thead><tr><td></td><th scope="col">${view.runs[a].traits.label}</th>` +
    `<th scope="col">${view.runs[b].traits.label}</th></tr></thead>` +
    `<tbody>${body}</tbody></table>`;
}

// ---- the scheduling loop at the cursor, its executed lines lit (app/simulator/story.py's loop_texts) ------------------------
function names(ids, indices) {  // indices: requests
  const shown = indices.slice(0, 4).map((i) => ids[i]).join(", ") +
    (indices.length > 4 ? ` and ${indices.length - 4} more` : "");
  return escape(shown);
}

/** Return the loop at step t with the lines that step executed lit; each run brings its (key, code) lines. */
export function loopHtml(view, policy, t) {
  const stays = staysOf(view.runs[policy]);  // a preempted request leaves, and joins again when readmitted
  const col = (k) => stays.map((s) => s[k]);
  const last = stays.map((s, k) => k + 1 === stays.length || stays[k + 1][0] !== s[0]);  // else: preempted
  const r = view.runs[policy], memory = view.pool && r.loop_memory;
  const lines = memory ? r.loop_memory : r.loop;  // the policy's own loop, written from its traits (app/simulator/story.py)
  const waiting = [], log = memory ? (view.runs[policy].log ??= deriveLog(view.runs[policy])) : [];
  for (let k = 0; k < log.length; k += 8) if (log[k] === t && log[k + 1] === 4) waiting.push(log[k + 2]);
  return loopAt(view.ids, lines, policy, col(2), col(3), col(4), t, t,
    `The scheduling loop, step ${t}`, col(0), last, waiting);
}

// The loop at index t of per-stay start/finish/release (steps, or passes on a clock), `who` each stay's request:
// app/simulator/story.py's _loop_html.
function loopAt(ids, lines, policy, start, finish, release, t, index, title, who = null, last = null, waiting = []) {
  const retired = [], admitted = [], preempted = [];
  let running = 0, padding = 0;
  for (let i = 0; i < start.length; i++) {
    if (release[i] === t) (last && !last[i] ? preempted : retired).push(who ? who[i] : i);
    if (start[i] === t) admitted.push(who ? who[i] : i);
    if (start[i] <= t && t < release[i]) running++;
    if (finish[i] <= t && t < release[i]) padding++;
  }
  const verb = (list, v) => (list.length === 1 ? v + "s" : v);
  const notes = {
    retire: retired.length ? `← ${names(ids, retired)} ${verb(retired, "leave")}` : "",
    admit: [...(admitted.length ? [`← ${names(ids, admitted)} ${verb(admitted, "join")}`] : []),
            ...(waiting.length ? [`← ${names(ids, waiting)} ${verb(waiting, "wait")} for memory`] : [])].join("; "),
    preempt: preempted.length ? `← ${names(ids, preempted)} preempted` : "",
    build: running ? `← ${plural(running, "row")}` + (padding ? `, ${padding} of them padding` : "") : "",
    forward: running ? "" : "← nothing to run: the slots are idle",
  };
  const lit = { head: true, retire: retired.length > 0, preempt: preempted.length > 0, admit: admitted.length > 0 || waiting.length > 0,
                build: running > 0, forward: running > 0 };
  const html = lines.map(([key, code]) =>
    `<div class="bv-code-line${lit[key] ? " bv-lit" : ""}" data-line="${key}">` +
    `<span class="bv-code">${escape(code)}</span><span class="bv-note">${notes[key] ?? ""}</span></div>`).join("");
  return `<div class="bv-loop" data-loop-step="${index}"><div class="bv-loop-title">${title} ` +
    `(${policy})</div>${html}</div>`;
}

// ---- on a clock: playback moves a time cursor over both drains (app/progress.py's clock_progress_table) ----------
/** Return the time cursor of each playback frame: `frames` even steps ending at `end` (progress.clock_times). */
export function clockTimes(end, frames) {
  const out = [];
  for (let k = 0; k < frames; k++) out.push(end * (k + 1) / frames);
  return out;
}

// The number of values in the sorted array `a` that are < x ("left") or <= x ("right"): numpy's searchsorted.
function searchsorted(a, x, side) {
  let lo = 0, hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (side === "left" ? a[mid] < x : a[mid] <= x) lo = mid + 1; else hi = mid;
  }
  return lo;
}

function tokensByPass(r) {  // for p = 0..passes: the tokens out of passes 0..p-1 (one per running request per pass)
  const passes = r.pass_start_ms.length, diff = new Array(passes + 1).fill(0);
  for (let i = 0; i < r.start_pass.length; i++) { diff[r.start_pass[i]]++; diff[r.finish_pass[i]]--; }
  const out = [0];
  let running = 0, total = 0;
  for (let p = 0; p < passes; p++) { running += diff[p]; total += running; out.push(total); }
  return out;
}

// The pass under time t: the last one begun by then, if it is still running (else -1).
function passAt(r, t) {
  const p = searchsorted(r.pass_start_ms, t, "left") - 1;
  return p >= 0 && t <= r.pass_end_ms[p] ? p : -1;
}

function clockStatsHtml(completed, total, tokens, perSecond, avg) {
  const items = [
    ["completed", "Completed", `${completed}/${total}`],
    ["useful_tokens", "Tokens out", `${tokens}`],
    ["tokens_per_s", "Tokens/s so far (to its last token)", thousands(perSecond, 0)],
    ["avg_latency_ms", "Avg latency so far, every request (ms)", avg === null ? "–" : thousands(avg, 1)],
  ];
  const cells = items.map(([key, label, value]) =>
    `<div class="bv-stat"><div class="bv-stat-label">${label}</div>` +
    `<div class="bv-stat-value" data-stat="${key}">${value}</div></div>`).join("");
  return `<div class="bv-stats">${cells}</div>`;
}

/** Return frame k's readout, stats, pass meter and the pass under the cursor, on a clock (all in ms). */
export function clockPlaybackHtml(view, policy, k) {
  const r = view.runs[policy], times = timesOf(view, policy);
  const t = times[k], end = times[times.length - 1], n = r.finish_ms.length;
  const tokensOut = (r.tokens_out ??= tokensByPass(r));
  const donePasses = searchsorted(r.pass_end_ms, t, "right");
  let done = 0, latency = 0, busy = 0;
  let arrived = 0;  // every request arrived by t, a finished one to its finish (app/progress.py)
  for (let i = 0; i < n; i++) {
    if (r.finish_ms[i] <= t) done++;
    if (view.arrival_ms[i] < t) { arrived++; latency += Math.min(r.finish_ms[i], t) - view.arrival_ms[i]; }
  }
  for (let p = 0; p < r.pass_start_ms.length; p++) busy += Math.min(r.pass_end_ms[p], t) - Math.min(r.pass_start_ms[p], t);
  const tokens = tokensOut[donePasses];
  const readout = `<span class="bv-step" data-step="${k}" data-ms="${fixed(t, 3)}">t = ${thousands(t, 1)} ms</span>` +
    `<span class="bv-step-note"> of ${thousands(end, 1)} ms: the figures below count what came out by then</span>`;
  // Over its own time so far: a drained run's idle tail does not count (app/progress.py), so at the end the card
  // equals the head-to-head's tokens/s.
  const ran = Math.min(t, r.drain_ms) || t;
  const stats = clockStatsHtml(done, n, tokens, tokens / ran * 1e3, arrived && t > 0 ? latency / arrived : null);
  const waste = `<span class="bv-waste">Forward passes so far: <b data-waste="passes">${donePasses}</b>; the GPU ` +
    `sat idle <b data-waste="idle_ms">${thousands(Math.max(t - busy, 0), 1)}</b> ms</span>`;
  const p = passAt(r, t);
  let log;
  if (p >= 0) {
    const prefill = r.pass_prefill[p];
    const work = plural(r.pass_rows[p], "row") + (prefill ? `, ${thousands(prefill, 0)} prompt tokens prefilled` : "");
    log = escape(`pass ${p}, ${thousands(r.pass_start_ms[p], 1)}-${thousands(r.pass_end_ms[p], 1)} ms: ${work}`);
  } else {
    log = `${thousands(t, 1)} ms: no pass is running` + (t >= r.drain_ms ? ": all done" : "");
  }
  return `<div class="bv-readout">${readout}</div>${stats}<div class="bv-waste-row">${waste}</div>` +
    `<div class="bv-log">${log}</div>`;
}

/** Return the loop at frame k on a clock: the last pass begun by then, lit as that pass ran (story.clock_loop_texts). */
export function clockLoopHtml(view, policy, k) {
  const r = view.runs[policy], t = timesOf(view, policy)[k], p = passAt(r, t);
  const title = p < 0 ? `The scheduling loop at ${thousands(t, 1)} ms, between passes` :
    `The scheduling loop, pass ${p} (${thousands(r.pass_start_ms[p], 1)}-${thousands(r.pass_end_ms[p], 1)} ms)`;
  return loopAt(view.ids, r.loop, policy, r.start_pass, r.finish_pass, r.release_pass, p, k, title);
}

// ---- the slot timeline, on a canvas ------------------------------------------------------------------------------
const MARGIN = { left: 56, right: 16, top: 38, bottom: 40 };
export const rowPx = (slots) => (slots <= 8 ? 30 : 22);
export const frameHeight = (slots) => (slots <= 8 ? Math.max(30 * slots, 60) : 22 * slots);

/** Return "nice" tick positions over [0, end]: steps of 1, 2 or 5 times a power of ten, about `target` of them. */
export function niceTicks(end, target = 7) {
  if (!(end > 0)) return [0];
  const raw = end / target, power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const ticks = [];
  for (let x = 0; x <= end + 1e-9; x += step) ticks.push(Math.round(x / step) * step);
  return ticks;
}

/**
 * The rectangles a run draws over [0, end): generating, padding, recomputing and paused, each [left, right, slot,
 * request]. On a clock a run may bring its cells in milliseconds (`cells_ms`: the schedulers' lineup).
 */
export function intervals(view, policy) {
  const r = view.runs[policy], W = view.clock === "ms" ? Infinity : view.window;
  const start = r.start_ms ?? r.start, finish = r.finish_ms ?? r.finish, release = r.release_ms ?? r.release;
  const gen = [], pad = [], rec = [], paused = [];
  const cells = view.clock === "ms" ? (r.cells_ms ? (r._cells_ms ??= chunks(r.cells_ms, 5)) : null)
    : r.cells ? cellsOf(r) : null;
  if (cells) {  // preempted, chunked or paused: its cells, recompute and paused passes their own states
    const [GEN, PAD, REC, PRE] = codes(r);
    const into = { [GEN]: gen, [PAD]: pad, [REC]: rec, [PRE]: gen, [r.states.paused]: paused };
    for (const [i, slot, lo, hi, state] of cells) if (lo < W) into[state].push([lo, Math.min(hi, W), slot, i]);
    return { gen, pad, rec, paused };
  }
  for (let i = 0; i < start.length; i++) {
    if (start[i] < W) gen.push([start[i], Math.min(finish[i], W), r.slot[i], i]);
    if (release[i] > finish[i] && finish[i] < W) pad.push([finish[i], Math.min(release[i], W), r.slot[i], i]);
  }
  return { gen, pad, rec, paused };
}

const KV = { gap: 8, bars: 26, text: 16 };  // the KV strip under a timeline: gap above, bars, its words
/** Return the KV strip's scale in blocks: the pool, or on an unlimited pool the larger peak of the two runs shown. */
function kvScale(view, pair) {
  if (view.pool) return view.pool;
  let peak = 1;
  for (const p of pair) peak = Math.max(peak, view.runs[p].kv_peak ?? 0);  // over the whole run, not the window
  return peak;
}

/** Return the two runs shown for `mode`: it, and the one it is compared with (drawn beneath it). */
export function shownPair(view, mode) {
  return [mode, view.runs[mode].traits.versus];
}

/** Return the clock axis's end for `mode`: the later drain of the two runs shown (the server computes it). */
const clockEnd = (view, mode) => view.end_ms_by?.[mode] ?? view.end_ms;
const timesOf = (view, mode) => ((view._times ??= {})[mode] ??= clockTimes(clockEnd(view, mode), view.window));

export class Timeline {
  /** One policy's timeline in `host`: a canvas sized to the host's width, redrawn whole in well under a frame. */
  constructor(host, name, colours, onHover) {
    this.host = host;
    this.colours = colours;
    this.canvas = document.createElement("canvas");
    this.canvas.dataset.timeline = name;
    this.canvas.setAttribute("role", "img");
    this.canvas.style.display = "block";
    host.appendChild(this.canvas);
    this.onHover = onHover;
    this.hover = null;
    this.canvas.addEventListener("mousemove", (e) => this.onHover(this.hit(e)));
    this.canvas.addEventListener("mouseleave", () => this.onHover(null));
  }

  /** Return the request index under a mouse event, or null. */
  hit(e) {
    if (!this.geom) return null;
    const box = this.canvas.getBoundingClientRect(), x = e.clientX - box.left, y = e.clientY - box.top;
    for (const [lo, hi, slot, i] of this.geom.gen.concat(this.geom.rec)) {
      const [x0, x1] = [this.x(lo), this.x(hi)], [y0, y1] = [this.y(slot), this.y(slot + 1)];
      if (x >= x0 && x < x1 && y >= y0 && y < y1) return i;
    }
    return null;
  }

  x(v) { return MARGIN.left + (v / this.end) * this.frameW; }
  y(s) { return MARGIN.top + s * this.rowH; }
  // Rectangles are drawn on whole pixels: crisp edges, each within half a pixel of its time.
  px(v) { return Math.round(this.x(v)); }
  py(s) { return Math.round(this.y(s)); }

  /** Return the page coordinates of cell (slot, t)'s centre: how the pixel tests find each cell. */
  cellCentre(slot, t) {
    return this.pagePoint(t + 0.5, slot + 0.5);
  }

  /** Return the page coordinates of a point on the timeline's axes (x in steps or ms, y in slots from the top). */
  pagePoint(x, y) {
    const box = this.canvas.getBoundingClientRect();
    return [box.left + this.x(x), box.top + this.y(y)];
  }

  /**
   * Draw `policy`'s run of `view`, revealed up to `cursor` (x units: steps, or ms on a clock), `mark` above it; the
   * axis and the KV scale are those of `mode`'s pair (the mode shown, which is `policy` on the upper timeline).
   */
  draw(view, policy, cursor, hover, mark, mode = policy) {
    const r = view.runs[policy], c = this.colours, slots = r.slots;
    const onClock = view.clock === "ms";
    this.end = onClock ? clockEnd(view, mode) : view.window;
    this.pair = shownPair(view, mode);
    const width = Math.max(this.host.clientWidth || 320, 240), frameH = frameHeight(slots);
    const kv = !onClock && r.kv ? r.kv : null;  // blocks held per step (the memory engine's runs, on steps)
    const height = MARGIN.top + frameH + MARGIN.bottom + (kv ? KV.gap + KV.bars + KV.text : 0);
    const dpr = window.devicePixelRatio || 1;
    if (this.canvas.width !== Math.round(width * dpr) || this.canvas.height !== Math.round(height * dpr)) {
      this.canvas.width = Math.round(width * dpr);
      this.canvas.height = Math.round(height * dpr);
      this.canvas.style.width = `${width}px`;
      this.canvas.style.height = `${height}px`;
    }
    this.frameW = width - MARGIN.left - MARGIN.right;
    this.rowH = frameH / slots;
    this.geom = intervals(view, policy);
    // The policy's own label (a lineup's entry brings its settings in its own title).
    const title = r.title ?? `${r.traits.label} batching${onClock ? ", on a clock" : ""}`;
    this.canvas.setAttribute("aria-label", `${title}: ${slots} slots over ${onClock ? fixed(this.end, 1) + " ms" :
      this.end + " steps"}`);
    const g = this.canvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = c.background;
    g.fillRect(0, 0, width, height);
    const x0 = this.px(0), x1 = this.px(this.end);
    g.fillStyle = c.idle;
    g.fillRect(x0, this.y(0), x1 - x0, frameH);
    for (const [lo, hi, slot] of this.geom.pad) {
      const [a, b, top, h] = [this.px(lo), this.px(hi), this.py(slot), this.py(slot + 1) - this.py(slot)];
      g.fillStyle = c.padding;
      g.fillRect(a, top, b - a, h);
      g.save();
      g.beginPath();
      g.rect(a, top, b - a, h);
      g.clip();
      g.strokeStyle = c.hatch;
      g.lineWidth = 1;
      g.beginPath();
      for (let k = a - h; k < b; k += 10) { g.moveTo(k, top + h); g.lineTo(k + h, top); }
      g.stroke();
      g.restore();
    }
    const fontPx = slots <= 8 ? 12 : 9;
    g.font = `${fontPx}px system-ui, sans-serif`;
    g.textBaseline = "top";
    // On a clock a letter goes wherever it fits its bar (a short stay too); on steps, from the view's cell count.
    const fits = (lo, hi, id) => onClock ? this.px(hi) - this.px(lo) >= g.measureText(id).width + 4
      : hi - lo >= view.min_label_cells;
    const resumed = new Set(this.geom.rec.map(([, hi, slot, i]) => `${i}:${slot}:${hi}`));  // its letter is on R
    for (const [lo, hi, slot, i] of this.geom.gen) {
      const [, , top] = this.fillCell(g, lo, hi, slot, c.generating);
      if (fits(lo, hi, view.ids[i]) && !resumed.has(`${i}:${slot}:${lo}`)) {
        g.fillStyle = c.label;
        g.fillText(view.ids[i], this.x(lo + (onClock ? 0.003 * this.end : 0.12)), top + 0.06 * this.rowH);
      }
    }
    for (const [lo, hi, slot] of this.geom.paused) {  // held while a pass prefills others' prompts: a pale sliver
      const [a, b, top, h] = [this.px(lo), this.px(hi), this.py(slot), this.py(slot + 1) - this.py(slot)];
      g.fillStyle = c.paused;  // no white edge: on a clock a pass is a pixel or two, and the edge would hide it
      g.fillRect(a, top + 1, Math.max(b - a, 3), h - 2);
      g.fillStyle = c.generating;
      for (let x = a + 2; x < b - 1; x += 4) g.fillRect(x, top + h / 2 - 1, 2, 2);
    }
    for (const [lo, hi, slot, i] of this.geom.rec) {  // recomputing after a preemption: yellow, a bold dark letter
      if (onClock) {  // a pass is a pixel or two on a clock: at least 3 px of yellow, no white edge to hide it
        const [a, top, h] = [this.px(lo), this.py(slot), this.py(slot + 1) - this.py(slot)];
        g.fillStyle = c.recompute;
        g.fillRect(a, top + 1, Math.max(this.px(hi) - a, 3), h - 2);
        continue;
      }
      const [a, b, top] = this.fillCell(g, lo, hi, slot, c.recompute);
      g.font = `bold ${fontPx}px system-ui, sans-serif`;
      if (g.measureText(view.ids[i]).width + 2 <= b - a) {  // a letter only where it fits the cell
        g.fillStyle = "#000000";
        g.fillText(view.ids[i], this.x(lo + 0.12), top + 0.06 * this.rowH);
      }
      g.font = `${fontPx}px system-ui, sans-serif`;
    }
    // A slot empty while the next request waits for memory: a dashed edge and a ⊘ where the letters go (the
    // cell's centre keeps its idle colour, which the pixel tests read).
    const waits = onClock ? [] : r.waits ?? [];
    this.drawnWaits = 0;
    g.font = `${Math.min(fontPx, 10)}px system-ui, sans-serif`;
    for (let k = 0; k < waits.length; k += 2) {
      const t = waits[k], slot = waits[k + 1];
      if (t >= Math.min(this.end, cursor)) continue;
      const [a, b, top, h] = [this.px(t), this.px(t + 1), this.py(slot), this.py(slot + 1) - this.py(slot)];
      g.strokeStyle = c.text;
      g.lineWidth = 1;
      g.setLineDash([2, 2]);
      g.strokeRect(a + 1.5, top + 1.5, Math.max(b - a - 3, 0), h - 3);
      g.setLineDash([]);
      if (b - a >= 8) { g.fillStyle = c.text; g.fillText("⊘", a + 2, top + 2); }
      this.drawnWaits++;
    }
    g.font = `${fontPx}px system-ui, sans-serif`;
    this.drawnHover = hover ?? null;  // the request outlined in this drawing (read by the hover tests)
    if (hover !== null && hover !== undefined) {
      g.strokeStyle = c.highlight;
      g.lineWidth = 3;
      for (const [lo, hi, slot, i] of this.geom.gen.concat(this.geom.rec)) {
        if (i === hover) g.strokeRect(this.px(lo) + 1.5, this.py(slot) + 1.5, this.px(hi) - this.px(lo) - 3, this.py(slot + 1) - this.py(slot) - 3);
      }
    }
    const cx = this.px(Math.min(cursor, this.end));
    if (cx < x1) {  // the curtain: steps not played yet
      g.fillStyle = c.background;
      g.fillRect(cx, this.y(0), x1 - cx, frameH);
    }
    g.strokeStyle = c.text;
    g.lineWidth = 2;
    g.setLineDash([6, 4]);
    g.beginPath();
    g.moveTo(cx, this.y(0));
    g.lineTo(cx, this.y(0) + frameH);
    g.stroke();
    g.setLineDash([]);
    // Axes, title and labels.
    g.fillStyle = c.text;
    g.strokeStyle = c.text;
    g.lineWidth = 1;
    g.font = "600 13px system-ui, sans-serif";
    g.textBaseline = "alphabetic";
    g.textAlign = "left";
    g.fillText(title, MARGIN.left, 15);
    if (mark) {  // what the cursor stands for, over the column it means: "step 20" over step 20's column
      const [text, at] = mark, mx = this.x(Math.min(at, this.end));
      g.font = "600 11px system-ui, sans-serif";
      const half = g.measureText(text).width / 2 + 6;
      g.textAlign = "center";
      g.fillText(`${text} ▾`, Math.min(Math.max(mx, x0 + half), x1 - half), MARGIN.top - 4);
    }
    g.font = "11px system-ui, sans-serif";
    g.textAlign = "right";
    g.textBaseline = "middle";
    for (let s = 0; s < slots; s++) g.fillText(`slot${s}`, MARGIN.left - 6, this.y(s + 0.5));
    const base = this.y(0) + frameH;
    g.beginPath();
    g.moveTo(x0, base + 0.5);
    g.lineTo(x1, base + 0.5);
    g.stroke();
    g.textAlign = "center";
    g.textBaseline = "top";
    for (const tick of niceTicks(this.end)) {
      const px = Math.round(this.x(tick)) + 0.5;
      g.beginPath();
      g.moveTo(px, base);
      g.lineTo(px, base + 5);
      g.stroke();
      g.fillText(onClock ? thousands(tick, 0) : String(tick), px, base + 7);
    }
    g.fillText(onClock ? "time (ms)" : "step (one forward pass)", x0 + (x1 - x0) / 2, base + 22);
    if (kv) this.drawKV(view, r, kv, cursor, base + MARGIN.bottom + KV.gap, x0, x1);
  }

  /** Fill a request's cell [lo, hi) on `slot` with `colour`, edged in white; return its [left, right, top, height]. */
  fillCell(g, lo, hi, slot, colour) {
    const [a, b, top, h] = [this.px(lo), this.px(hi), this.py(slot), this.py(slot + 1) - this.py(slot)];
    g.fillStyle = colour;
    g.fillRect(a, top, b - a, h);
    g.strokeStyle = "#FFFFFF";
    g.lineWidth = 1;
    g.strokeRect(a + 0.5, top + 0.5, Math.max(b - a - 1, 0), h - 1);
    return [a, b, top, h];
  }

  /** Draw the KV strip: the blocks held at each step played, on the pool's scale (or the larger peak's). */
  drawKV(view, r, kv, cursor, top, x0, x1) {
    const g = this.canvas.getContext("2d"), c = this.colours, scale = kvScale(view, this.pair);
    g.fillStyle = c.idle;
    g.fillRect(x0, top, x1 - x0, KV.bars);
    g.fillStyle = c.memory;
    const shown = Math.min(Math.floor(cursor), kv.length, this.end);
    for (let t = 0; t < shown; t++) {
      const h = Math.round((KV.bars * kv[t]) / scale);
      if (h > 0) g.fillRect(this.px(t), top + KV.bars - h, Math.max(this.px(t + 1) - this.px(t), 1), h);
    }
    this.kvTop = top;  // read by the pixel tests
    this.kvScale = scale;
    g.fillStyle = c.text;
    g.font = "11px system-ui, sans-serif";
    g.textAlign = "right";
    g.textBaseline = "middle";
    g.fillText("KV", MARGIN.left - 6, top + KV.bars / 2);
    g.textAlign = "left";
    g.textBaseline = "top";
    const verb = r.traits.forms_batches ? "reserved (whole rows)" : r.reserves ? "reserved (one run each)" : "held";
    const of = view.pool ? `, of a pool of ${view.pool}` +
      (view.pool_asked && view.pool_asked < view.pool ? ` (raised from ${view.pool_asked}: the least this traffic fits)` : "")
      : ` (unlimited pool; full height = ${scale} blocks, the larger peak of the two runs)`;
    const long = `KV blocks ${verb} at each step${of}`;
    const short = `KV blocks ${verb.split(" ")[0]}` + (view.pool ? ` (pool: ${view.pool})` : "");
    g.fillText(g.measureText(long).width <= x1 - x0 ? long : short, x0, top + KV.bars + 3);  // a phone: the short
  }
}

// ---- the widget: controls, player, stats, head-to-head, both timelines, legend and caption -------------------------
const PLAY = "▶ Play", PAUSE = "❚❚ Pause";
const MOVES = [
  ["« Start", "Go to step 0", (w) => 0],
  ["◂ Back", "One step back", (w) => Math.max(0, w.step - 1)],
  null,  // the play button
  ["Step ▸", "One step forward", (w) => Math.min(w.last(), w.step + 1)],
  ["End »", "Go to the window's last step", (w) => w.last()],
];

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") node.textContent = v;
    else if (k === "html") node.innerHTML = v;
    else node.setAttribute(k, v);
  }
  for (const child of children) node.appendChild(child);
  return node;
}

function range(label, name, min, max, value) {
  const input = el("input", { type: "range", min, max, step: 1, name, "aria-label": label });
  input.value = value;
  const out = el("output", { "data-value": name, text: String(value) });
  const box = el("label", { class: "bv-range" }, el("span", { class: "bv-range-label", text: label + " " }), out,
    input);
  return { box, input, out };
}

/**
 * Mount the chapter's widget in `root`. `host` connects it to its data:
 *   config: constants (colours, loops, captions, legend);  lookup(settings) -> a view, or null when not known yet;
 *   settle(settings): ask for the view of these settings (the server computes it and calls widget.confirm);
 *   onStep(t, final): the step moved (the server's copy follows; `final` when playback stopped or a click moved it).
 */
export function mountWidget(root, host) {
  const cfg = host.config;
  const w = {
    view: null, settings: null, step: 0, hover: null, timer: null, pending: null, paints: 0,
    last() { return this.view ? this.view.window - 1 : 0; },
  };
  root.classList.add("bv-widget-root");
  const modeGroup = el("div", { role: "radiogroup", "aria-label": "Batching mode", class: "bv-modes" });
  const modeButtons = (cfg.modes ?? [["continuous", "continuous"], ["static", "static"]]).map(([mode, label]) => {
    const b = el("button", { type: "button", role: "radio", "data-mode": mode, text: label });
    b.addEventListener("click", () => change({ mode }));
    modeGroup.appendChild(b);
    return b;
  });
  const slots = range("Batch slots", "slots", 1, 16, 4);
  const seed = range("Traffic seed", "seed", 0, 99, 0);
  const traffic = el("span", { class: "bv-traffic", "aria-live": "polite" });  // which traffic the view shows
  const controls = el("div", { class: "bv-controls" }, modeGroup, slots.box, seed.box, traffic);
  const player = el("div", { class: "bv-player", role: "group", "aria-label": "Playback" });
  const buttons = MOVES.map((move) => {
    if (move === null) {
      const play = el("button", { type: "button", class: "bv-play", title: "Play the steps in order", text: PLAY });
      play.addEventListener("click", () => (w.timer ? stop() : start()));
      player.appendChild(play);
      return play;
    }
    const [label, help, target] = move;
    const b = el("button", { type: "button", title: help, "aria-label": `${label} (${help})`, text: label });
    b.addEventListener("click", () => { stop(); go(target(w), true); });
    player.appendChild(b);
    return b;
  });
  const playButton = buttons[2];
  const stepInput = el("input", { type: "range", min: 0, max: 63, step: 1, name: "step", "aria-label": "Step" });
  stepInput.addEventListener("input", () => { stop(); go(Number(stepInput.value), false); });
  stepInput.addEventListener("change", () => host.onStep(w.step, true));
  // The pace of playback: a learner's 120 ms a step by default, slower to follow one request, or one step a frame.
  const speed = el("select", { name: "speed", "aria-label": "Playback speed", title: "Playback speed",
    class: "bv-speed" });
  for (const [label, ms] of cfg.speeds ?? [[`${cfg.interval_ms} ms a step`, cfg.interval_ms]]) {
    const option = el("option", { value: String(ms), text: label });
    option.selected = ms === cfg.interval_ms;
    speed.appendChild(option);
  }
  speed.addEventListener("change", () => { if (w.timer) { clearInterval(w.timer); w.timer = null; start(); } });
  player.appendChild(speed);
  player.appendChild(el("label", { class: "bv-range bv-step-range" }, el("span", { text: "Step" }), stepInput));
  const panel = el("div", { class: "bv-panel", "data-part": "playback", "aria-live": "off" });
  const compact = el("div", { class: "bv-h2h-compact" });
  const status = el("div", { class: "bv-status" }, panel, compact);
  const plots = el("div", { class: "bv-timelines" });
  const tip = el("div", { class: "bv-tip", role: "tooltip", hidden: "" });
  const onHover = (i) => {
    if (i === w.hover) return;
    w.hover = i;
    paint();
    host.onHover?.(i === null ? null : w.view.ids[i]);
  };
  const timelines = [new Timeline(plots, "timeline", cfg.colours, onHover),
                     new Timeline(plots, "timeline-other", cfg.colours, onHover)];
  for (const tl of timelines) {
    tl.canvas.addEventListener("mousemove", (e) => showTip(tl, e));
    tl.canvas.addEventListener("mouseleave", () => (tip.hidden = true));
  }
  const legend = el("div", { html: cfg.legend });
  const caption = el("div", { class: "bv-caption" });
  root.append(controls, player, status, plots, tip, legend, caption);
  new ResizeObserver(() => paint()).observe(plots);

  function showTip(tl, e) {
    const i = tl.hit(e);
    if (i === null || !w.view) { tip.hidden = true; return; }
    const v = w.view, r = v.runs[tl.canvas.dataset.timeline === "timeline" ? w.settings.mode : other()];
    const f = (x) => (v.clock === "ms" ? fixed(x, 1) : String(x));
    const [st, fi] = v.clock === "ms" ? [r.start_ms[i], r.finish_ms[i]] : [r.start[i], r.finish[i]];
    const arr = v.clock === "ms" ? v.arrival_ms[i] : v.arrival[i], unit = v.clock === "ms" ? "ms" : "steps";
    tip.innerHTML = `<b>request ${escape(v.ids[i])}</b><br>arrival ${f(arr)}<br>start ${f(st)}<br>finish ${f(fi)}` +
      `<br>latency ${f(fi - arr)} ${unit}<br>wait ${f(st - arr)} ${unit}`;
    const box = root.getBoundingClientRect();
    tip.style.left = `${e.clientX - box.left + 12}px`;
    tip.style.top = `${e.clientY - box.top + 12}px`;
    tip.hidden = false;
  }

  const other = () => w.view.runs[w.settings.mode].traits.versus;  // the run drawn beneath: the one it is compared with
  const cursorX = (t) => (w.view.clock === "ms" ? timesOf(w.view, w.settings.mode)[t] : t + 1);

  function paint() {
    const v = w.view;
    if (!v) return;
    const t = Math.max(0, Math.min(w.step, w.last()));
    const mode = w.settings.mode;
    const mark = v.clock === "ms" ? [`t = ${thousands(cursorX(t), 1)} ms`, cursorX(t)] : [`step ${t}`, t + 0.5];
    timelines[0].draw(v, mode, cursorX(t), w.hover, mark);
    timelines[1].host.hidden = false;
    timelines[1].canvas.hidden = !v.both;
    if (v.both) timelines[1].draw(v, other(), cursorX(t), w.hover, mark, mode);
    panel.innerHTML = v.clock === "ms" ? clockPlaybackHtml(v, mode, t) : playbackHtml(v, mode, t);
    const loop = v.clock === "ms" ? clockLoopHtml(v, mode, t) : loopHtml(v, mode, t);
    host.onLoop?.(loop, t);
    if (host.onBatch && cfg.batch) {  // the batch at the cursor (app/web/batch.js), where the page shows it
      const batch = batchHtml(v, cfg, mode, t);
      if (batch !== w.lastBatch) { w.lastBatch = batch; host.onBatch(batch, t); }
    }
    w.paints++;
    w.paintedStep = t;
    root.dataset.paints = String(w.paints);
    root.dataset.step = String(t);
    root.dataset.key = v.key;
    window.__bvPaints = (window.__bvPaints || 0) + 1;
    window.__bvPainted = performance.now();
    window.__bvOnPaint?.(t);  // a benchmark's hook: it marks the frame this paint reaches the screen in
  }

  function showSettings() {
    const s = w.settings, v = w.view;
    for (const b of modeButtons) {
      const on = b.dataset.mode === s.mode;
      b.setAttribute("aria-checked", String(on));
      b.classList.toggle("bv-on", on);
    }
    slots.input.max = String(v.slots_end);
    slots.input.value = String(s.slots);
    slots.out.textContent = String(s.slots);
    seed.input.value = String(s.seed);
    seed.out.textContent = String(s.seed);
    seed.box.hidden = !v.generator;
    traffic.textContent = v.traffic_label ?? "";
    stepInput.max = String(w.last());
    stepInput.value = String(Math.min(w.step, w.last()));
    compact.innerHTML = h2hCompactHtml(v, s.mode);
    host.onView?.(v, s);  // the page around the widget: what follows the view, not the step
    caption.textContent = (v.pool && cfg.captions_memory ? cfg.captions_memory : cfg.captions)[s.mode] +
      sameRunNote(v, s.mode) + timeoutNote(v, s.mode);
    const memoryLegend = Boolean(v.pool && cfg.legend_memory);
    if (legend.dataset.memory !== String(memoryLegend)) {
      legend.dataset.memory = String(memoryLegend);
      legend.innerHTML = cfg.legend + (memoryLegend ? cfg.legend_memory : "");
    }
  }

  function show(view, settings) {
    w.view = view;
    w.settings = settings;
    showSettings();
    paint();
  }

  function go(t, final) {
    w.step = Math.max(0, Math.min(t, w.last()));
    stepInput.value = String(w.step);
    paint();
    host.onStep(w.step, final);
  }

  function start() {
    if (w.step >= w.last()) go(0, false);
    playButton.textContent = PAUSE;
    const every = window.__bvInterval ?? Number(speed.value);  // a benchmark may ask for another frame interval
    w.timer = setInterval(() => { if (w.step >= w.last()) stop(); else go(w.step + 1, false); }, every);
  }

  function stop() {
    if (!w.timer) return;
    clearInterval(w.timer);
    w.timer = null;
    playButton.textContent = PLAY;
    host.onStep(w.step, true);
  }

  // A settings change draws at once from a view already known (a neighbour the server sent ahead, or the export's
  // table); the server's answer then confirms it, and an answer for settings no longer asked for is dropped.
  function change(delta) {
    const settings = { ...w.settings, ...delta };
    if (settings.mode === w.settings.mode && settings.slots === w.settings.slots && settings.seed === w.settings.seed) {
      return;
    }
    const onlyMode = settings.slots === w.settings.slots && settings.seed === w.settings.seed;
    const known = onlyMode ? w.view : host.lookup(settings);
    if (known) show(known, settings);
    else { w.settings = settings; showSettings(); }
    host.settle(settings);
  }
  slots.input.addEventListener("input", () => change({ slots: Number(slots.input.value) }));
  seed.input.addEventListener("input", () => change({ seed: Number(seed.input.value) }));

  w.confirm = (view, settings, step) => {
    if (step !== undefined && !w.timer) w.step = step;
    if (w.view && w.view.key === view.key && w.settings.mode === settings.mode && w.paintedStep === w.step) {
      w.settings = settings;  // drawn ahead already: nothing to repaint (the drawn view object is kept)
      showSettings();
      return;
    }
    show(view, settings);
  };
  w.setStep = (t) => { if (!w.timer && t !== w.step) { w.step = t; stepInput.value = String(t); paint(); } };
  w.timelines = timelines;
  w.start = start;
  w.stop = stop;
  w.paint = paint;
  return w;
}
