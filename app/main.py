"""The served entry point: `panel serve app/main.py` (or `batchviz serve`)."""

import panel as pn

from app.simulator import App

pn.extension(notifications=False)


def create_app() -> pn.viewable.Viewable:
    """Return a session's app, reading deep-link arguments from the URL."""
    query = dict(pn.state.session_args) if pn.state.curdoc and pn.state.curdoc.session_context else {}
    theme = query.get("theme", [b"light"])[-1]
    if theme == b"dark":
        pn.config.theme = "dark"
    app = App(query=query)
    app.sync_url()
    return app


if pn.state.served:
    create_app().servable(title="batchviz: static vs continuous batching")
