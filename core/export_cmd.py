"""`batchviz export PAGE.html`: write the simulator as one static page (the app package is imported lazily)."""

from __future__ import annotations

import argparse

from .cli_args import UsageError, bounded_int
from .traffic import LENGTH_KINDS, TrafficConfig

MAX_EXPORT_REQUESTS = 64  # every (mode, slots, seed) run is embedded: the page grows with the request count


def add_export(sub) -> None:
    """Add the `export` subcommand."""
    p = sub.add_parser("export", help="write a self-contained HTML page that works from file:// with no server")
    p.add_argument("path", metavar="PAGE.html", help="file to write")
    p.add_argument("--requests", type=bounded_int(1, MAX_EXPORT_REQUESTS), default=TrafficConfig.requests)
    p.add_argument("--lengths", choices=LENGTH_KINDS, default=TrafficConfig.lengths)
    p.add_argument("--arrival-window", type=bounded_int(1, 512), default=TrafficConfig.arrival_window)
    p.add_argument("--window", type=bounded_int(8, 512), default=64, help="steps shown and measured")


def run_export(args: argparse.Namespace) -> str:
    """Write the page; return a one-line summary (slots 1-16 and seeds 0-99 are all in it)."""
    from app.export import SEEDS, SLOTS, export_page

    config = TrafficConfig(requests=args.requests, lengths=args.lengths, arrival_window=args.arrival_window)
    try:
        path = export_page(args.path, config, args.window)
    except OSError as exc:
        raise UsageError(f"cannot write {args.path}: {exc.strerror or exc}") from None
    size = path.stat().st_size / 1e6
    return (
        f"wrote {path} ({size:.1f} MB): slots {SLOTS.start}-{SLOTS.stop - 1}, seeds {SEEDS.start}-{SEEDS.stop - 1}, "
        f"both modes; open it from disk, no server needed"
    )
