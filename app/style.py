"""The app's stylesheet, read once from assets/ (passed to each component: Bokeh renders in shadow DOM)."""

from pathlib import Path

CSS_PATH = Path(__file__).resolve().parent.parent / "assets" / "batchviz.css"
CSS = CSS_PATH.read_text(encoding="utf-8")
