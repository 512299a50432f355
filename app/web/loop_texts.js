// The scheduling loop at the cursor, the lines that step (or pass, on a clock) executed lit and each line's note;
// each run brings its loop's lines (app/simulator/story.py). Each string equals its oracle's,
// tests/oracles/loop_view.py's loop_texts and clock_loop_texts, to the character (tests/test_node_parity.py).
import { deriveLog, passAt } from "./playback_texts.js";
import { chunks, timesOf } from "./run_cells.js";
import { escape, plural, thousands } from "./words.js";

/** Return a run's stays as [request, slot, start, finish, release] rows: a preempted request has one per admission. */
function staysOf(r) {
  if (r._stays) return r._stays;
  if (r.stays) return (r._stays = chunks(r.stays, 5));
  return (r._stays = r.start.map((s, i) => [i, r.slot[i], s, r.finish[i], r.release[i]]));
}

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

/** Return the loop at frame k on a clock: the last pass begun by then, lit as that pass ran (story.clock_loop_texts). */
export function clockLoopHtml(view, policy, k) {
  const r = view.runs[policy], t = timesOf(view, policy)[k], p = passAt(r, t);
  const title = p < 0 ? `The scheduling loop at ${thousands(t, 1)} ms, between passes` :
    `The scheduling loop, pass ${p + 1} (${thousands(r.pass_start_ms[p], 1)}-${thousands(r.pass_end_ms[p], 1)} ms)`;
  return loopAt(view.ids, r.loop, policy, r.start_pass, r.finish_pass, r.release_pass, p, k, title);
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
