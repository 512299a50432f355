"""The player: labelled buttons (start, back, play/pause, step, end) and a step slider, all running in the browser."""

from __future__ import annotations

import panel as pn
import param

from .state import SimState

INTERVAL_MS = 120
# One timer per page: Play starts it, a second click (now "Pause") stops it; at the end it stops by itself.
PLAY_JS = """
// A new label re-renders the button, which drops the keyboard focus: give it back, so Enter pauses what it played.
const view = () => Bokeh.index.query_one((v) => v.model === play);
const relabel = (text) => {
  const v = view();
  const focused = v != null && v.shadow_el != null && v.shadow_el.activeElement != null;
  play.label = text;
  if (focused) setTimeout(() => { const w = view(); if (w && w.button_el) w.button_el.focus(); }, 0);
};
const stop = () => { clearInterval(window.__bvTimer); window.__bvTimer = null; relabel("▶ Play"); };
if (window.__bvTimer) { stop(); return; }
if (step.value >= step.end) step.value = step.start;
relabel("❚❚ Pause");
const every = window.__bvInterval ?? interval;  // a benchmark may ask for another frame interval
window.__bvTimer = setInterval(() => { if (step.value >= step.end) stop(); else step.value += 1; }, every);
"""
MOVES = {  # button label -> the slider's new value, as JavaScript over `step`
    "« Start": "step.start",
    "◂ Back": "Math.max(step.start, step.value - 1)",
    "Step ▸": "Math.min(step.end, step.value + 1)",
    "End »": "step.end",
}
HELP = {
    "« Start": "Go to step 0",
    "◂ Back": "One step back",
    "Step ▸": "One step forward",
    "End »": "Go to the window's last step",
}


class Playback(pn.viewable.Viewer):
    """Playback of the state's step: every button has a name a screen reader reads, and nothing waits on the server."""

    state = param.ClassSelector(class_=SimState)

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        # The readout above the stats states the step and what it means; the slider does not repeat the number.
        self.slider = pn.widgets.IntSlider.from_param(
            s.param.step, label="Step", start=0, end=s.window - 1, show_value=False, styles={"flex": "1 1 200px"}
        )
        s.param.watch(lambda e: setattr(self.slider, "end", e.new - 1), "window")
        self.play = pn.widgets.Button(label="▶ Play", color="primary", description="Play the steps in order")
        self.play.js_on_click(args={"play": self.play, "step": self.slider, "interval": INTERVAL_MS}, code=PLAY_JS)
        self.moves = []
        for label, target in MOVES.items():
            button = pn.widgets.Button(label=label, description=HELP[label])
            button.js_on_click(args={"step": self.slider}, code=f"step.value = {target};")
            self.moves.append(button)

    def link(self, code: str, args: dict) -> None:
        """Run `code` in the browser whenever the step changes (the slider's value is `cb_obj.value`)."""
        self.slider.jscallback(value=code, args=args)

    def __panel__(self):
        first, back, forward, last = self.moves
        return pn.FlexBox(
            first, back, self.play, forward, last, self.slider, css_classes=["bv-player"], sizing_mode="stretch_width"
        )
