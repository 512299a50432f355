// What a run's flat arrays mean: its cells (request, slot, from, to, state), its stays, its clock's frames and the pair
// of runs a mode shows. The renderer (app/web/renderer.js) draws them; the page's texts (playback_texts.js,
// loop_texts.js, compare_texts.js) read them too.

// A run's cells and stays. The memory engine sends them when a request was preempted (it then has several stays,
// and recompute cells); otherwise each request is one stay: generating from start to finish, padding to release.
// The cell states' numbers come with each run (core/states.py, defined once): generating, padding, recompute, prefill.
export const codes = (r) => [r.states.generating, r.states.padding, r.states.recompute, r.states.prefill];
export const chunks = (flat, width) => {
  const out = [];
  for (let k = 0; k < flat.length; k += width) out.push(flat.slice(k, k + width));
  return out;
};
/** Return a run's cells as [request, slot, from, to, state] rows (cached on the run). */
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

/** Return the time cursor of each playback frame: `frames` even steps ending at `end` (progress.clock_times). */
export function clockTimes(end, frames) {
  const out = [];
  for (let k = 0; k < frames; k++) out.push(end * (k + 1) / frames);
  return out;
}
/** Return the clock axis's end for `mode`: the later drain of the two runs shown (the server computes it). */
export const clockEnd = (view, mode) => view.end_ms_by?.[mode] ?? view.end_ms;
/** Return the time (ms) of each playback frame of `mode` on a clock, cached on the view. */
export const timesOf = (view, mode) => ((view._times ??= {})[mode] ??= clockTimes(clockEnd(view, mode), view.window));

/** Return the two runs shown for `mode`: it, and the one it is compared with (drawn beneath it). */
export function shownPair(view, mode) {
  return [mode, view.runs[mode].traits.versus];
}
