"""The served entry point: `panel serve app/main.py` (or `batchviz serve`)."""

import panel as pn

from app.simulator import App
from app.url import parse_theme

pn.extension(notifications=False)


def create_app() -> pn.viewable.Viewable:
    """Return a session's app, reading deep-link arguments from the URL."""
    query = dict(pn.state.session_args) if pn.state.curdoc and pn.state.curdoc.session_context else {}
    if parse_theme(query)[0] == "dark":
        pn.config.theme = "dark"  # before the app builds its widgets, so they take the dark design
    app = App(query=query)
    app.sync_url()
    return app


if pn.state.served:
    create_app().servable(title="batchviz: static vs continuous batching")
