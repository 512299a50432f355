"""The served entry point: `panel serve app/main.py` (or `batchviz serve`)."""

import panel as pn

from app.page.url import parse_theme, safe_location
from app.server import builder
from app.server.embed import is_embedded, serve_resources_locally
from app.server.server_log import install as one_line_client_errors
from app.shell import App
from app.web.style import CSS

pn.extension(notifications=False)
one_line_client_errors()  # a bad message from a client is one line in the log, never a traceback


def build_app(query: dict, rewrite_url: bool = False) -> App:
    """Return a session's app for the URL's arguments, with the URL kept in step with its state.

    Embedded in another page (server_document), the app keeps its state to itself: the address bar is the host
    page's, and rewriting it would change the course page's URL.
    """
    app = App(query=query)
    if not is_embedded(query):
        # A refused or clamped value is written back at once: the address then says what the page shows.
        app.sync_url(rewrite_url or bool(app.messages.text))
    return app


def create_app() -> pn.viewable.Viewable:
    """Return a session's page: served, an empty column that the session builder fills once the page has loaded.

    Building a session costs a few hundred milliseconds of Python. Built here, on the event loop, a burst of new
    sessions would hold every open session's slider changes behind it (see app/server/builder.py).
    """
    doc = pn.state.curdoc
    served = bool(doc and doc.session_context)
    query = dict(pn.state.session_args) if served else {}
    if served:
        serve_resources_locally(doc, query)  # before any model: their stylesheet URLs are fixed when made
    if parse_theme(query)[0] == "dark":
        pn.config.theme = "dark"  # before the app builds its widgets, so they take the dark design
    if not served:
        return build_app(query)
    _, rewrite = safe_location()  # now: the page template reads the Location before the app is built
    page = pn.Column(sizing_mode="stretch_width", min_height=400, stylesheets=[CSS], css_classes=["bv-app"])
    build = lambda: build_app(query, rewrite)  # noqa: E731
    if builder.idle():  # built now, while the browser loads the page's JavaScript; put in once it has loaded
        pn.state.onload(builder.build_later(doc, page, build).loaded)
    else:  # a burst: queued once loaded, so the builds never contend with the pages being served
        pn.state.onload(lambda: builder.build_later(doc, page, build).loaded())
    return page


if pn.state.served:
    create_app().servable(title="batchviz: static vs continuous batching")
