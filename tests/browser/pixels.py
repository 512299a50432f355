"""Reading the timeline back from a screenshot: one sample per cell centre, mapped to the nearest legend colour."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from app.page import palette

# The legend's colours, plus the playback curtain ("-": not yet played).
STATE_COLOURS = {
    "G": palette.GENERATING_COLOR,
    "P": palette.PADDING_COLOR,
    ".": palette.IDLE_COLOR,
    "-": palette.FUTURE_COLOR,
}

# The renderer (app/web/renderer.js) says where each cell's centre lies on its canvas, as Bokeh's scales did.
CELL_CENTRES_JS = """
([name, slots, steps]) => {
  const tl = window.__bvWidget.timelines[name === "timeline" ? 0 : 1];
  const rows = [];
  for (let s = 0; s < slots; s++) {
    const row = [];
    for (let t = 0; t < steps; t++) row.push(tl.cellCentre(s, t));
    rows.push(row);
  }
  return rows;
}
"""


def _rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)


def nearest_state(pixel: np.ndarray, colours: dict[str, str] = STATE_COLOURS) -> str:
    """Return the state whose legend colour is nearest to an RGB pixel."""
    names = list(colours)
    distances = [np.linalg.norm(pixel[:3] - _rgb(colours[n])) for n in names]
    return names[int(np.argmin(distances))]


def read_timeline(
    page, slots: int, window: int, name: str = "timeline", curtain: str = palette.FUTURE_COLOR
) -> list[str]:
    """Return the timeline as drawn: one string per slot, one state character per step."""
    colours = {**STATE_COLOURS, "-": curtain}
    page.evaluate("window.scrollTo(0, 0)")
    centres = page.evaluate(CELL_CENTRES_JS, [name, slots, window])
    image = np.asarray(Image.open(io.BytesIO(page.screenshot(full_page=True))).convert("RGB")).astype(float)
    return ["".join(nearest_state(image[int(round(y)), int(round(x))], colours) for x, y in row) for row in centres]


POINT_JS = """([name, x, y]) => window.__bvWidget.timelines[name === "timeline" ? 0 : 1].pagePoint(x, y)"""
OUTLINED_JS = """(name) => {
  const w = window.__bvWidget, tl = w.timelines[name === "timeline" ? 0 : 1];
  return tl.drawnHover === null ? [] : [w.view.ids[tl.drawnHover]];
}"""
SHOWN_HEIGHT_JS = """(name) => {
  const tl = window.__bvWidget.timelines[name === "timeline" ? 0 : 1];
  return tl.canvas.getBoundingClientRect().height;
}"""


def timeline_point(page, name: str, x: float, y: float) -> tuple[float, float]:
    """Return the page coordinates of (x steps or ms, y slots) on a timeline."""
    return tuple(page.evaluate(POINT_JS, [name, x, y]))


def outlined(page, name: str) -> list[str]:
    """Return the request the timeline's last drawing outlined as hovered ([] for none)."""
    return page.evaluate(OUTLINED_JS, name)


def shown_height(page, name: str) -> float:
    """Return a timeline's height on the page (0 when hidden)."""
    return page.evaluate(SHOWN_HEIGHT_JS, name)


CANVAS_RECT_JS = """(name) => {
  const r = window.__bvWidget.timelines[name === "timeline" ? 0 : 1].canvas.getBoundingClientRect();
  return [r.left, r.top, r.right, r.bottom];
}"""


def canvas_rect(page, name: str = "timeline") -> tuple[float, float, float, float]:
    """Return a timeline canvas's (left, top, right, bottom) on the page."""
    return tuple(page.evaluate(CANVAS_RECT_JS, name))
