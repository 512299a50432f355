// The widget's controls and panes, built as DOM and wired only to the callbacks they are given: the settings (mode
// buttons, slots and seed sliders), the player (moves, play/pause, speed, the step slider) and the panes the widget
// fills (texts, both timelines, the tooltip, legend and caption). app/web/widget.js mounts them and holds the state.
import { Timeline } from "./renderer.js";

export const PLAY = "▶ Play";
export const PAUSE = "❚❚ Pause";
const MOVES = [  // each move's label, its help, and the step it goes to from the widget `w`
  ["« Start", "Go to step 0", (w) => 0],
  ["◂ Back", "One step back", (w) => Math.max(0, w.step - 1)],
  null,  // the play button
  ["Step ▸", "One step forward", (w) => Math.min(w.last(), w.step + 1)],
  ["End »", "Go to the window's last step", (w) => w.last()],
];

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") node.textContent = v;
    else if (k === "html") node.innerHTML = v;
    else node.setAttribute(k, v);
  }
  for (const child of children) node.appendChild(child);
  return node;
}

function range(label, name, min, max, value) {
  const input = el("input", { type: "range", min, max, step: 1, name, "aria-label": label });
  input.value = value;
  const out = el("output", { "data-value": name, text: String(value) });
  const box = el("label", { class: "bv-range" }, el("span", { class: "bv-range-label", text: label + " " }), out,
    input);
  return { box, input, out };
}

/** Return the settings' controls; each calls `change(delta)` with the setting it moved ({mode}, {slots} or {seed}). */
export function settingsControls(cfg, change) {
  const modeGroup = el("div", { role: "radiogroup", "aria-label": "Batching mode", class: "bv-modes" });
  const modeButtons = (cfg.modes ?? [["continuous", "continuous"], ["static", "static"]]).map(([mode, label]) => {
    const b = el("button", { type: "button", role: "radio", "data-mode": mode, text: label });
    b.addEventListener("click", () => change({ mode }));
    modeGroup.appendChild(b);
    return b;
  });
  const slots = range("Batch slots", "slots", 1, 16, 4);
  const seed = range("Traffic seed", "seed", 0, 99, 0);
  slots.input.addEventListener("input", () => change({ slots: Number(slots.input.value) }));
  seed.input.addEventListener("input", () => change({ seed: Number(seed.input.value) }));
  const traffic = el("span", { class: "bv-traffic", "aria-live": "polite" });  // which traffic the view shows
  const controls = el("div", { class: "bv-controls" }, modeGroup, slots.box, seed.box, traffic);
  return { controls, modeButtons, slots, seed, traffic };
}

/**
 * Return the player. `on` answers it: toggle() the play button, move(target) a move's button (target(w) its step),
 * drag(t) the step slider moving, dragged() it let go, speed() the speed chosen.
 */
export function playerControls(cfg, on) {
  const player = el("div", { class: "bv-player", role: "group", "aria-label": "Playback" });
  const buttons = MOVES.map((move) => {
    if (move === null) {
      const play = el("button", { type: "button", class: "bv-play", title: "Play the steps in order", text: PLAY });
      play.addEventListener("click", () => on.toggle());
      player.appendChild(play);
      return play;
    }
    const [label, help, target] = move;
    const b = el("button", { type: "button", title: help, "aria-label": `${label} (${help})`, text: label });
    b.addEventListener("click", () => on.move(target));
    player.appendChild(b);
    return b;
  });
  const stepInput = el("input", { type: "range", min: 0, max: 63, step: 1, name: "step", "aria-label": "Step" });
  stepInput.addEventListener("input", () => on.drag(Number(stepInput.value)));
  stepInput.addEventListener("change", () => on.dragged());
  // The pace of playback: a learner's 120 ms a step by default, slower to follow one request, or one step a frame.
  const speed = el("select", { name: "speed", "aria-label": "Playback speed", title: "Playback speed",
    class: "bv-speed" });
  for (const [label, ms] of cfg.speeds ?? [[`${cfg.interval_ms} ms a step`, cfg.interval_ms]]) {
    const option = el("option", { value: String(ms), text: label });
    option.selected = ms === cfg.interval_ms;
    speed.appendChild(option);
  }
  speed.addEventListener("change", () => on.speed());
  player.appendChild(speed);
  player.appendChild(el("label", { class: "bv-range bv-step-range" }, el("span", { text: "Step" }), stepInput));
  return { player, playButton: buttons[2], stepInput, speed };
}

/** Return the panes the widget fills: the texts, both timelines (hovering a request calls onHover(i)), and the rest. */
export function widgetPanes(cfg, onHover) {
  const panel = el("div", { class: "bv-panel", "data-part": "playback", "aria-live": "off" });
  const compact = el("div", { class: "bv-h2h-compact" });
  const status = el("div", { class: "bv-status" }, panel, compact);
  const plots = el("div", { class: "bv-timelines" });
  const tip = el("div", { class: "bv-tip", role: "tooltip", hidden: "" });
  const timelines = [new Timeline(plots, "timeline", cfg.colours, onHover),
                     new Timeline(plots, "timeline-other", cfg.colours, onHover)];
  const legend = el("div", { html: cfg.legend });
  const caption = el("div", { class: "bv-caption" });
  return { panel, compact, status, plots, tip, timelines, legend, caption };
}
