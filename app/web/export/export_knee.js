// The exported page's exercise 1, the knee: the served view's texts at every preset pair, offered rate and target,
// made at export time by app/exercises/ (app/export/exercises.py knee_at), picked here for the learner's settings;
// the three figures are the served page's own, app/web/charts/knee_host.js on the sweep's columns.
import { render } from "../charts/knee_host.js";
import { inflate } from "./export_pack.js";
import { exercisesData, figure } from "./export_figures.js";

function mountKnee(root, K) {
  const part = (name) => root.querySelector(`[data-part=${name}]`);
  const input = (name) => root.querySelector(`[name=knee-${name}]`);
  const controls = {
    accelerator: input("accelerator"), model: input("model"), rate: input("rate"), target: input("target"),
  };
  const guesses = [...root.querySelectorAll(".bv-knee-guess button")];
  const shown = root.querySelector("output[data-value=knee-target]");
  const show = figure(render, part("charts"));
  const packs = new Map();  // a preset pair and rate's texts, inflated when first reached
  const at = (key) => {
    if (!packs.has(key)) packs.set(key, inflate(K.at[key]).then(([texts]) => texts));
    return packs.get(key);
  };
  let guess = null, asked = 0;

  async function draw() {
    const n = ++asked, target = Number(controls.target.value);
    const key = `${controls.accelerator.value}/${controls.model.value}/${controls.rate.value}`;
    shown.textContent = controls.target.value;
    const texts = await at(key);
    if (n !== asked) return;  // the learner moved on while this pack inflated
    const i = K.targets.indexOf(target), revealed = guess !== null;
    part("motivation").innerHTML = texts.motivation;
    part("load").innerHTML = texts.load;
    part("verdict").innerHTML = revealed
      ? texts.verdicts[i] + texts.guesses[texts.best[i]][K.batches.indexOf(guess)] + K.tail : K.ask;
    // The served payload (app/exercises/knee_plots.py knee_payload); no replay runs on this page.
    show(JSON.stringify({ points: texts.points, target, revealed, measured: { batch: [], step_ms: [] } }));
    part("table").innerHTML = (revealed ? texts.tables[i] : "") + texts.assumptions;
    part("moves").innerHTML = revealed ? texts.moves[i] : "";
    for (const b of guesses) b.setAttribute("aria-pressed", String(Number(b.dataset.batch) === guess));
    root.dataset.shown = `${key}/${target}/${guess ?? "none"}`;
    root.dataset.ready = "1";
  }

  for (const name of ["accelerator", "model", "rate"]) controls[name].addEventListener("change", draw);
  controls.target.addEventListener("input", draw);
  for (const b of guesses) b.addEventListener("click", () => { guess = Number(b.dataset.batch); draw(); });
  draw();
}

const data = exercisesData(), kneeRoot = document.querySelector("[data-exercise=knee]");
if (data && kneeRoot) mountKnee(kneeRoot, data.knee);
