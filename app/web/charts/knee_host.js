// Exercise 1's figures on the served page (app/exercises/knee_plots.py's KneeCharts): the sweep's columns from the
// server, the knees found and the three charts drawn here, at the width the column has.
import { chartSvg } from "./chart.js";
import { kneeSpecs } from "./knee_charts.js";

/** Return the three charts' SVG for a payload, `width` pixels wide ("" before the first sweep arrives). */
export function kneeChartsHtml(payload, width) {
  if (!payload.points) return "";
  const { points, target, revealed, measured } = payload;
  return kneeSpecs(points, target, revealed, measured).map((s) => chartSvg(s, width)).join("");
}

export function render({ model, el }) {
  const box = document.createElement("div");
  box.className = "bv-knee-charts";
  el.append(box);
  let width = 0;
  const draw = () => {
    width = box.clientWidth || 640;
    box.innerHTML = kneeChartsHtml(JSON.parse(model.payload), width);
  };
  draw();
  model.on("payload", draw);
  new ResizeObserver(() => { if (box.clientWidth && box.clientWidth !== width) draw(); }).observe(box);
}
