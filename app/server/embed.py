"""A course page that embeds the served app with `bokeh.embed.server_document`, and what an embedded session needs."""

from __future__ import annotations

from bokeh.embed import server_document

from app.web.bundle import ASSETS

TEMPLATE = ASSETS / "course_page.template.html"
# server_document's script asks for autoload.js with these arguments; a page served by the app itself never does.
AUTOLOAD_ELEMENT = "bokeh-autoload-element"
AUTOLOAD_URL = "bokeh-absolute-url"
AUTOLOAD_PATH = "bokeh-app-path"


def course_page(app_url: str) -> str:
    """Return the example course page with the app at `app_url` embedded in its ~800 px column."""
    return TEMPLATE.read_text(encoding="utf-8").replace("{{ app_script }}", server_document(app_url))


def _arg(args: dict, key: str) -> str:
    value = args.get(key) or [b""]
    value = value[0] if isinstance(value, list) else value
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def is_embedded(args: dict) -> bool:
    """Return whether the session's request arguments are server_document's (the app sits inside another page)."""
    return bool(_arg(args, AUTOLOAD_ELEMENT))


def server_root(args: dict) -> str | None:
    """Return the app server's root URL (no trailing slash) as the embedding page reached it, or None if unknown."""
    url, path = _arg(args, AUTOLOAD_URL), _arg(args, AUTOLOAD_PATH)
    if not url.startswith(("http://", "https://")) or not path or not url.endswith(path):
        return None
    return url[: len(url) - len(path)].rstrip("/")


def serve_resources_locally(doc, args: dict) -> None:
    """Make an embedded session load Panel's CSS and modules from the app's own server, not from a CDN.

    Panel's full page sets `dist_url` (where its stylesheets live) to the server's static folder, but its autoload
    handler, which server_document uses, never does: each widget's stylesheet then points at cdn.holoviz.org and a
    classroom without internet gets an unstyled app. Its JS modules are linked relative to the page, which in an
    embed is the host page's server. Both are pointed at the app server's absolute URL here, before any model exists.
    """
    import panel as pn
    from panel.io.resources import LOCAL_DIST

    root = server_root(args) if is_embedded(args) else None
    if root is None:
        return
    doc._template_variables["dist_url"] = f"{root}/{LOCAL_DIST}"
    pn.state.rel_path = root  # per document: Panel prefixes its static paths with it
