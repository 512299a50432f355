"""A course page that embeds the served app with `bokeh.embed.server_document`."""

from __future__ import annotations

from pathlib import Path

from bokeh.embed import server_document

TEMPLATE = Path(__file__).resolve().parent.parent / "assets" / "course_page.template.html"


def course_page(app_url: str) -> str:
    """Return the example course page with the app at `app_url` embedded in its ~800 px column."""
    return TEMPLATE.read_text(encoding="utf-8").replace("{{ app_script }}", server_document(app_url))
