import { D, THEME } from "./export_host.js";
import { Timeline } from "../renderer.js";

// ---- the Schedulers tab: lineups the core ran at export time (app/export/schedulers.py), drawn by the renderer ---------
(() => {
  const L = D.lineups, box = document.getElementById("bv-lineup-timelines");
  if (!L || !box) return;
  const choices = document.getElementById("bv-lineup-choices"), guesses = document.getElementById("bv-lineup-guesses");
  let current = null, guess = null, timelines = [], hover = null;
  const paint = () => {
    const view = L[current].view;
    for (const [t, key] of timelines) t.draw(view, key, view.end_ms, hover, null, key);
  };
  const button = (text, pressed, onClick) => {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = text;
    b.setAttribute("aria-pressed", String(pressed));
    b.addEventListener("click", onClick);
    return b;
  };
  const show = () => {  // the question before a guess; after it, the verdict, the table and the lessons
    const l = L[current];
    document.getElementById("bv-lineup-load").innerHTML = l.load;
    document.getElementById("bv-lineup-ask").innerHTML = guess === null ? l.ask : l.verdicts[guess];
    document.getElementById("bv-lineup-table").innerHTML = guess === null ? "" : l.table;
    document.getElementById("bv-lineup-lessons").innerHTML = guess === null ? "" : l.lessons;
    guesses.replaceChildren(...l.options.map((text, k) => button(text, k === guess, () => { guess = k; show(); })));
  };
  const open = (name) => {
    current = name;
    guess = null;
    choices.replaceChildren(...Object.keys(L).map((n) => button(L[n].label, n === name, () => open(n))));
    box.replaceChildren();
    timelines = L[name].view.order.map((key) => {
      const host = document.createElement("div");
      box.append(host);
      return [new Timeline(host, key, D.themes[THEME].config.colours, (i) => { if (i !== hover) { hover = i; paint(); } }), key];
    });
    show();
    paint();
    window.__bvLineup = { view: L[name].view, timelines, open };
  };
  open("default");
  new ResizeObserver(() => { if (!box.closest("[hidden]")) paint(); }).observe(box);
})();
