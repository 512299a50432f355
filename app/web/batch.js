// The batch at the cursor, drawn in the browser: continuous's ragged batch beside build_batch's lit source, and
// static's padded rectangle. Joined with the renderer into one module (app/web/bundle.py), so every top-level name
// here starts with `batch` or `_b`. Each string equals what tests/oracles/batch_view.py's BatchView.html() builds
// for the same runs, mode and step (tests/test_node_parity.py, tests/browser/test_batch_renderer.py); the constants
// come from app/simulator/batch_data.py's batch_config(), read as the renderer's config.batch.
import { escape, plural } from "./words.js";

const _bPrompt = (p) => Math.max(1, p);  // core/batch/step_batch.py's prompt_length: one start token when there is none

const _bCount = (n, noun) => `${n} ${noun}` + (n === 1 ? "" : "s");

// A block table's ids as ranges ('4-7 12'), as batch_view._compact writes them.
function _bCompact(values) {
  const parts = [];
  for (let k = 0; k < values.length;) {
    let j = k;
    while (j + 1 < values.length && values[j + 1] === values[j] + 1) j++;
    parts.push(j === k ? String(values[k]) : `${values[k]}-${values[j]}`);
    k = j + 1;
  }
  return parts.join(" ");
}

// A list cut at `limit` with how many more (batch_view._compact_list); `head` holds at least its first limit + 1.
const _bCompactList = (head, total, limit) =>
  total <= limit ? head.slice(0, total).join(" ") : head.slice(0, limit).join(" ") + ` … (${total - limit} more)`;

// chapter._short: the first `limit` values in brackets.
const _bShort = (head, total, limit) => `[${head.slice(0, limit).join(", ")}${total > limit ? ", …" : ""}]`;

// One cell per position, or the first four and last two around an ellipsis (batch_view._cells).
function _bCells(lo, hi, max) {
  const cell = (v) => `<span class="bv-cell bv-pos">${v}</span>`;
  let out = "";
  if (hi - lo <= max) {
    for (let p = lo; p < hi; p++) out += cell(p);
    return out;
  }
  for (let p = lo; p < lo + 4; p++) out += cell(p);
  out += `<span class="bv-cell bv-more" title="${hi - lo - 6} more">…</span>`;
  return out + cell(hi - 2) + cell(hi - 1);
}

/**
 * BlockAllocator and build_batch driven through a continuous run's arrays, as core/batch/step_batch.py's
 * ContinuousBatches does: moving forward costs one step's work per step; moving back replays from step 0.
 */
class _bWalker {
  constructor(view, cfg, r) {
    const n = r.start.length;
    if (r.traits.forms_batches) throw new Error(`the batch walker needs a run admitted between passes, got ${r.policy}`);
    this.view = view;
    this.run = r;
    this.cfg = cfg;
    this.bs = cfg.block_size;
    this.prompt = view.prompt.map(_bPrompt);
    this.starting = new Map();  // step -> the requests admitted then, in request order
    for (let i = 0; i < n; i++) {
      if (!this.starting.has(r.start[i])) this.starting.set(r.start[i], []);
      this.starting.get(r.start[i]).push(i);
    }
    // step_batch.pool_size: any `slots` requests at their longest.
    let need = n ? 0 : 1;
    for (let i = 0; i < n; i++) need = Math.max(need, Math.ceil((this.prompt[i] + view.output[i]) / this.bs));
    this.busySlots = Math.min(r.slots, Math.max(n, 1));  // no more slots than requests can be busy
    this.poolSize = this.busySlots * need;
    this.tokens = new Int32Array(n);  // a running request's prompt plus generated tokens
    this.computed = new Int32Array(n);  // of those, the ones whose KV a pass already computed
    this.reset();
  }

  reset() {
    this.free = Array.from({ length: this.poolSize }, (_, k) => k);  // a deque: popped at `head`, pushed at the end
    this.head = 0;
    this.owner = new Int32Array(this.poolSize).fill(-1);
    this.tables = new Map();  // running request -> its block table
    this.active = [];  // running requests in slot order: batch row k is active[k]
    this.step = -1;  // the step whose batch is built and not yet run
  }

  /** Move to `t`: admissions done and blocks grown, the forward pass not yet run. */
  at(t) {
    if (t < 0) throw new Error(`step must be >= 0, got ${t}`);
    if (t < this.step) this.reset();
    while (this.step < t) {
      if (this.step >= 0) this.runPass(this.step);
      this.step++;
      this.admit(this.step);
    }
    return this;
  }

  grow(i) {
    const table = this.tables.get(i);
    for (let k = Math.ceil(this.tokens[i] / this.bs) - table.length; k > 0; k--) {
      if (this.head >= this.free.length) throw new Error(`no free block for ${this.view.ids[i]}`);
      const block = this.free[this.head++];
      this.owner[block] = i;
      table.push(block);
    }
    if (this.head > 1024 && this.head * 2 > this.free.length) {  // keep the deque's dead prefix small
      this.free = this.free.slice(this.head);
      this.head = 0;
    }
  }

  admit(t) {
    const slot = this.run.slot;
    for (const i of this.starting.get(t) ?? []) {  // newcomers take their prompt's blocks first, in request order
      this.tokens[i] = this.prompt[i];
      this.computed[i] = 0;
      this.tables.set(i, []);
      this.grow(i);
      this.active.push(i);
    }
    this.active.sort((a, b) => slot[a] - slot[b]);
    for (const i of this.active) this.grow(i);  // then a decode step may spill into a fresh block, in slot order
  }

  runPass(t) {
    const finish = this.run.finish;
    for (const i of this.active) {
      this.computed[i] = this.tokens[i];
      this.tokens[i]++;
    }
    for (const i of this.active) {
      if (finish[i] !== t + 1) continue;
      for (const block of this.tables.get(i)) {  // its blocks go back to the pool; nobody else's move
        this.owner[block] = -1;
        this.free.push(block);
      }
      this.tables.delete(i);
    }
    this.active = this.active.filter((i) => finish[i] !== t + 1);
  }

  tokenId(i, p) {
    const f = this.cfg.token_id;
    return (i * f.request + p * f.position + f.offset) % f.vocab;
  }
}

/** Return a walker over `view`'s continuous run; `config` is the renderer's config (its `batch` part is read). */
export function batchWalker(view, config, policy = "continuous") {
  return new _bWalker(view, config.batch, view.runs[policy]);
}

// chapter._code_block for build_batch: its source lines, the marked ones with what they produced at this step.
function _bSource(cfg, t, notes) {
  const src = cfg.source;
  const rows = src.lines.map((line, k) => {
    const mark = notes ? src.marks[k] : null;
    const note = mark && notes[mark] !== undefined
      ? `<span class="bv-note" data-note="${mark}">${escape(notes[mark])}</span>` : "";
    return `<div class="bv-src-line${mark ? " bv-marked" : ""}"${mark ? ` data-mark="${mark}"` : ""}>` +
      `${escape(line)}${note}</div>`;
  }).join("");
  const when = notes ? `as it ran at step ${t}` : `not run at step ${t}: nobody is running`;
  return `<div class="bv-source" data-code="build_batch"><div class="bv-loop-title">core/batch/ragged.py: build_batch, ` +
    `${when}</div>${rows}</div>`;
}

// batch_view.continuous_html + chapter.build_batch_at, from the walker standing at step t.
function _bContinuous(view, w, t) {
  const cfg = w.cfg, r = w.run, active = w.active, rows = active.length;
  if (!rows) {
    const body = '<p class="bv-batch-empty">Nobody is running at this step: the slots are idle' +
      (t >= r.drain ? `, everything finished by step ${r.drain}.` : ".") + " Move the cursor back to see a batch.</p>";
    return `<section class="bv-batch" data-policy="${r.policy}" data-step="${t}" data-cu-seqlens="0">` +
      `<div class="bv-batch-title">${_bTitle(r)}, step ${t}: no batch</div>${body}</section>` + _bSource(cfg, t, null);
  }
  const limit = Math.max(cfg.list_limit, cfg.note_limit) + 1;
  const cu = [0], positions = [], tokenIds = [], color = new Map();
  const colors = cfg.row_colors;
  active.forEach((i, row) => {
    cu.push(cu[row] + w.tokens[i] - w.computed[i]);
    color.set(i, colors[row % colors.length]);
    for (let p = w.computed[i]; p < w.tokens[i] && positions.length < limit; p++) {  // only what the lists show
      positions.push(p);
      tokenIds.push(w.tokenId(i, p));
    }
  });
  const total = cu[rows];
  const name = (i) => escape(view.ids[i]);
  let segments = "", tables = "";
  for (let row = 0; row < Math.min(rows, cfg.max_rows); row++) {
    const i = active[row], lo = w.computed[i], hi = w.tokens[i], who = name(i);
    const kind = r.start[i] === t ? "prefill" : "decode";
    const pos = [], ids = [];
    for (let p = lo; p < hi; p++) { pos.push(p); ids.push(w.tokenId(i, p)); }
    const blocks = w.tables.get(i);
    segments += `<span class="bv-seg bv-${kind}" data-req="${who}" data-row="${row}" data-positions="${pos.join(",")}" ` +
      `data-token-ids="${ids.join(",")}" style="--bv-row:${color.get(i)}" ` +
      `title="${who}: ${kind}, positions ${lo}-${hi - 1}">` +
      `<span class="bv-cu">${cu[row]}</span><span class="bv-seg-name">${who} ${kind}</span>` +
      `<span class="bv-seg-cells">${_bCells(lo, hi, cfg.max_cells)}</span></span>`;
    tables += `<div class="bv-table-row" data-req="${who}" data-blocks="${blocks.join(",")}" ` +
      `style="--bv-row:${color.get(i)}"><span class="bv-seg-name">${who}</span> ${hi} tokens in ` +
      `${_bCount(blocks.length, "block")}: <span class="bv-blocks">${_bCompact(blocks)}</span></div>`;
  }
  if (rows > cfg.max_rows) segments += `<span class="bv-more-rows">… ${rows - cfg.max_rows} more rows</span>`;
  segments += `<span class="bv-cu bv-cu-end">${total}</span>`;
  let pool = "";
  for (let k = 0; k < Math.min(w.poolSize, cfg.max_pool); k++) {
    const o = w.owner[k];
    pool += o >= 0
      ? `<span class="bv-block" data-block="${k}" data-req="${name(o)}" style="--bv-row:${color.get(o) ?? "None"}" ` +
        `title="block ${k}: ${name(o)}"></span>`
      : `<span class="bv-block bv-free" data-block="${k}" title="block ${k}: free"></span>`;
  }
  const free = w.free.length - w.head;  // every block is either on the free list or owned
  const arrays = '<table class="bv-arrays">' +
    `<tr><th>cu_seqlens</th><td data-array="cu_seqlens">${cu.join(" ")}</td></tr>` +
    `<tr><th>positions</th><td>${_bCompactList(positions, total, cfg.list_limit)}</td></tr>` +
    `<tr><th>token_ids</th><td>${_bCompactList(tokenIds, total, cfg.list_limit)}</td></tr></table>`;
  const notes = {
    token_ids: `  ← ${plural(total, "new token")} from ${plural(rows, "request")}, end to end`,
    positions: `  ← positions ${_bShort(positions, total, cfg.note_limit)}`,
    cu_seqlens: `  ← cu_seqlens ${_bShort(cu, cu.length, cfg.note_limit)}`,
  };
  return `<section class="bv-batch" data-policy="${r.policy}" data-step="${t}" data-cu-seqlens="${cu.join(",")}">` +
    `<div class="bv-batch-title">${_bTitle(r)}, step ${t}: one ragged batch of ${plural(rows, "row")}, ` +
    `${plural(total, "token")}, no padding</div><div class="bv-flat">${segments}</div>${arrays}` +
    `<div class="bv-subtitle">Block tables (KV blocks of ${cfg.block_size} tokens; a request only ever adds ` +
    `blocks; nobody else's blocks move)</div>${tables}` +
    `<div class="bv-subtitle">This view's own KV block pool: ${w.poolSize} blocks, enough for the ` +
    `longest request in ${w.busySlots === 1 ? "the one slot" : `each of the ${w.busySlots} slots`} that can be busy ` +
    `at once (${free} free; the ` +
    "simulator's pool above is the KV strip's)</div>" +
    `<div class="bv-pool">${pool}</div></section>` + _bSource(cfg, t, notes);
}

// batch_view.static_html of step_batch.static_step: every member of the running batch a row, finished ones padding.
function _bStatic(view, cfg, t, r) {
  const members = [];
  for (let i = 0; i < r.start.length; i++) if (r.start[i] <= t && t < r.release[i]) members.push(i);
  if (!members.length) {
    return `<section class="bv-batch" data-policy="${r.policy}" data-step="${t}" data-rows="0" data-useful-rows="0">` +
      `<div class="bv-batch-title">${_bTitle(r)}, step ${t}: no batch is running</div>` +
      '<p class="bv-batch-empty">The slots are idle until the next batch forms.</p></section>';
  }
  members.sort((a, b) => r.slot[a] - r.slot[b]);
  const first = r.start[members[0]] === t;
  const width = first ? Math.max(...members.map((i) => _bPrompt(view.prompt[i]))) : 1;
  let usefulRows = 0, useful = 0, rows = "";
  members.forEach((i, k) => {
    const alive = t < r.finish[i], n = first ? _bPrompt(view.prompt[i]) : 1;
    if (alive) { usefulRows++; useful += n; }
    if (k >= cfg.max_rows) return;
    const pad = width - n;
    let cells;
    if (!alive) cells = '<span class="bv-cell bv-padrow">padding</span>';
    else if (width <= cfg.max_cells) {
      cells = '<span class="bv-cell bv-leftpad"></span>'.repeat(pad) + '<span class="bv-cell bv-tok"></span>'.repeat(n);
    } else {
      cells = (pad ? `<span class="bv-cell bv-leftpad bv-wide">${pad} pad</span>` : "") +
        `<span class="bv-cell bv-tok bv-wide">${n} tokens</span>`;
    }
    const who = escape(view.ids[i]);
    rows += `<div class="bv-rect-row" data-req="${who}" data-live="${alive ? 1 : 0}">` +
      `<span class="bv-seg-name">${who}</span>${cells}</div>`;
  });
  const count = members.length, computed = count * width;
  const what = width > 1 || first ? "the prompts, lined up on the right with pad tokens before the shorter ones" :
    "one token per row";
  return `<section class="bv-batch" data-policy="${r.policy}" data-step="${t}" data-rows="${count}" ` +
    `data-useful-rows="${usefulRows}" data-computed="${computed}" data-useful="${useful}">` +
    `<div class="bv-batch-title">${_bTitle(r)}, step ${t}: a padded rectangle of ${plural(count, "row")} x ${width} ` +
    `(${what})</div><div class="bv-rect">${rows}</div>` +
    `<p class="bv-rect-sum">${usefulRows} of ${plural(count, "row")} did useful work; ` +
    `${plural(computed, "token")} computed, ${useful} useful.</p></section>`;
}

const _bWalkers = new WeakMap();  // a run -> its walker, so playback steps forward, not from 0
const _bTitle = (r) => r.traits.label.charAt(0).toUpperCase() + r.traits.label.slice(1);  // batch_view._title

/**
 * Return both batches at step t (clamped to the window), the mode shown first: app/batch_view.py's
 * BatchView.html() for the same runs. `config` is the renderer's config; its `batch` part is batch_config().
 */
export function batchHtml(view, config, mode, t) {
  const cfg = config.batch;
  if (view.clock === "ms") return cfg.clock_html;
  const step = Math.max(0, Math.min(t, view.window - 1));
  if (view.pool) return _bPools(view, cfg, mode, step);  // the engine's pool: these block tables never run short
  const one = (r) => {  // a padded rectangle for a batch policy, else the ragged batch
    if (r.traits.forms_batches) return _bStatic(view, cfg, step, r);
    let w = _bWalkers.get(r);
    if (!w) _bWalkers.set(r, (w = new _bWalker(view, cfg, r)));
    if (w.last?.step !== step) w.last = { step, html: _bContinuous(view, w.at(step), step) };
    return w.last.html;
  };
  const shown = [mode, view.runs[mode].traits.versus];  // the mode shown first, then the one it is compared with
  return `<div class="bv-batches" data-batch-step="${step}">${shown.map((p) => one(view.runs[p])).join("")}</div>`;
}

// app/simulator/pool_at.py's pool_html: on a limited pool, each block's owner at the cursor, for one mode.
function _bPool(view, cfg, r, step) {
  const key = r.traits.forms_batches ? "static" : view.allocation, pool = view.pool;  // a batch reserves rows
  const head = `<div class="bv-batch-title">${cfg.pool.titles[key]}: the KV pool at step ${step}</div>`;
  if (!r.pool_at) return `<section class="bv-batch" data-kvpool="${key}">${head}${cfg.pool.too_big}</section>`;
  const at = step < r.drain ? r.pool_at.slice(step * pool, (step + 1) * pool) : new Array(pool).fill(-1);
  let free = 0, run = 0, longest = 0;
  const boxes = at.map((o, b) => {
    if (o < 0) { free++; longest = Math.max(longest, ++run); }
    else run = 0;
    return o >= 0 ? `<span class="bv-kvblock" title="block ${b}: ${escape(view.ids[o])}">${escape(view.ids[o])}</span>` :
      `<span class="bv-kvblock bv-kvfree" title="block ${b}: free"></span>`;
  }).join("");
  let words = `${pool - free} of ${pool} blocks held, ${free} free`;
  if (key !== "paged" && free) words += `, the longest free run ${longest}`;
  return `<section class="bv-batch" data-kvpool="${key}">${head}<div class="bv-kvpool" role="img" ` +
    `aria-label="${words}">${boxes}</div><p class="bv-muted">${words}</p></section>`;
}

function _bPools(view, cfg, mode, step) {
  const order = [mode, view.runs[mode].traits.versus];  // the mode shown first, then the one it is compared with
  const parts = order.map((m) => _bPool(view, cfg, view.runs[m], step)).join("");
  return `<div class="bv-batches" data-batch-step="${step}" data-pool-step="${step}"><p class="bv-muted">On a ` +
    "limited KV pool memory decides who runs: here is each block's owner at the cursor (the ragged batch's " +
    `own block tables assume a pool that never runs out; set the pool to 0 to see them).</p>${parts}</div>`;
}
