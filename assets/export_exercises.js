// batchviz static page, the exercises: each part draws runs the core computed in advance (app/export_exercises.py).
// The file is split at the section markers; each CustomJS gets the helpers and its own part.
// ---- helpers
// Python's float formatting rounds exact ties to even; JavaScript's toFixed rounds them up.
function fixed(x, digits) {
  const v = x * 10 ** digits;
  const f = Math.floor(v);
  if (v - f === 0.5) return ((f % 2 === 0 ? f : f + 1) / 10 ** digits).toFixed(digits);
  return x.toFixed(digits);
}
function grouped(x) {  // Python's f"{x:,.0f}"
  return fixed(x, 0).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}
// ---- knee
// Mirrors app/exercises/knee.py: show_knee and the readout's table; the knee is found here, for any target.
const D = (window.__bvKnee ??= JSON.parse(data_json));
const pts = D[accelerator.value][model.value][rate.value];
const t = target.value;
source.data = {batch: pts.batch, step_ms: pts.step_ms, itl_p99_ms: pts.itl_p99_ms,
               tokens_per_s: pts.tokens_per_s, p99_latency_s: pts.p99_latency_s};
let best = null;
for (let i = 0; i < pts.batch.length; i++) if (pts.itl_p99_ms[i] <= t) best = i;
target_line.location = t;
plots_itl.y_range.end = Math.max(...pts.step_ms, t) * 1.1;
plots_throughput.y_range.end = Math.max(...pts.tokens_per_s) * 1.1 || 1;
const positive = pts.p99_latency_s.filter((v) => v > 0);
plots_latency.y_range.start = (positive.length ? Math.min(...positive) : 1) / 2;
plots_latency.y_range.end = (positive.length ? Math.max(...positive) : 1) * 2;
for (const span of knee_spans) { span.location = best === null ? null : pts.batch[best]; span.visible = best !== null; }
knee_label.x = best === null ? 1 : pts.batch[best]; knee_label.y = t;
knee_label.text = best === null ? "no batch meets the target" : `knee: batch ${pts.batch[best]}`;
const verdict = best === null
  ? `<b data-knee="none">No batch size</b> meets ${t} ms per token.`
  : `The knee: batch <b data-knee="${pts.batch[best]}">${pts.batch[best]}</b>, ${fixed(pts.itl_p99_ms[best], 1)} ms ` +
    `per token at p99 and ${grouped(pts.tokens_per_s[best])} tokens/s.`;
const rows = pts.batch.map((b, i) =>
  `<tr data-batch="${b}"><td>${b}</td><td data-col="step_ms">${fixed(pts.step_ms[i], 1)}</td>` +
  `<td data-col="itl_p99_ms">${fixed(pts.itl_p99_ms[i], 1)}</td>` +
  `<td data-col="tokens_per_s">${fixed(pts.tokens_per_s[i], 0)}</td>` +
  `<td data-col="p99_latency_s">${fixed(pts.p99_latency_s[i], 2)}</td>` +
  `<td>${pts.itl_p99_ms[i] <= t ? "yes" : "no"}</td></tr>`).join("");
table.text = `<p class="bv-knee">${verdict} Poisson arrivals at ${rate.value} requests/s.</p>` +
  '<table class="bv-h2h bv-knee-table"><thead><tr><th>batch</th><th>full step ms</th><th>ITL p99 ms</th>' +
  `<th>tokens/s</th><th>p99 latency s</th><th>meets ${t} ms</th></tr></thead><tbody>${rows}</tbody></table>`;
// ---- spread
// Mirrors app/exercises/spread.py: show_spread and spread_table, precomputed per sigma.
const D = (window.__bvSpread ??= JSON.parse(data_json));
const k = Math.max(0, Math.min(D.sigmas.length - 1, Math.round((sigma.value - D.sigmas[0]) / 0.1)));
const at = D.at[k];
for (const kind of Object.keys(sources)) {
  sources[kind].data = at.hist[kind];
  histograms[kind].x_range.start = 0; histograms[kind].x_range.end = at.top;
  histograms[kind].y_range.end = Math.max(...at.hist[kind].count, 1) * 1.1;
}
cursor.location = D.sigmas[k];
table.text = at.table;
// ---- temperature
// Two states, both computed by the core's sampler: the rows' own temperatures, or the first row's for all.
const D = (window.__bvTemperature ??= JSON.parse(data_json));
const state = bug.active ? D.on : D.off;
sources.forEach((source, i) => { source.data = state.rows[i]; });
draws.text = state.html;
