"""`batchviz serve`: run `panel serve` on the app (imported lazily: the core never needs Panel)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

APP_MAIN = Path(__file__).resolve().parent.parent / "app" / "main.py"


def add_serve(sub) -> None:
    """Add the `serve` subcommand."""
    p = sub.add_parser("serve", help="serve the app with panel serve")
    p.add_argument("--port", type=int, default=5006)
    p.add_argument("--address", default="127.0.0.1", help="interface to listen on (0.0.0.0 for all)")
    p.add_argument(
        "--allow-websocket-origin",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="also allow pages on this origin to embed the app (repeatable)",
    )
    p.add_argument("--show", action="store_true", help="open a browser")


def serve_argv(args: argparse.Namespace) -> list[str]:
    """Return the `panel serve` command line for these flags."""
    origins = [f"localhost:{args.port}", f"127.0.0.1:{args.port}", *args.allow_websocket_origin]
    argv = ["panel", "serve", str(APP_MAIN), "--port", str(args.port), "--address", args.address]
    for origin in origins:
        argv += ["--allow-websocket-origin", origin]
    return argv + (["--show"] if args.show else [])


def run_serve(args: argparse.Namespace) -> str:
    """Replace this process with `panel serve` (never returns on success)."""
    from panel.command import main as panel_main  # noqa: F401 - fail early with a clear ImportError

    argv = serve_argv(args)
    print(f"serving batchviz at http://{args.address}:{args.port}/main", flush=True)
    os.execv(os.path.join(os.path.dirname(sys.executable), "panel"), argv)
    return ""
