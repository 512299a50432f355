// The Memory tab's three runs on one pool at the cursor (app/memory/data.py's JSON): each mode's timeline as a
// table, the pool box by box, and memory's decisions in words. Each string equals what tests/oracles/memory_view.py's
// mode_html writes (tests/test_node_parity.py); the served tab and the exported page draw it here.
import { escape, plural } from "../words.js";

// Python's round(): halves to even (26 * 3 / 12 is 6.5, drawn 6 px high, not 7).
const pyRound = (x) => {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
};

function longestFree(owners) {
  let run = 0, longest = 0;
  for (const o of owners) { run = o < 0 ? run + 1 : 0; longest = Math.max(longest, run); }
  return longest;
}

function poolHtml(data, mode, step) {
  const m = data.modes[mode], n = data.blocks;
  const owners = m.pools.slice(step * n, (step + 1) * n);
  const boxes = owners.map((o, b) => (o >= 0
    ? `<span class="held" title="block ${b}: ${escape(data.ids[o])}">${escape(data.ids[o])}</span>`
    : `<span class="free" title="block ${b}: free"></span>`)).join("");
  const free = owners.filter((o) => o < 0).length;
  let words = `step ${step}: ${owners.length - free} of ${owners.length} blocks held, ${free} free`;
  if (m.contiguous && free) words += `, the longest free run ${longestFree(owners)}`;
  return `<div class="bv-pool" data-pool="${mode}" role="img" aria-label="${escape(words)}">${boxes}</div>` +
    `<p class="bv-muted" data-pool-words="${mode}">${escape(words)}</p>`;
}

function waitWords(data, m, [, , request, needed, free, longest, hole]) {
  const name = data.ids[request];
  const head = m.batches
    ? `${name} waits for memory: one more row of the batch needs ${plural(needed, "block")}`
    : `${name} waits for memory: it needs ${plural(needed, "block")}`;
  if (hole) {
    return `${head}; ${free} are free but in holes, the longest free run ${longest} (a contiguous cache needs them ` +
      "in one run)";
  }
  if (!free) return `${head} and none is free`;
  return `${head} and only ${free} ${free === 1 ? "is" : "are"} free`;
}

/** Return memory's decisions at `step` in words: each preemption and why, each request waiting and why. */
export function memoryEvents(data, mode, step) {
  const m = data.modes[mode], names = data.ids, out = [];
  for (const [at, victim, neededBy, tokens, freed] of m.preempts) {
    if (at !== step) continue;
    out.push(`step ${step}: ${names[neededBy]} needs a new block and none is free; ${names[victim]}, admitted last, ` +
      `is preempted: its ${plural(freed, "block")} freed, it goes back to the front of the queue, and when it ` +
      `returns it recomputes the KV of its prompt (${plural(data.prompt[victim], "token")}) and of the ` +
      `${plural(tokens, "token")} it had generated`);
  }
  const spoken = new Set();
  for (const w of m.waits) {
    if (w[0] === step && !spoken.has(w[2])) {  // static waits per empty slot: one line per request
      spoken.add(w[2]);
      out.push(`step ${step}: ${waitWords(data, m, w)}`);
    }
  }
  return out;
}

function timelineHtml(data, mode, step) {
  const m = data.modes[mode], width = data.width, waits = new Map();
  for (const w of m.waits) waits.set(`${w[1]},${w[0]}`, w);
  const rows = [];
  for (let slot = 0; slot < m.slots; slot++) {
    const tds = [];
    for (let t = 0; t < width; t++) {
      const k = 2 * (slot * width + t), state = m.grid[k], i = m.grid[k + 1];
      const [css, words] = data.cells[state];
      const classes = [css, ...(t === step ? ["cursor"] : []), ...(t > step ? ["future"] : [])];
      let title = `slot ${slot}, step ${t}: ` + (i >= 0 ? `${data.ids[i]} ${words}` : words);
      if (t > step) title = `slot ${slot}, step ${t}: not yet played`;  // the playback curtain
      let text = i >= 0 ? escape(data.ids[i]) : "";
      const w = waits.get(`${slot},${t}`);
      if (w && t <= step) {
        classes.push("blocked");
        const why = w[6] ? `${w[4]} free but the longest run is ${w[5]}` : `${w[4]} free`;
        title += `; ${data.ids[w[2]]} waits for memory: needs ${plural(w[3], "block")}, ${why}`;
        text = "⊘";
      }
      tds.push(`<td class="${classes.join(" ")}" title="${escape(title)}">${text}</td>`);
    }
    rows.push(`<tr><th scope="row">slot ${slot}</th>${tds.join("")}</tr>`);
  }
  const bars = m.used.map((u, t) => `<td class="kv" title="step ${t}: ${u} of ${data.blocks} blocks"><span ` +
    `style="height:${t <= step ? pyRound((26 * u) / data.blocks) : 0}px"></span></td>`).join("");
  rows.push(`<tr><th scope="row">KV blocks</th>${bars}</tr>`);
  return `<div class="bv-mem-frame"><table class="bv-mem-grid" data-mode="${mode}" aria-label="${escape(m.title)}: ` +
    `slots by step">${rows.join("")}</table></div>`;
}

/** Return every mode's block at `step`: its title, timeline, the pool at the cursor (and before a decision), its log. */
export function memoryModesHtml(data, step) {
  return Object.keys(data.modes).map((mode) => {
    const log = memoryEvents(data, mode, step);
    const logHtml = log.map((line) => `<li>${escape(line)}</li>`).join("") || "<li>no memory decision at this step</li>";
    const before = !log.length || step === 0 ? "" : "<p class='bv-muted'>Before this step's decisions:</p>" +
      poolHtml(data, mode, step - 1).replace('data-pool="', 'data-pool-before="')
        .replace('data-pool-words="', 'data-pool-before-words="');
    return `<section class="bv-mem-mode" data-mem-mode="${mode}"><h3>${data.modes[mode].title}</h3>` +
      `${timelineHtml(data, mode, step)}${poolHtml(data, mode, step)}${before}` +
      `<ul class="bv-mem-log" data-mem-log="${mode}">${logHtml}</ul></section>`;
  }).join("");
}
