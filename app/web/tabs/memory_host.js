// The served Memory tab's three runs (app/memory/view.py's MemoryModes): the server sends the pool's JSON when the
// pool changes (app/memory/data.py), the step is one number; every step is drawn here.
import { memoryModesHtml } from "./memory.js";

export function render({ model, el }) {
  const box = document.createElement("div");
  box.className = "bv-mem-modes";
  el.append(box);
  let data = null;
  const draw = () => {
    if (!data) return;
    box.innerHTML = memoryModesHtml(data, Math.max(0, Math.min(model.step, data.width - 1)));
  };
  const receive = () => { data = JSON.parse(model.payload); draw(); };
  receive();
  model.on("payload", receive);
  model.on("step", draw);
}
