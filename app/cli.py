"""The app's subcommands: `batchviz serve` (panel serve on the app) and `batchviz export PAGE.html`."""

from __future__ import annotations

import argparse
import errno
import socket
import sys
from pathlib import Path

from core.cli.args import UsageError, bounded_int, file_name
from core.limits import parse_int, show_name
from core.workload.traffic import LENGTH_KINDS, TrafficConfig

APP_MAIN = Path(__file__).resolve().parent / "main.py"
SERVE_SETUP = Path(__file__).resolve().parent / "serve_setup.py"
MAX_EXPORT_REQUESTS = 64  # every (mode, slots, seed) run is embedded: the page grows with the request count


def _add_serve(sub) -> None:
    p = sub.add_parser(
        "serve",
        help="serve the app with panel serve",
        description="Serve the app at http://ADDRESS:PORT/main (Bokeh's server through panel serve).",
    )
    p.add_argument("--port", type=bounded_int(1, 65535), default=5006, help="TCP port, 1..65535 (default 5006)")
    p.add_argument(
        "--address",
        type=_address,
        default="127.0.0.1",
        help="interface to listen on, checked by binding it before serving (default 127.0.0.1; 0.0.0.0: all)",
    )
    p.add_argument(
        "--allow-websocket-origin",
        type=_origin,
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="also allow pages on this origin to embed the app (repeatable; default: only the server's own)",
    )
    p.add_argument(
        "--num-procs",
        type=bounded_int(1, 64),
        default=1,
        help=(
            "worker processes on this one port, 1..64, each with its own sessions (default 1); not behind a proxy: "
            "a page's websocket may reach another worker. For a class, run one serve per port behind "
            "deploy/nginx/batchviz.conf, whose ip_hash sends each learner's address to one of them"
        ),
    )
    p.add_argument(
        "--session-expiry",
        type=bounded_int(1, 86_400),
        default=15,
        help="seconds after its page closes that a session's memory is freed, 1..86400 (default 15)",
    )
    p.add_argument("--show", action="store_true", help="open a browser (default: don't)")


def _address(text: str) -> str:
    """Return an interface name or address (argparse's type): not empty, one printable word."""
    if not text or not text.isprintable() or any(c.isspace() for c in text):
        raise argparse.ArgumentTypeError(f"expected a host name or IP address to listen on, got {text[:60]!r}")
    return text


def _origin(text: str) -> str:
    """Return a websocket origin HOST[:PORT] (argparse's type), as Bokeh will accept it, or refuse it now."""
    host, _, port = text.partition(":")
    bad = not host or not text.isprintable() or any(c.isspace() or c in "/@*" for c in text)
    if not bad and port:
        try:
            parse_int(port, "port", 1, 65535)
        except ValueError:
            bad = True
    if bad or text.endswith(":"):
        raise argparse.ArgumentTypeError(
            f"expected HOST or HOST:PORT (a host name, and a port in 1..65535), got {text[:60]!r}"
        )
    return text


def check_listen(address: str, port: int) -> None:
    """Raise UsageError unless `address`:`port` can be listened on now, bound as Tornado will bind it."""
    try:
        infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise UsageError(f"--address: cannot listen on {address[:60]!r}: {why}") from None
    for family, kind, proto, _, where in sorted(set(infos), key=lambda info: info[0]):
        try:
            probe = socket.socket(family, kind, proto)
        except OSError as exc:
            if exc.errno == errno.EAFNOSUPPORT:  # Tornado skips a family the kernel lacks
                continue
            raise UsageError(f"--address: cannot listen on {address[:60]!r}: {exc.strerror or exc}") from None
        with probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Tornado binds: TIME_WAIT is no conflict
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(where)
            except OSError as exc:
                if exc.errno == errno.EADDRNOTAVAIL and address == "localhost" and where[0] == "::1":
                    continue  # IPv6 half disabled (Docker): Tornado skips ::1 for localhost too
                if exc.errno == errno.EADDRINUSE:
                    raise UsageError(f"--port: {port} is already in use on {where[0]}; choose another port") from None
                raise UsageError(f"--address: cannot listen on {address[:60]!r}: {exc.strerror or exc}") from None


def serve_argv(args: argparse.Namespace) -> list[str]:
    """Return the `panel serve` command line for these flags."""
    origins = [f"localhost:{args.port}", f"127.0.0.1:{args.port}", *args.allow_websocket_origin]
    argv = ["panel", "serve", str(APP_MAIN), "--port", str(args.port), "--address", args.address]
    argv += ["--setup", str(SERVE_SETUP)]  # gzip the page and its static resources
    for origin in origins:
        argv += ["--allow-websocket-origin", origin]
    if args.num_procs > 1:
        argv += ["--num-procs", str(args.num_procs)]
    expiry_ms = str(args.session_expiry * 1000)
    argv += [
        "--unused-session-lifetime",
        expiry_ms,
        "--check-unused-sessions",
        str(min(args.session_expiry * 1000, 5000)),
    ]
    return argv + (["--show"] if args.show else [])


def run_serve(args: argparse.Namespace) -> str:
    """Run `panel serve` on the app in this process, until the server stops."""
    from panel.command import main as panel_main

    argv = serve_argv(args)
    check_listen(args.address, args.port)  # so a bad address or a busy port is one line, before "serving at"
    print(f"serving batchviz at http://{args.address}:{args.port}/main", flush=True)
    # In this process, not by running a `panel` script found beside the interpreter: an install whose dependencies
    # live elsewhere (`pip install --user`, a shared environment) has none there, and `python -m panel` would put the
    # working directory, which may hold its own `app` folder, ahead of the installed app on sys.path.
    sys.argv = argv
    panel_main()
    return ""


def _add_export(sub) -> None:
    p = sub.add_parser(
        "export",
        help="write a self-contained HTML page that works from file:// with no server",
        description="Write the simulator as one HTML page: the served page's view of every setting it carries (every "
        "mode, slots 1-16, generated traffic at seeds 0-99, the lessons at seeds 0-30, the worked example and the "
        "memory lesson) is computed now and embedded; the page needs no server and no network.",
    )
    p.add_argument("path", metavar="PAGE.html", type=file_name, help="file to write, checked before building")
    p.add_argument(
        "--requests",
        type=bounded_int(1, MAX_EXPORT_REQUESTS),
        default=TrafficConfig.requests,
        help=f"number of requests, 1..{MAX_EXPORT_REQUESTS} (default %(default)s)",
    )
    p.add_argument(
        "--lengths", choices=LENGTH_KINDS, default=TrafficConfig.lengths, help="output lengths (default %(default)s)"
    )
    p.add_argument(
        "--arrival-window",
        type=bounded_int(1, 512),
        default=TrafficConfig.arrival_window,
        help="requests arrive over steps 0..N-1, 1..512 (default %(default)s)",
    )
    p.add_argument(
        "--window", type=bounded_int(8, 512), default=64, help="steps shown and measured, 8..512 (default 64)"
    )


def run_export(args: argparse.Namespace) -> str:
    """Write the page; return a one-line summary of what it carries."""
    from app.export.page import LESSON_SEEDS, MODES, SEEDS, SLOTS, export_page

    config = TrafficConfig(requests=args.requests, lengths=args.lengths, arrival_window=args.arrival_window)
    try:
        path = export_page(args.path, config, args.window)  # checks the place before the 20 s of building
    except OSError as exc:
        raise UsageError(f"cannot write {show_name(args.path)}: {exc.strerror or exc}") from None
    size = path.stat().st_size / 1e6
    return (
        f"wrote {show_name(path)} ({size:.1f} MB): slots {SLOTS.start}-{SLOTS.stop - 1}, "
        f"seeds {SEEDS.start}-{SEEDS.stop - 1} (the lessons' {LESSON_SEEDS.start}-{LESSON_SEEDS.stop - 1}), "
        f"modes {', '.join(MODES)}; open it from disk, no server needed"
    )


def register(sub) -> dict:
    """Add the app's subcommands (serve, export); return their runners by name."""
    _add_serve(sub)
    _add_export(sub)
    return {"serve": run_serve, "export": run_export}
