// Exercise 1's three figures as chart specs (app/web/charts/chart.js draws them): inter-token latency against its target,
// throughput, p99 latency; both knees marked once the learner has guessed. Both pages draw these from the sweep's
// columns (app/exercises/knee_plots.py points_data), so the knees are found here, for any target.

const BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];  // core/measure/sweep.py DEFAULT_BATCHES
export const KNEE_COLOURS = {
  target: "#D55E00", decode: "#767676", measured: "#56B4E9", knee: "currentColor",
  clock: "#009E73", throughput: "#0072B2", e2e: "#CC79A7", admitted: "#767676",
};
// The ITL figure's headroom: the highest point at 1/1.3 of the height, the target at most at 1/1.4, so the knees'
// labels, hung from the top, are never crossed by a line.
const DATA_HEADROOM = 1.3, TARGET_HEADROOM = 1.4;

/** Return the smallest batch from which every larger size is the same run (core/measure/sweep.py same_run_from). */
export function sameRunFrom(pts) {
  const i = (pts.one_run ?? []).indexOf(true);
  return i < 0 ? null : pts.batch[i];
}

/**
 * Return the largest batch whose value in `column` meets the target, or the first of the sizes that all run one run
 * where the largest is one of them (core/measure/sweep.py knee). Null where none meets it.
 */
export function kneeOf(pts, column, target) {
  let best = null;
  pts.batch.forEach((b, i) => { if (pts[column][i] <= target) best = b; });
  const same = sameRunFrom(pts);
  return best !== null && same !== null && same <= best ? same : best;
}

/** Return the three chart specs for the sweep `pts` at `target` ms; `revealed`: the learner has guessed. */
export function kneeSpecs(pts, target, revealed, measured = { batch: [], step_ms: [] }) {
  const c = KNEE_COLOURS, best = kneeOf(pts, "itl_p99_ms", target), dbest = kneeOf(pts, "decode_itl_p99_ms", target);
  const x = pts.batch, xRange = [BATCHES[0] / 1.3, BATCHES[BATCHES.length - 1] * 1.3];
  const axes = { log_x: true, x_ticks: BATCHES, x_range: xRange, x_label: "batch size (slots)" };
  const top = Math.max(Math.max(...pts.decode_itl_p99_ms, ...(revealed ? pts.itl_p99_ms : []),
    ...measured.step_ms) * DATA_HEADROOM, target * TARGET_HEADROOM);
  // The knees hang from the top of the ITL figure: the clock's in bold, decode alone's in grey on a second row.
  const marks = !revealed ? [] : [
    best !== null
      ? { id: "knee", x: best, color: c.knee, dash: "dotted", bold: true, row: 0, label: `knee: batch ${best}` }
      : { id: "no-knee", x: BATCHES[0], color: c.knee, width: 0, bold: true, row: 0,
        label: "no batch meets the target" },
    ...(dbest !== null ? [{ id: "decode-knee", x: dbest, color: c.decode, dash: "dotted", row: 1,
      label: `decode alone: ${dbest}` }] : []),
  ];
  const itl = {
    id: "knee-itl", title: "Inter-token latency, p99", y_label: "ms", height: 330, legend: "below", ...axes,
    y_range: [0, top],
    series: [
      { id: "decode", label: "decode alone (no prefill work)", x, y: pts.decode_itl_p99_ms, color: c.decode,
        dash: "dashed", width: 2 },
      { id: "clock", label: "on the clock (prefill included)", x, y: pts.itl_p99_ms, color: c.clock, width: 3,
        dots: 7, visible: revealed },
      { id: "measured", label: "measured by the replay", x: measured.batch, y: measured.step_ms, color: c.measured,
        line: false, dots: 12, marker: "diamond", visible: measured.batch.length > 0 },
    ],
    hlines: [{ id: "target", y: target, color: c.target, label: `target: ${target} ms per token` }],
    vlines: marks,
  };
  const throughput = {
    id: "knee-throughput", title: "Throughput", y_label: "tokens/s", height: 220, ...axes,
    y_range: [0, Math.max(...pts.tokens_per_s) * 1.1 || 1],
    series: [{ id: "throughput", x, y: pts.tokens_per_s, color: c.throughput, width: 3, dots: 7 }],
    vlines: revealed && best !== null ? [{ id: "knee", x: best, color: c.knee, dash: "dotted" }] : [],
  };
  const positive = [...pts.p99_latency_s, ...pts.p99_admitted_s].filter((v) => v > 0);
  const latency = {
    id: "knee-latency", title: "p99 latency (log scale)", y_label: "s", height: 280, legend: "below", ...axes,
    log_y: true, y_range: [(positive.length ? Math.min(...positive) : 1) / 2,
      (positive.length ? Math.max(...positive) : 1) * 2],
    series: [
      { id: "e2e", label: "end to end", x, y: pts.p99_latency_s, color: c.e2e, width: 3, dots: 7 },
      // Once admitted: past the knee each request's own time grows with the batch (the chapter's "every request
      // in the batch feels it"), while the end-to-end figure, below capacity, only stops falling.
      { id: "admitted", label: "once admitted (no wait for a slot)", x, y: pts.p99_admitted_s, color: c.admitted,
        dash: "dashed", width: 2, dots: 5 },
    ],
    vlines: revealed && best !== null ? [{ id: "knee", x: best, color: c.knee, dash: "dotted" }] : [],
  };
  return [itl, throughput, latency];
}
