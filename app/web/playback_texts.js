// The texts under the player at the cursor: the readout, live stats, waste meter, KV line and decision log, on steps
// and on a clock. Each string equals what its Python oracle, tests/oracles/progress.py (playback_texts,
// clock_progress_table), builds: tests/test_node_parity.py in node, tests/browser/test_renderer.py in Chromium.
import { cellsOf, codes, timesOf } from "./run_cells.js";
import { escape, fixed, pct, plural, thousands } from "./words.js";

/** Return the stats row: each [key, label, value] a labelled figure. */
function statsRow(items) {
  const cells = items.map(([key, label, value]) =>
    `<div class="bv-stat"><div class="bv-stat-label">${label}</div>` +
    `<div class="bv-stat-value" data-stat="${key}">${value}</div></div>`).join("");
  return `<div class="bv-stats">${cells}</div>`;
}

export function statsHtml(completed, total, useful, util, avg) {
  return statsRow([
    ["completed", "Completed", `${completed}/${total}`],
    ["useful_tokens", "Useful tokens", `${useful}`],
    ["utilisation", "GPU utilisation", pct(util)],
    ["avg_latency", "Avg latency so far, every request (steps)", avg === null ? "–" : fixed(avg, 1)],
  ]);
}

/** Return the slot-steps before t of the cells in `states` (GEN, PAD, REC, PRE). */
export function cellsBefore(r, states, t) {
  let n = 0;
  for (const [, , lo, hi, state] of cellsOf(r)) if (states.includes(state)) n += Math.max(Math.min(hi, t) - Math.min(lo, t), 0);
  return n;
}

// ---- on steps ---------------------------------------------------------------------------------------------------
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

/** Return step t's decision log: what each decision that step did, in words. */
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
    `<span class="bv-step-note"> of 0–${W - 1}: the cards count steps 0–${t}` +
    `${t < W - 1 ? `, the head to head all ${W} steps` : ""}</span>`;
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

// ---- on a clock: playback moves a time cursor over both drains (app/progress.py's clock_progress_table) ----------
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

/** Return the pass under time t: the last one begun by then, if it is still running (else -1). */
export function passAt(r, t) {
  const p = searchsorted(r.pass_start_ms, t, "left") - 1;
  return p >= 0 && t <= r.pass_end_ms[p] ? p : -1;
}

function clockStatsHtml(completed, total, tokens, perSecond, avg) {
  return statsRow([
    ["completed", "Completed", `${completed}/${total}`],
    ["useful_tokens", "Tokens out", `${tokens}`],
    ["tokens_per_s", "Tokens/s so far (to its last token)", thousands(perSecond, 0)],
    ["avg_latency_ms", "Avg latency so far, every request (ms)", avg === null ? "–" : thousands(avg, 1)],
  ]);
}

/** Return the log line at time t on a clock: the pass under the cursor and its work, or that none is running. */
function clockLogHtml(r, t) {
  const p = passAt(r, t);
  if (p < 0) return `${thousands(t, 1)} ms: no pass is running` + (t >= r.drain_ms ? ": all done" : "");
  const prefill = r.pass_prefill[p];
  const work = plural(r.pass_rows[p], "row") + (prefill ? `, ${thousands(prefill, 0)} prompt tokens prefilled` : "");
  // Counted from 1, as "Forward passes done" counts them: after 44 are done, pass 45 runs.
  return escape(`pass ${p + 1}, ${thousands(r.pass_start_ms[p], 1)}-${thousands(r.pass_end_ms[p], 1)} ms: ${work}`);
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
  // The idle time after the run's last token is said apart (as the steps view says it): the axis runs on to the
  // later drain of the pair, and a learner read it all as idle time during service (issue 47).
  const after = Math.max(t - r.drain_ms, 0);
  const waste = `<span class="bv-waste">Forward passes done: <b data-waste="passes">${donePasses}</b>; the GPU ` +
    `sat idle <b data-waste="idle_ms">${thousands(Math.max(t - busy, 0), 1)}</b> ms` +
    (after > 0 ? ` (${thousands(after, 1)} of them after its last token, at ${thousands(r.drain_ms, 1)} ms)` : "") +
    "</span>";
  return `<div class="bv-readout">${readout}</div>${stats}<div class="bv-waste-row">${waste}</div>` +
    `<div class="bv-log">${clockLogHtml(r, t)}</div>`;
}
