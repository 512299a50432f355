// batchviz static page, the exercises: each part draws runs the core computed in advance (app/export/exercises.py).
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
// Mirrors app/exercises/knee.py: verdict_html, guess_html and table_html; the figures are app/web/charts/knee_charts.js's.
// Both knees are found here, for any target; the learner's guess comes first.
const D = (window.__bvKnee ??= JSON.parse(data_json));
const pts = D[accelerator.value][model.value][rate.value];
load.text = pts.load_html;  // the offered load against the largest throughput, computed with the sweep
motivation.text = pts.motivation;
const t = target.value;
const g = guess.active === null || guess.active === undefined ? null : batches[guess.active];
const revealed = g !== null;
let best = null, dbest = null;  // indices: the largest batch meeting the target, on the clock and decode alone
for (let i = 0; i < pts.batch.length; i++) {
  if (pts.itl_p99_ms[i] <= t) best = i;
  if (pts.decode_itl_p99_ms[i] <= t) dbest = i;
}
const bestB = best === null ? null : pts.batch[best], dbestB = dbest === null ? null : pts.batch[dbest];
// The figures: the served page's modules (app/web/charts/chart.js, knee_charts.js), inlined above, on the same columns.
charts.text = `<div class="bv-knee-charts">${kneeSpecs(pts, t, revealed).map((s) => chartSvg(s, width)).join("")}</div>`;
function guessHtml() {
  if (best === null) return `You guessed batch ${g}; on the clock no batch size meets the target.`;
  const steps = batches.indexOf(g) - batches.indexOf(bestB);
  if (steps === 0) return `You guessed batch ${g}: <b data-guess="right">right</b>.`;
  const where = steps > 0 ? "above" : "below", n = Math.abs(steps);
  return `You guessed batch ${g}: <b data-guess="${where}">${n === 1 ? "one size" : `${n} sizes`} ${where}</b> the knee.`;
}
// Mirrors app/exercises/knee_words.py keeps_up_html: whether the knee's batch serves the offered load.
function keepsUp(b) {
  const row = pts.kept_full.find((r) => r[0] === b);  // [batch, tokens/s kept full], by batch
  if (!row || row[1] > pts.offered) return "";
  const first = pts.kept_full.find((r) => r[1] > pts.offered);
  const others = first ? `batch ${first[0]} is the first that does` : "no batch size does";
  return ` <span data-keeps-up="no">At this load batch ${b} does not keep up: kept full it serves ` +
    `${grouped(row[1])} tokens/s against the ${grouped(pts.offered)} offered, so its queue grows for as long as the ` +
    `requests keep coming (${others}).</span>`;
}
if (!revealed) {
  verdict.text = `<p class="bv-knee" data-guess="ask">${question}</p>`;
} else {
  const clock = best === null
    ? `On the clock <b data-knee="none">no batch size</b> meets ${t} ms per token.`
    : `On the clock the knee is batch <b data-knee="${bestB}">${bestB}</b>: ${fixed(pts.itl_p99_ms[best], 1)} ms per ` +
      `token at p99 and ${grouped(pts.tokens_per_s[best])} tokens/s.`;
  let decode;
  if (dbest === null) {
    decode = 'Even decode alone, <b data-decode-knee="none">no batch size</b> would meet it.';
  } else {
    decode = `Decode alone would meet ${t} ms up to batch <b data-decode-knee="${dbestB}">${dbestB}</b> ` +
      `(${fixed(pts.decode_itl_p99_ms[dbest], 1)} ms at p99)`;
    decode += best === null || bestB < dbestB
      ? `: the prefill passes stall the tokens decoding beside them and bring the knee down to ` +
        `${best === null ? "nothing" : bestB}.`
      : ": at this load the prefill stalls do not move the knee.";
  }
  verdict.text = `<p class="bv-knee">${clock}${best === null ? "" : keepsUp(bestB)} ${decode} ${guessHtml()}</p>`;
}
const rows = pts.batch.map((b, i) =>
  `<tr data-batch="${b}"><td>${b}</td><td data-col="step_ms">${fixed(pts.step_ms[i], 1)}</td>` +
  `<td data-col="decode_itl_p99_ms">${fixed(pts.decode_itl_p99_ms[i], 1)}</td>` +
  `<td data-col="itl_p99_ms">${fixed(pts.itl_p99_ms[i], 1)}</td>` +
  `<td data-col="tokens_per_s">${fixed(pts.tokens_per_s[i], 0)}</td>` +
  `<td data-col="p99_latency_s">${fixed(pts.p99_latency_s[i], 2)}</td>` +
  `<td data-col="p99_admitted_s">${fixed(pts.p99_admitted_s[i], 2)}</td>` +
  `<td>${pts.itl_p99_ms[i] <= t ? "yes" : "no"}</td></tr>`).join("");
table.text = (revealed
  ? '<div style="overflow-x: auto; max-width: 100%" tabindex="0" role="region" aria-label="The sweep, by batch">' +
    '<table class="bv-h2h bv-knee-table"><thead><tr><th>batch</th><th>full decode step ms</th>' +
    "<th>ITL p99 ms, decode alone</th><th>ITL p99 ms, on the clock</th><th>tokens/s</th><th>p99 latency s</th>" +
    `<th>p99 once admitted s</th><th>meets ${t} ms</th></tr></thead><tbody>${rows}</tbody></table></div>`
  : "") + `<p>Poisson arrivals at ${rate.value} requests/s.</p>`;
// ---- spread
// Mirrors app/exercises/spread.py: the served page's chart specs and table, precomputed per sigma.
const D = (window.__bvSpread ??= JSON.parse(data_json));
const k = Math.max(0, Math.min(D.sigmas.length - 1, Math.round((sigma.value - D.sigmas[0]) / 0.1)));
const at = D.at[k];
histograms.text = chartsHtml(at.histograms, width);  // app/export/exercises.py ROW_WIDTH
curve.text = chartsHtml(at.curve, width);
table.text = at.table;
// ---- temperature
// Two states, both computed by the core's sampler: the rows' own temperatures, or the first row's for all.
const D = (window.__bvTemperature ??= JSON.parse(data_json));
const state = bug.active ? D.on : D.off;
charts.text = chartsHtml(state.charts, width);
draws.text = state.html;
