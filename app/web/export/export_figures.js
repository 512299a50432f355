// The exported exercises' figures and data: each figure is drawn by the served page's own chart host
// (app/web/charts/charts_host.js or knee_host.js, their `render`) on a stand-in for the Panel model it is given
// when served, so both pages draw the same payload the same way, at the width the column has.

/** Return the exercises' data written at export time (app/export/exercises.py exercises_data), or null. */
export function exercisesData() {
  const el = document.getElementById("bv-exercises");
  return el ? JSON.parse(el.textContent) : null;
}

/** Mount a served figure host's `render` in `el`; return a function that hands it a new payload (JSON text). */
export function figure(render, el) {
  const listeners = [];
  const model = { payload: "{}", on(name, callback) { if (name === "payload") listeners.push(callback); } };
  render({ model, el });
  return (payload) => {
    if (payload === model.payload) return;
    model.payload = payload;
    for (const callback of listeners) callback();
  };
}

/** Return the index of the checked radio among `radios`, or null when none is checked. */
export function checkedIndex(radios) {
  const k = radios.findIndex((r) => r.checked);
  return k < 0 ? null : k;
}
