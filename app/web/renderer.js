// batchviz's renderer: a run's slot timeline drawn on a canvas from its flat arrays, revealed to any cursor, in well
// under a frame (what a run's arrays mean as cells and clock times is app/web/run_cells.js, the texts read it too). The widget
// (app/web/widget.js) and the Schedulers tab's lineups (app/web/tabs/lineup_host.js, export_lineup.js) draw with it; the
// pixel tests read where it drew (tests/browser/test_timeline_pixels.py).
import { cellsOf, chunks, clockEnd, codes, shownPair } from "./run_cells.js";
import { fixed, plural, thousands } from "./words.js";

// ---- the slot timeline's geometry -------------------------------------------------------------------------------
const MARGIN = { left: 56, right: 16, top: 38, bottom: 40 };
const LABEL_INSET = 4;  // px between a bar's left edge and its letter on a clock: the hover outline is 3 px wide
export const rowPx = (slots) => (slots <= 8 ? 30 : 22);
export const frameHeight = (slots) => (slots <= 8 ? Math.max(30 * slots, 60) : 22 * slots);

/** Return "nice" tick positions over [0, end]: steps of 1, 2 or 5 times a power of ten, about `target` of them. */
export function niceTicks(end, target = 7) {
  if (!(end > 0)) return [0];
  const raw = end / target, power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const ticks = [];
  for (let x = 0; x <= end + 1e-9; x += step) ticks.push(Math.round(x / step) * step);
  return ticks;
}

/**
 * The rectangles a run draws over [0, end): generating, padding, recomputing and paused, each [left, right, slot,
 * request]. On a clock a run may bring its cells in milliseconds (`cells_ms`: the schedulers' lineup).
 */
export function intervals(view, policy) {
  const r = view.runs[policy], W = view.clock === "ms" ? Infinity : view.window;
  const start = r.start_ms ?? r.start, finish = r.finish_ms ?? r.finish, release = r.release_ms ?? r.release;
  const gen = [], pad = [], rec = [], paused = [];
  const cells = view.clock === "ms" ? (r.cells_ms ? (r._cells_ms ??= chunks(r.cells_ms, 5)) : null)
    : r.cells ? cellsOf(r) : null;
  if (cells) {  // preempted, chunked or paused: its cells, recompute and paused passes their own states
    const [GEN, PAD, REC, PRE] = codes(r);
    const into = { [GEN]: gen, [PAD]: pad, [REC]: rec, [PRE]: gen, [r.states.paused]: paused };
    for (const [i, slot, lo, hi, state] of cells) if (lo < W) into[state].push([lo, Math.min(hi, W), slot, i]);
    return { gen, pad, rec, paused };
  }
  for (let i = 0; i < start.length; i++) {
    if (start[i] < W) gen.push([start[i], Math.min(finish[i], W), r.slot[i], i]);
    if (release[i] > finish[i] && finish[i] < W) pad.push([finish[i], Math.min(release[i], W), r.slot[i], i]);
  }
  return { gen, pad, rec, paused };
}

const KV = { gap: 8, bars: 26, text: 16 };  // the KV strip under a timeline: gap above, bars, its words
/** Return the KV strip's scale in blocks: the pool, or on an unlimited pool the larger peak of the two runs shown. */
function kvScale(view, pair) {
  if (view.pool) return view.pool;
  let peak = 1;
  for (const p of pair) peak = Math.max(peak, view.runs[p].kv_peak ?? 0);  // over the whole run, not the window
  return peak;
}

// ---- the slot timeline, on a canvas -----------------------------------------------------------------------------
export class Timeline {
  /** One policy's timeline in `host`: a canvas sized to the host's width, redrawn whole in well under a frame. */
  constructor(host, name, colours, onHover) {
    this.host = host;
    this.colours = colours;
    this.canvas = document.createElement("canvas");
    this.canvas.dataset.timeline = name;
    this.canvas.setAttribute("role", "img");
    this.canvas.style.display = "block";
    host.appendChild(this.canvas);
    this.onHover = onHover;
    this.hover = null;
    this.canvas.addEventListener("mousemove", (e) => this.onHover(this.hit(e)));
    this.canvas.addEventListener("mouseleave", () => this.onHover(null));
  }

  /** Return the request index under a mouse event, or null. */
  hit(e) {
    if (!this.geom) return null;
    const box = this.canvas.getBoundingClientRect(), x = e.clientX - box.left, y = e.clientY - box.top;
    for (const [lo, hi, slot, i] of this.geom.gen.concat(this.geom.rec)) {
      const [x0, x1] = [this.x(lo), this.x(hi)], [y0, y1] = [this.y(slot), this.y(slot + 1)];
      if (x >= x0 && x < x1 && y >= y0 && y < y1) return i;
    }
    return null;
  }

  x(v) { return MARGIN.left + (v / this.end) * this.frameW; }
  y(s) { return MARGIN.top + s * this.rowH; }
  // Rectangles are drawn on whole pixels: crisp edges, each within half a pixel of its time.
  px(v) { return Math.round(this.x(v)); }
  py(s) { return Math.round(this.y(s)); }
  /** Return cell [lo, hi) on `slot` in whole pixels: [left, right, top, height]. */
  box(lo, hi, slot) {
    return [this.px(lo), this.px(hi), this.py(slot), this.py(slot + 1) - this.py(slot)];
  }

  /** Return the page coordinates of cell (slot, t)'s centre: how the pixel tests find each cell. */
  cellCentre(slot, t) {
    return this.pagePoint(t + 0.5, slot + 0.5);
  }

  /** Return the page coordinates of a point on the timeline's axes (x in steps or ms, y in slots from the top). */
  pagePoint(x, y) {
    const box = this.canvas.getBoundingClientRect();
    return [box.left + this.x(x), box.top + this.y(y)];
  }

  /**
   * Draw `policy`'s run of `view`, revealed up to `cursor` (x units: steps, or ms on a clock), `mark` above it; the
   * axis and the KV scale are those of `mode`'s pair (the mode shown, which is `policy` on the upper timeline).
   */
  draw(view, policy, cursor, hover, mark, mode = policy) {
    const r = view.runs[policy], slots = r.slots, onClock = view.clock === "ms";
    this.end = onClock ? clockEnd(view, mode) : view.window;
    this.pair = shownPair(view, mode);
    const kv = !onClock && r.kv ? r.kv : null;  // blocks held per step (the memory engine's runs, on steps)
    const g = this.resize(slots, kv);
    this.geom = intervals(view, policy);
    // The policy's own label (a lineup's entry brings its settings in its own title).
    // A batch policy's timeout decides how its batches form, so its timeline says it (0: never waits to fill).
    const timeout = r.traits.has_timeout
      ? ` · batch timeout ${plural(view.timeout ?? 0, "step")}${onClock ? " of time" : ""}` : "";
    const title = r.title ?? `${r.traits.label} batching${timeout}${onClock ? ", on a clock" : ""}`;
    this.canvas.setAttribute("aria-label", `${title}: ${slots} slots over ${onClock ? fixed(this.end, 1) + " ms" :
      this.end + " steps"}`);
    const x0 = this.px(0), x1 = this.px(this.end);
    g.fillStyle = this.colours.idle;
    g.fillRect(x0, this.y(0), x1 - x0, this.frameH);
    this.drawPadding(g);
    const fontPx = slots <= 8 ? 12 : 9;
    g.font = `${fontPx}px system-ui, sans-serif`;
    g.textBaseline = "top";
    const labels = this.drawGenerating(g, view, onClock);
    this.drawPaused(g);
    this.drawRecompute(g, view, onClock, fontPx);
    this.drawWaits(g, onClock ? [] : r.waits ?? [], cursor, fontPx);
    this.drawHover(g, hover);
    this.drawLabels(g, labels, fontPx);  // over every cell: no paused sliver or outline drawn later covers a letter
    this.drawCursor(g, cursor, x1);
    this.drawAxes(g, title, mark, slots, onClock, x0, x1);
    if (kv) this.drawKV(view, r, kv, cursor, this.y(0) + this.frameH + MARGIN.bottom + KV.gap, x0, x1);
  }

  /** Size the canvas to its host's width and `slots` rows (and a KV strip); return its context, cleared. */
  resize(slots, kv) {
    const width = Math.max(this.host.clientWidth || 320, 240), frameH = frameHeight(slots);
    const height = MARGIN.top + frameH + MARGIN.bottom + (kv ? KV.gap + KV.bars + KV.text : 0);
    const dpr = window.devicePixelRatio || 1;
    if (this.canvas.width !== Math.round(width * dpr) || this.canvas.height !== Math.round(height * dpr)) {
      this.canvas.width = Math.round(width * dpr);
      this.canvas.height = Math.round(height * dpr);
      this.canvas.style.width = `${width}px`;
      this.canvas.style.height = `${height}px`;
    }
    this.frameW = width - MARGIN.left - MARGIN.right;
    this.frameH = frameH;
    this.rowH = frameH / slots;
    const g = this.canvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = this.colours.background;
    g.fillRect(0, 0, width, height);
    return g;
  }

  /** Draw the padding cells: a finished request's slot held to its batch's end, hatched. */
  drawPadding(g) {
    const c = this.colours;
    for (const [lo, hi, slot] of this.geom.pad) {
      const [a, b, top, h] = this.box(lo, hi, slot);
      g.fillStyle = c.padding;
      g.fillRect(a, top, b - a, h);
      g.save();
      g.beginPath();
      g.rect(a, top, b - a, h);
      g.clip();
      g.strokeStyle = c.hatch;
      g.lineWidth = 1;
      g.beginPath();
      for (let k = a - h; k < b; k += 10) { g.moveTo(k, top + h); g.lineTo(k + h, top); }
      g.stroke();
      g.restore();
    }
  }

  /**
   * Draw the generating cells; return each one's letter where it fits, [text, left, top, slot, request], drawn last
   * (a resumed stay's letter is on its R cell).
   */
  drawGenerating(g, view, onClock) {
    // On a clock a letter goes wherever it fits its bar, LABEL_INSET px in (clear of the hover outline) and clear of
    // its right edge; on steps, from the view's cell count.
    const left = (lo) => onClock ? this.px(lo) + LABEL_INSET : this.x(lo + 0.12);
    const fits = (lo, hi, id) => onClock ? left(lo) + g.measureText(id).width + 1 <= this.px(hi)
      : hi - lo >= view.min_label_cells;
    const resumed = new Set(this.geom.rec.map(([, hi, slot, i]) => `${i}:${slot}:${hi}`));  // its letter is on R
    const labels = [];
    for (const [lo, hi, slot, i] of this.geom.gen) {
      const [, , top] = this.fillCell(g, lo, hi, slot, this.colours.generating);
      if (fits(lo, hi, view.ids[i]) && !resumed.has(`${i}:${slot}:${lo}`)) {
        labels.push([view.ids[i], left(lo), top + 0.06 * this.rowH, slot, i]);
      }
    }
    return labels;
  }

  /** Draw the generating cells' letters, left-aligned (drawAxes leaves the alignment centred from the last draw). */
  drawLabels(g, labels, fontPx) {
    g.font = `${fontPx}px system-ui, sans-serif`;
    g.textAlign = "left";
    g.textBaseline = "top";
    g.fillStyle = this.colours.label;
    this.labelFont = g.font;
    this.drawnLabels = labels.map(([text, x, y, slot, i]) => {  // where each letter lies (read by the label tests)
      g.fillText(text, x, y);
      return [text, x, x + g.measureText(text).width, y, slot, i];
    });
  }

  /** Draw the paused cells: held while a pass prefills others' prompts, a dark sliver dotted in the labels' white. */
  drawPaused(g) {
    for (const [lo, hi, slot] of this.geom.paused) {
      const [a, b, top, h] = this.box(lo, hi, slot);
      g.fillStyle = this.colours.paused;  // no white edge: on a clock a pass is a pixel or two, the edge would hide it
      g.fillRect(a, top + 1, Math.max(b - a, 3), h - 2);
      g.fillStyle = this.colours.label;  // blue dots all but vanish on the dark red
      for (let x = a + 2; x < b - 1; x += 4) g.fillRect(x, top + h / 2 - 1, 2, 2);
    }
  }

  /** Draw the cells recomputing after a preemption: yellow, a bold dark letter. */
  drawRecompute(g, view, onClock, fontPx) {
    for (const [lo, hi, slot, i] of this.geom.rec) {
      if (onClock) {  // a pass is a pixel or two on a clock: at least 3 px of yellow, no white edge to hide it
        const [a, , top, h] = this.box(lo, hi, slot);
        g.fillStyle = this.colours.recompute;
        g.fillRect(a, top + 1, Math.max(this.px(hi) - a, 3), h - 2);
        continue;
      }
      const [a, b, top] = this.fillCell(g, lo, hi, slot, this.colours.recompute);
      g.font = `bold ${fontPx}px system-ui, sans-serif`;
      if (g.measureText(view.ids[i]).width + 2 <= b - a) {  // a letter only where it fits the cell
        g.fillStyle = "#000000";
        g.fillText(view.ids[i], this.x(lo + 0.12), top + 0.06 * this.rowH);
      }
      g.font = `${fontPx}px system-ui, sans-serif`;
    }
  }

  /**
   * Draw the waits played so far: a slot empty while the next request waits for memory, a dashed edge and a ⊘ where
   * the letters go (the cell's centre keeps its idle colour, which the pixel tests read). `waits`: [step, slot] pairs.
   */
  drawWaits(g, waits, cursor, fontPx) {
    const c = this.colours;
    this.drawnWaits = 0;
    g.font = `${Math.min(fontPx, 10)}px system-ui, sans-serif`;
    for (let k = 0; k < waits.length; k += 2) {
      const t = waits[k], slot = waits[k + 1];
      if (t >= Math.min(this.end, cursor)) continue;
      const [a, b, top, h] = this.box(t, t + 1, slot);
      g.strokeStyle = c.text;
      g.lineWidth = 1;
      g.setLineDash([2, 2]);
      g.strokeRect(a + 1.5, top + 1.5, Math.max(b - a - 3, 0), h - 3);
      g.setLineDash([]);
      if (b - a >= 8) { g.fillStyle = c.text; g.fillText("⊘", a + 2, top + 2); }
      this.drawnWaits++;
    }
    g.font = `${fontPx}px system-ui, sans-serif`;
  }

  /** Outline request `hover`'s cells (none when it is null). */
  drawHover(g, hover) {
    this.drawnHover = hover ?? null;  // the request outlined in this drawing (read by the hover tests)
    if (hover === null || hover === undefined) return;
    g.strokeStyle = this.colours.highlight;
    g.lineWidth = 3;
    for (const [lo, hi, slot, i] of this.geom.gen.concat(this.geom.rec)) {
      if (i === hover) g.strokeRect(this.px(lo) + 1.5, this.py(slot) + 1.5, this.px(hi) - this.px(lo) - 3, this.py(slot + 1) - this.py(slot) - 3);
    }
  }

  /** Draw the curtain over the steps not played yet, and the cursor's dashed line. */
  drawCursor(g, cursor, x1) {
    const c = this.colours, cx = this.px(Math.min(cursor, this.end)), top = this.y(0);
    if (cx < x1) {
      g.fillStyle = c.background;
      g.fillRect(cx, top, x1 - cx, this.frameH);
    }
    g.strokeStyle = c.text;
    g.lineWidth = 2;
    g.setLineDash([6, 4]);
    g.beginPath();
    g.moveTo(cx, top);
    g.lineTo(cx, top + this.frameH);
    g.stroke();
    g.setLineDash([]);
  }

  /** Draw the title, what the cursor stands for (`mark`: [text, x]), the slots' names and the time axis. */
  drawAxes(g, title, mark, slots, onClock, x0, x1) {
    g.fillStyle = this.colours.text;
    g.strokeStyle = this.colours.text;
    g.lineWidth = 1;
    g.font = "600 13px system-ui, sans-serif";
    g.textBaseline = "alphabetic";
    g.textAlign = "left";
    g.fillText(title, MARGIN.left, 15);
    if (mark) {  // what the cursor stands for, over the column it means: "step 20" over step 20's column
      const [text, at] = mark, mx = this.x(Math.min(at, this.end));
      g.font = "600 11px system-ui, sans-serif";
      const half = g.measureText(text).width / 2 + 6;
      g.textAlign = "center";
      g.fillText(`${text} ▾`, Math.min(Math.max(mx, x0 + half), x1 - half), MARGIN.top - 4);
    }
    g.font = "11px system-ui, sans-serif";
    g.textAlign = "right";
    g.textBaseline = "middle";
    for (let s = 0; s < slots; s++) g.fillText(`slot${s}`, MARGIN.left - 6, this.y(s + 0.5));
    const base = this.y(0) + this.frameH;
    g.beginPath();
    g.moveTo(x0, base + 0.5);
    g.lineTo(x1, base + 0.5);
    g.stroke();
    g.textAlign = "center";
    g.textBaseline = "top";
    for (const tick of niceTicks(this.end)) {
      const px = Math.round(this.x(tick)) + 0.5;
      g.beginPath();
      g.moveTo(px, base);
      g.lineTo(px, base + 5);
      g.stroke();
      g.fillText(onClock ? thousands(tick, 0) : String(tick), px, base + 7);
    }
    g.fillText(onClock ? "time (ms)" : "step (one forward pass)", x0 + (x1 - x0) / 2, base + 22);
  }

  /** Fill a request's cell [lo, hi) on `slot` with `colour`, edged in white; return its [left, right, top, height]. */
  fillCell(g, lo, hi, slot, colour) {
    const [a, b, top, h] = this.box(lo, hi, slot);
    g.fillStyle = colour;
    g.fillRect(a, top, b - a, h);
    g.strokeStyle = "#FFFFFF";
    g.lineWidth = 1;
    g.strokeRect(a + 0.5, top + 0.5, Math.max(b - a - 1, 0), h - 1);
    return [a, b, top, h];
  }

  /** Draw the KV strip: the blocks held at each step played, on the pool's scale (or the larger peak's). */
  drawKV(view, r, kv, cursor, top, x0, x1) {
    const g = this.canvas.getContext("2d"), c = this.colours, scale = kvScale(view, this.pair);
    g.fillStyle = c.idle;
    g.fillRect(x0, top, x1 - x0, KV.bars);
    g.fillStyle = c.memory;
    const shown = Math.min(Math.floor(cursor), kv.length, this.end);
    for (let t = 0; t < shown; t++) {
      const h = Math.round((KV.bars * kv[t]) / scale);
      if (h > 0) g.fillRect(this.px(t), top + KV.bars - h, Math.max(this.px(t + 1) - this.px(t), 1), h);
    }
    this.kvTop = top;  // read by the pixel tests
    this.kvScale = scale;
    g.fillStyle = c.text;
    g.font = "11px system-ui, sans-serif";
    g.textAlign = "right";
    g.textBaseline = "middle";
    g.fillText("KV", MARGIN.left - 6, top + KV.bars / 2);
    g.textAlign = "left";
    g.textBaseline = "top";
    const verb = r.traits.forms_batches ? "reserved (whole rows)" : r.reserves ? "reserved (one run each)" : "held";
    const of = view.pool ? `, of a pool of ${view.pool}` +
      (view.pool_asked && view.pool_asked < view.pool ? ` (raised from ${view.pool_asked}: the least this traffic fits)` : "")
      : ` (unlimited pool; full height = ${scale} blocks, the larger peak of the two runs)`;
    const long = `KV blocks ${verb} at each step${of}`;
    const short = `KV blocks ${verb.split(" ")[0]}` + (view.pool ? ` (pool: ${view.pool})` : "");
    g.fillText(g.measureText(long).width <= x1 - x0 ? long : short, x0, top + KV.bars + 3);  // a phone: the short
  }
}
