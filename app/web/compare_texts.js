// The texts that compare the run shown with the one beneath it: the first screen's compact head-to-head table over
// the window (app/simulator/widget_data.py's h2h_compact, its oracle) and the notes the caption adds (a batch
// timeout; an ordered policy that ran exactly as the other).
import { cellsBefore } from "./playback_texts.js";
import { codes } from "./run_cells.js";
import { fixed, pct, plural } from "./words.js";

/** Return the two policies the compact table shows for `mode` (app/simulator/widget_data.py's compact_pair). */
export function compactPair(view, mode) {
  const r = view.runs[mode], versus = r.traits.versus;
  return r.traits.forms_batches ? [mode, versus] : [versus, mode];
}

function windowMetrics(view, policy) {
  const r = view.runs[policy], W = view.window, n = r.start.length;
  let done = 0, all = 0, doneSum = 0;
  for (let i = 0; i < n; i++) {
    const latency = r.finish[i] - view.arrival[i];
    if (r.finish[i] <= W) { done++; doneSum += latency; }
    all += latency;
  }
  const [GEN, , REC] = codes(r), useful = cellsBefore(r, [GEN, REC], W), cells = W * r.slots;
  return { completed: `${done}/${n}`, utilisation: pct(cells ? useful / cells : 0), drain: `${r.drain}`,
           avg_latency_completed: done ? fixed(doneSum / done, 1) : "–",
           avg_latency_all: n ? fixed(all / n, 1) : "–" };
}

// The rows each group starts at, and its heading (app/simulator/views.py COMPACT_GROUPS).
const COMPACT_GROUPS = { completed: "The chapter's figures, over the window", drain: "Every request, each to its finish" };

/**
 * Add each priority class's mean latency to the metrics `ma` and `mb` of policies a and b, and its row to `rows`,
 * where one of them orders by class on classed traffic (app/simulator/widget_data.py's class_rows).
 */
function addClassRows(view, [a, b], [ma, mb], rows) {
  const classes = [...new Set(view.priority ?? [])].sort((x, y) => x - y);
  if (classes.length < 2 || ![a, b].some((p) => view.runs[p].traits.orders_by_class)) return;
  for (const c of classes) {
    const mine = view.priority.map((q, i) => (q === c ? i : -1)).filter((i) => i >= 0);
    const mean = (r) => fixed(mine.reduce((s, i) => s + r.finish[i] - view.arrival[i], 0) / mine.length, 1);
    ma[`latency_class${c}`] = mean(view.runs[a]);
    mb[`latency_class${c}`] = mean(view.runs[b]);
    rows.push([`latency_class${c}`, `Avg latency, priority ${c} (${mine.length}), to finish (steps)`]);
  }
}

/** Return the compact head-to-head table (completed, utilisation, latency over every request) on steps. */
export function h2hCompactHtml(view, mode = "continuous") {
  if (view.h2h_compact) return view.h2h_compact[mode];  // on a clock the server sends its timed tables
  const [a, b] = compactPair(view, mode), ma = windowMetrics(view, a), mb = windowMetrics(view, b);
  const rows = [["completed", "Completed"], ["utilisation", "GPU utilisation"],
                ["avg_latency_completed", "Avg latency of the completed (steps)"], ["drain", "All done at step"],
                ["avg_latency_all", "Avg latency, all, each to its finish (steps)"]];
  addClassRows(view, [a, b], [ma, mb], rows);
  const heading = (key) => (COMPACT_GROUPS[key]
    ? `<tr class="bv-h2h-group"><th colspan="3" scope="colgroup">${COMPACT_GROUPS[key]}</th></tr>` : "");
  const body = rows.map(([key, label]) => `${heading(key)}<tr><th scope="row">${label}</th>` +
    `<td data-h2h="${a}-${key}">${ma[key]}</td><td data-h2h="${b}-${key}">${mb[key]}</td>` +
    "</tr>").join("");
  return '<table class="bv-h2h"><caption>Head to head, same traffic and slots (the window: steps ' +
    `0–${view.window - 1})</caption>` +
    `<thead><tr><td></td><th scope="col">${view.runs[a].traits.label}</th>` +
    `<th scope="col">${view.runs[b].traits.label}</th></tr></thead>` +
    `<tbody>${body}</tbody></table>`;
}

/**
 * Return what the caption adds on a contiguous pool for a policy that admits between passes: its memory caption
 * speaks of preemption on the paged cache, but here each request reserves its prompt plus its answer cap when it is
 * admitted (core/sched/policies.py reserves_whole_life), so none ever needs another block.
 */
export function contiguousNote(view, mode) {
  if (!view.pool || view.allocation !== "contiguous" || view.runs[mode].traits.forms_batches) return "";
  return " On this contiguous cache each request reserves its prompt plus its answer cap when it is admitted, so " +
    "none ever needs another block and nobody is preempted: a request waits until its whole reservation fits.";
}

/**
 * Return what the caption adds when a batch policy runs with a batch timeout: it waits, up to the timeout, for its
 * batch to fill (core/sched/policies.py Static.batch_forms_at), so "a batch forms when every slot is free" is not all.
 */
export function timeoutNote(view, mode) {
  if (!view.timeout || !view.runs[mode].traits.has_timeout) return "";
  return ` Here it also waits for the batch to fill, at most ${plural(view.timeout, "step")} after its oldest ` +
    "request arrived (the batch timeout), so a slot can stand empty while a request waits.";
}

/**
 * Return the words the caption adds when an ordered policy's run is exactly the run it is compared with: why (every
 * request has the same key) or that its order changed nobody's admission here. "" when the runs differ.
 */
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
