// A row of the exercises' figures on the served page (app/exercises/charts.py's Charts): chart specs from the
// server, drawn here side by side where the column is wide enough, one under another where it is not.
import { chartSvg } from "./chart.js";

const MIN_WIDTH = 260;  // narrower than this, a chart's axis words crowd: the row wraps instead

/** Return the specs' SVG laid out for a column `width` pixels wide: as many per line as fit, up to all of them. */
export function chartsHtml(specs, width) {
  const perLine = Math.max(1, Math.min(specs.length, Math.floor(width / MIN_WIDTH)));
  const each = Math.floor(width / perLine) - (perLine > 1 ? 8 : 0);
  return `<div class="bv-chart-row">${specs.map((s) => chartSvg(s, each)).join("")}</div>`;
}

export function render({ model, el }) {
  const box = document.createElement("div");
  el.append(box);
  let width = 0;
  const draw = () => {
    width = box.clientWidth || 640;
    box.innerHTML = chartsHtml(JSON.parse(model.payload).specs ?? [], width);
  };
  draw();
  model.on("payload", draw);
  new ResizeObserver(() => { if (box.clientWidth && box.clientWidth !== width) draw(); }).observe(box);
}
