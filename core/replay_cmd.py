"""`batchviz replay`: run the same schedules through a real model (needs torch; imported only here)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys

from .cli_args import UsageError, add_traffic_args, bounded_int, describe_traffic, load_requests
from .traffic import TrafficConfig

ENABLE = "the replay needs torch: pip install torch==2.13.0 (the CPU build) then pip install -e '.[replay]'"
PRESET_NAMES = ("tiny", "small", "gpt2")


def add_replay(sub, traffic: TrafficConfig, slots: int) -> None:
    """Add the `replay` subcommand; its traffic defaults are compare's (the chapter's script)."""
    p = sub.add_parser("replay", help="run static and continuous through a real model; measured beside simulated")
    add_traffic_args(p, traffic)
    p.add_argument("--slots", type=bounded_int(1, 1024), default=slots)
    p.add_argument("--batch-timeout", type=bounded_int(0), default=0)
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="default: CUDA when present")
    p.add_argument("--model", choices=PRESET_NAMES, default="tiny", help="size preset (random weights, no download)")
    p.add_argument("--threads", type=bounded_int(1, 256), default=1, help="CPU threads for torch (default 1)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--json", action="store_true")


def _progress(label: str, enabled: bool):
    def show(t: int, drain: int) -> None:
        if enabled and (t % max(1, drain // 100) == 0 or t + 1 == drain):
            done = (t + 1) / drain
            bar = "#" * int(30 * done)
            print(f"\r{label:<11}[{bar:<30}] {t + 1}/{drain} steps", end="", file=sys.stderr, flush=True)
            if t + 1 == drain:
                print(file=sys.stderr)

    return show


def run_replay(args: argparse.Namespace) -> str:
    """Replay static then continuous on the same traffic; return the table (or the JSON summary)."""
    if importlib.util.find_spec("torch") is None:
        raise UsageError(ENABLE)
    from replay import Engine
    from replay.report import summary, summary_text

    requests = load_requests(args)
    if not requests:
        raise UsageError("no requests to replay")
    try:
        engine = Engine(args.model, args.device, threads=args.threads)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    show = not args.no_progress and sys.stderr.isatty()
    results = {
        policy: engine.replay(requests, args.slots, policy, args.batch_timeout, on_step=_progress(policy, show))
        for policy in ("static", "continuous")
    }
    doc = summary(results["static"], results["continuous"])
    if args.json:
        return json.dumps(doc)
    return summary_text(doc, describe_traffic(args, requests))
