// The chapter's widget: its controls and player (app/web/widget_controls.js), both timelines (app/web/renderer.js)
// and the texts at the cursor, drawn from a run's flat arrays at any step, in a frame. The served page
// (app/simulator/widget.py) and the exported page (app/export/page.py) both mount it through app/web/host.js; the
// server only computes runs. Every text it writes equals its Python oracle's (tests/oracles/; tests/test_node_parity.py
// and tests/browser/test_renderer.py).
import { batchHtml } from "./batch.js";
import { contiguousNote, h2hCompactHtml, sameRunNote, timeoutNote } from "./compare_texts.js";
import { clockLoopHtml, loopHtml } from "./loop_texts.js";
import { clockPlaybackHtml, playbackHtml } from "./playback_texts.js";
import { timesOf } from "./run_cells.js";
import { PAUSE, PLAY, playerControls, settingsControls, widgetPanes } from "./widget_controls.js";
import { escape, fixed, thousands } from "./words.js";

// The widget's parts: `w` its state (returned by mountWidget, read by hosts and tests), `ui` what mountWidget built
// (root, host, cfg, and the controls' and panes' elements).
const versusOf = (w) => w.view.runs[w.settings.mode].traits.versus;  // drawn beneath: the run it is compared with

/** Show request i's times in the tooltip beside the mouse event `e` over timeline `tl`. */
function showTip(w, ui, tl, e) {
  const i = tl.hit(e), tip = ui.tip;
  if (i === null || !w.view) { tip.hidden = true; return; }
  const v = w.view, r = v.runs[tl.canvas.dataset.timeline === "timeline" ? w.settings.mode : versusOf(w)];
  const f = (x) => (v.clock === "ms" ? fixed(x, 1) : String(x));
  const [st, fi] = v.clock === "ms" ? [r.start_ms[i], r.finish_ms[i]] : [r.start[i], r.finish[i]];
  const arr = v.clock === "ms" ? v.arrival_ms[i] : v.arrival[i], unit = v.clock === "ms" ? "ms" : "steps";
  tip.innerHTML = `<b>request ${escape(v.ids[i])}</b><br>arrival ${f(arr)}<br>start ${f(st)}<br>finish ${f(fi)}` +
    `<br>latency ${f(fi - arr)} ${unit}<br>wait ${f(st - arr)} ${unit}`;
  const box = ui.root.getBoundingClientRect();
  tip.style.left = `${e.clientX - box.left + 12}px`;
  tip.style.top = `${e.clientY - box.top + 12}px`;
  tip.hidden = false;
}

/** Draw the step: both timelines to the cursor, the texts under the player, the loop and the batch at the cursor. */
function paintWidget(w, ui) {
  const v = w.view, { cfg, host, root } = ui;
  if (!v) return;
  const t = Math.max(0, Math.min(w.step, w.last()));
  const mode = w.settings.mode, onClock = v.clock === "ms";
  const cursor = onClock ? timesOf(v, mode)[t] : t + 1;
  const mark = onClock ? [`t = ${thousands(cursor, 1)} ms`, cursor] : [`step ${t}`, t + 0.5];
  const [upper, lower] = ui.timelines;
  upper.draw(v, mode, cursor, w.hover, mark);
  lower.host.hidden = false;
  lower.canvas.hidden = !v.both;
  if (v.both) lower.draw(v, versusOf(w), cursor, w.hover, mark, mode);
  ui.panel.innerHTML = onClock ? clockPlaybackHtml(v, mode, t) : playbackHtml(v, mode, t);
  host.onLoop?.(onClock ? clockLoopHtml(v, mode, t) : loopHtml(v, mode, t), t);
  if (host.onBatch && cfg.batch) {  // the batch at the cursor (app/web/batch.js), where the page shows it
    const batch = batchHtml(v, cfg, mode, t);
    if (batch !== w.lastBatch) { w.lastBatch = batch; host.onBatch(batch, t); }
  }
  w.paints++;
  w.paintedStep = t;
  root.dataset.paints = String(w.paints);
  root.dataset.step = String(t);
  root.dataset.key = v.key;
  window.__bvPaints = (window.__bvPaints || 0) + 1;
  window.__bvPainted = performance.now();
  window.__bvOnPaint?.(t);  // a benchmark's hook: it marks the frame this paint reaches the screen in
}

/** Show what follows the settings and the view, not the step: the controls, the table, caption and legend. */
function showSettings(w, ui) {
  const s = w.settings, v = w.view, cfg = ui.cfg;
  for (const b of ui.modeButtons) {
    const on = b.dataset.mode === s.mode;
    b.setAttribute("aria-checked", String(on));
    b.classList.toggle("bv-on", on);
  }
  ui.slots.input.max = String(v.slots_end);
  ui.slots.input.value = String(s.slots);
  ui.slots.out.textContent = String(s.slots);
  ui.seed.input.value = String(s.seed);
  ui.seed.out.textContent = String(s.seed);
  ui.seed.box.hidden = !v.generator;
  ui.traffic.textContent = v.traffic_label ?? "";
  ui.stepInput.max = String(w.last());
  ui.stepInput.value = String(Math.min(w.step, w.last()));
  ui.compact.innerHTML = h2hCompactHtml(v, s.mode);
  ui.host.onView?.(v, s);  // the page around the widget: what follows the view, not the step
  ui.caption.textContent = (v.pool && cfg.captions_memory ? cfg.captions_memory : cfg.captions)[s.mode] +
    sameRunNote(v, s.mode) + timeoutNote(v, s.mode) + contiguousNote(v, s.mode);
  const memoryLegend = Boolean(v.pool && cfg.legend_memory);
  if (ui.legend.dataset.memory !== String(memoryLegend)) {
    ui.legend.dataset.memory = String(memoryLegend);
    ui.legend.innerHTML = cfg.legend + (memoryLegend ? cfg.legend_memory : "");
  }
}

function showView(w, ui, view, settings) {
  w.view = view;
  w.settings = settings;
  showSettings(w, ui);
  paintWidget(w, ui);
}

// ---- playback ---------------------------------------------------------------------------------------------------
function goTo(w, ui, t, final) {
  w.step = Math.max(0, Math.min(t, w.last()));
  ui.stepInput.value = String(w.step);
  paintWidget(w, ui);
  ui.host.onStep(w.step, final);
}

function startPlay(w, ui) {
  if (w.step >= w.last()) goTo(w, ui, 0, false);
  ui.playButton.textContent = PAUSE;
  const every = window.__bvInterval ?? Number(ui.speed.value);  // a benchmark may ask for another frame interval
  w.timer = setInterval(() => { if (w.step >= w.last()) stopPlay(w, ui); else goTo(w, ui, w.step + 1, false); }, every);
}

function stopPlay(w, ui) {
  if (!w.timer) return;
  clearInterval(w.timer);
  w.timer = null;
  ui.playButton.textContent = PLAY;
  ui.host.onStep(w.step, true);
}

// ---- settings ---------------------------------------------------------------------------------------------------
// A settings change draws at once from a view already known (a neighbour the server sent ahead, or the export's
// table); the server's answer then confirms it, and an answer for settings no longer asked for is dropped.
function changeSettings(w, ui, delta) {
  const settings = { ...w.settings, ...delta };
  if (settings.mode === w.settings.mode && settings.slots === w.settings.slots && settings.seed === w.settings.seed) {
    return;
  }
  const onlyMode = settings.slots === w.settings.slots && settings.seed === w.settings.seed;
  const known = onlyMode ? w.view : ui.host.lookup(settings);
  if (known) showView(w, ui, known, settings);
  else { w.settings = settings; showSettings(w, ui); }
  ui.host.settle(settings);
}

function confirmView(w, ui, view, settings, step) {
  if (step !== undefined && !w.timer) w.step = step;
  if (w.view && w.view.key === view.key && w.settings.mode === settings.mode && w.paintedStep === w.step) {
    w.settings = settings;  // drawn ahead already: nothing to repaint (the drawn view object is kept)
    showSettings(w, ui);
    return;
  }
  showView(w, ui, view, settings);
}

/**
 * Mount the chapter's widget in `root`. `host` connects it to its data:
 *   config: constants (colours, loops, captions, legend);  lookup(settings) -> a view, or null when not known yet;
 *   settle(settings): ask for the view of these settings (the server computes it and calls widget.confirm);
 *   onStep(t, final): the step moved (the server's copy follows; `final` when playback stopped or a click moved it).
 */
export function mountWidget(root, host) {
  const cfg = host.config;
  const w = {
    view: null, settings: null, step: 0, hover: null, timer: null, pending: null, paints: 0,
    last() { return this.view ? this.view.window - 1 : 0; },
  };
  root.classList.add("bv-widget-root");
  const onHover = (i) => {
    if (i === w.hover) return;
    w.hover = i;
    paintWidget(w, ui);
    host.onHover?.(i === null ? null : w.view.ids[i]);
  };
  const ui = {
    root, host, cfg,
    ...settingsControls(cfg, (delta) => changeSettings(w, ui, delta)),
    ...playerControls(cfg, {
      toggle: () => (w.timer ? stopPlay(w, ui) : startPlay(w, ui)),
      move: (target) => { stopPlay(w, ui); goTo(w, ui, target(w), true); },
      drag: (t) => { stopPlay(w, ui); goTo(w, ui, t, false); },
      dragged: () => host.onStep(w.step, true),
      speed: () => { if (w.timer) { clearInterval(w.timer); w.timer = null; startPlay(w, ui); } },
    }),
    ...widgetPanes(cfg, onHover),
  };
  for (const tl of ui.timelines) {
    tl.canvas.addEventListener("mousemove", (e) => showTip(w, ui, tl, e));
    tl.canvas.addEventListener("mouseleave", () => (ui.tip.hidden = true));
  }
  root.append(ui.controls, ui.player, ui.status, ui.plots, ui.tip, ui.legend, ui.caption);
  new ResizeObserver(() => paintWidget(w, ui)).observe(ui.plots);

  w.confirm = (view, settings, step) => confirmView(w, ui, view, settings, step);
  w.setStep = (t) => {
    if (!w.timer && t !== w.step) { w.step = t; ui.stepInput.value = String(t); paintWidget(w, ui); }
  };
  w.timelines = ui.timelines;
  w.start = () => startPlay(w, ui);
  w.stop = () => stopPlay(w, ui);
  w.paint = () => paintWidget(w, ui);
  return w;
}
