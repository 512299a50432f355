// The page's text builders in node, for tests/test_node_parity.py: reads a JSON file of cases, writes each case's
// texts as JSON on stdout. A case: {view (JSON text), config, modes, steps, what: ["panel", "loop", "h2h", "batch"]},
// or the Memory tab's: {memory (JSON text), steps}.
import { readFileSync } from "node:fs";
import { batchHtml } from "../../app/web/batch.js";
import { memoryModesHtml } from "../../app/web/tabs/memory.js";
import { h2hCompactHtml, timeoutNote } from "../../app/web/compare_texts.js";
import { clockLoopHtml, loopHtml } from "../../app/web/loop_texts.js";
import { clockPlaybackHtml, playbackHtml } from "../../app/web/playback_texts.js";

const cases = JSON.parse(readFileSync(process.argv[2], "utf-8"));
const out = cases.map(({ view, config, modes, steps, what, memory }) => {
  if (memory) {  // the Memory tab: every mode's block at each step
    const data = JSON.parse(memory);
    return steps.map((t) => memoryModesHtml(data, t));
  }
  const v = JSON.parse(view), got = {};
  const clock = v.clock === "ms";
  for (const mode of modes) {
    const texts = (got[mode] = {});
    for (const part of what) texts[part] = [];
    for (const t of steps) {
      if (what.includes("panel")) texts.panel.push(clock ? clockPlaybackHtml(v, mode, t) : playbackHtml(v, mode, t));
      if (what.includes("loop")) texts.loop.push(clock ? clockLoopHtml(v, mode, t) : loopHtml(v, mode, t));
      if (what.includes("batch")) texts.batch.push(batchHtml(v, config, mode, t));
    }
    if (what.includes("h2h")) texts.h2h = h2hCompactHtml(v, mode);
    if (what.includes("timeout")) texts.timeout = timeoutNote(v, mode);
  }
  return got;
});
process.stdout.write(JSON.stringify(out));
