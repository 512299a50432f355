// The Schedulers tab's timelines (app/schedulers/view.py's LineupTimelines): every scheduler's run on one time axis,
// drawn by the page's renderer from the lineup's JSON (app/schedulers/data.py lineup_json).
import { Timeline } from "../renderer.js";
export function render({ model, el }) {
  const box = document.createElement("div");
  box.className = "bv-lineup";
  el.append(box);
  let view = null, timelines = [], hover = null;
  const paint = () => {
    for (const [t, key] of timelines) t.draw(view, key, view.end_ms, hover, null, key);
  };
  const build = () => {
    view = JSON.parse(model.payload);
    box.replaceChildren();
    timelines = view.order.map((key) => {
      const host = document.createElement("div");
      box.append(host);
      // Hovering a request outlines it in every scheduler's timeline: where each one ran it.
      const onHover = (i) => { if (i !== hover) { hover = i; paint(); } };
      return [new Timeline(host, key, model.config.colours, onHover), key];
    });
    paint();
    window.__bvLineup = { view, timelines };  // the pixel tests read the drawn geometry
  };
  build();
  model.on("payload", build);
  new ResizeObserver(() => paint()).observe(box);
}
