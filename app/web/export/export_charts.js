// The exported page's exercises 2 and 3, the spread and the temperature bug: the served views' texts and figure
// payloads at every sigma and for both samplers, made at export time by app/exercises/ (app/export/exercises.py);
// the figures are drawn by the served page's own row of charts, app/web/charts/charts_host.js.
import { render } from "../charts/charts_host.js";
import { inflate } from "./export_pack.js";
import { checkedIndex, exercisesData, figure } from "./export_figures.js";

/** Exercise 2, as app/exercises/spread.py SpreadView: the guess first; revealed, the ratios, the curve and why. */
function mountSpread(root, S) {
  const part = (name) => root.querySelector(`[data-part=${name}]`);
  const radios = [...root.querySelectorAll("input[name=spread-guess]")], reveal = part("reveal");
  const sigma = root.querySelector("input[name=spread-sigma]");
  const shown = root.querySelector("output[data-value=spread-sigma]");
  const histograms = figure(render, part("histograms")), curve = figure(render, part("curve"));
  const views = inflate(S.at);  // every sigma's payloads and table, in the slider's order
  let revealed = false;
  for (const radio of radios) radio.addEventListener("change", () => { reveal.disabled = revealed; });
  reveal.addEventListener("click", () => {
    const guess = checkedIndex(radios);
    if (guess === null) return;
    revealed = true;
    part("verdict").innerHTML = S.verdicts[guess];
    for (const name of ["verdict", "table", "curve", "why"]) part(name).hidden = false;
    for (const radio of radios) radio.disabled = true;
    reveal.disabled = true;
  });
  let asked = 0;
  async function draw() {
    const n = ++asked, value = Number(sigma.value);
    const k = S.sigmas.findIndex((s) => Math.abs(s - value) < 1e-9);
    const all = await views;
    if (n !== asked || k < 0) return;
    shown.textContent = S.sigmas[k].toFixed(1);
    histograms(all[k].histograms);
    curve(all[k].curve);
    part("table").innerHTML = all[k].table;
    root.dataset.shown = String(S.sigmas[k]);
    root.dataset.ready = "1";
  }
  sigma.addEventListener("input", draw);
  draw();
}

/** Exercise 3, as app/exercises/temperature.py TemperatureView: pick a test and run it, then what the bug does. */
function mountTemperature(root, T) {
  const part = (name) => root.querySelector(`[data-part=${name}]`);
  const radios = [...root.querySelectorAll("input[name=temperature-test]")], run = part("run");
  const bug = root.querySelector("input[name=temperature-bug]");
  const charts = figure(render, part("charts"));
  for (const radio of radios) radio.addEventListener("change", () => { run.disabled = false; });
  run.addEventListener("click", () => {
    const test = checkedIndex(radios);
    if (test === null) return;
    part("verdict").innerHTML = T.verdicts[test];
    part("demo").hidden = false;
  });
  const draw = () => {
    const state = bug.checked ? T.on : T.off;
    charts(state.charts);
    part("draws").innerHTML = state.draws;
    root.dataset.ready = "1";
  };
  bug.addEventListener("change", draw);
  draw();
}

const data = exercisesData();
const spreadRoot = document.querySelector("[data-exercise=spread]");
const temperatureRoot = document.querySelector("[data-exercise=temperature]");
if (data && spreadRoot) mountSpread(spreadRoot, data.spread);
if (data && temperatureRoot) mountTemperature(temperatureRoot, data.temperature);
