"""`batchviz replay`: run the same schedules through a real model (torch is imported only when it runs)."""

from __future__ import annotations

import argparse
import importlib.util
import sys

from core import report
from core.cli import COMPARE_SLOTS, COMPARE_TRAFFIC, json_flag, slots_flag, timeout_flag
from core.cli_args import UsageError, add_traffic_args, bounded_int, describe_traffic, load_requests

ENABLE = "the replay needs torch: pip install torch==2.13.0 (the CPU build) then pip install -e '.[replay]'"
PRESET_NAMES = ("tiny", "small", "gpt2")


def _add_replay(sub) -> None:
    """Add the `replay` subcommand; its traffic defaults are compare's (the chapter's script)."""
    p = sub.add_parser(
        "replay",
        help="run static and continuous through a real model; measured beside simulated",
        description="Run both schedules of the traffic through a randomly initialised transformer, timing every "
        "forward pass; print measured tokens/s and latencies beside the simulator's prediction. Needs torch.",
    )
    add_traffic_args(p, COMPARE_TRAFFIC)
    slots_flag(p, COMPARE_SLOTS, high=1024)
    timeout_flag(p)
    p.add_argument(
        "--device", choices=("auto", "cpu", "cuda"), default="auto", help="default auto: CUDA when present, else CPU"
    )
    p.add_argument(
        "--model", choices=PRESET_NAMES, default="tiny", help="size preset, random weights, no download (default tiny)"
    )
    p.add_argument("--threads", type=bounded_int(1, 256), default=1, help="CPU threads for torch, 1..256 (default 1)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr (default: shown on a tty)")
    json_flag(p, "the measured and predicted figures")


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
    try:
        engine = Engine(args.model, args.device, threads=args.threads)
        engine.check_fits(requests, args.slots)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    show = not args.no_progress and sys.stderr.isatty()
    results = {
        policy: engine.replay(requests, args.slots, policy, args.batch_timeout, on_step=_progress(policy, show))
        for policy in ("static", "continuous")
    }
    doc = summary(results["static"], results["continuous"])
    if args.json:
        return report.dumps(doc)
    return summary_text(doc, describe_traffic(args, requests))


def register(sub) -> dict:
    """Add the replay's subcommand; return its runner by name."""
    _add_replay(sub)
    return {"replay": run_replay}
