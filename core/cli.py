"""The `batchviz` command line: simulate, compare, sweep, replay (and serve/export for the app)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields

from . import report
from .cli_args import (
    UsageError,
    add_traffic_args,
    bounded_int,
    describe_traffic,
    load_requests,
    positive_float,
    traffic_config,
)
from .export_cmd import add_export, run_export
from .metrics import compare, compute_metrics
from .replay_cmd import add_replay, run_replay
from .run import POLICIES
from .schedule import simulate
from .serve_cmd import add_serve, run_serve
from .sweep import DEFAULT_BATCHES, SWEEP_TRAFFIC, CostModel, knee, sweep
from .traffic import TrafficConfig

# The chapter's script: chat-shaped traffic on 8 slots; a typical seed drains ~3x faster under continuous batching.
COMPARE_TRAFFIC = TrafficConfig(
    seed=4, requests=256, arrival_window=64, mean_tokens=64, max_tokens=1024, tail=1.1, mean_prompt_tokens=128
)
COMPARE_SLOTS = 8
MAX_SLOTS = 4096


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and exit status 2, without the usage dump."""

    def error(self, message: str):
        """Print one line and exit with status 2 (argparse's hook)."""
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _add_simulate(sub) -> None:
    p = sub.add_parser("simulate", help="schedule one policy; print the timeline and metrics")
    add_traffic_args(p, TrafficConfig())
    p.add_argument("--slots", type=bounded_int(1, MAX_SLOTS), default=4)
    p.add_argument("--policy", choices=POLICIES, default="continuous")
    p.add_argument("--batch-timeout", type=bounded_int(0), default=0, help="static: steps the oldest may wait")
    p.add_argument("--window", type=bounded_int(0), default=None, help="metrics window in steps (default: drain)")
    p.add_argument("--json", action="store_true", help="print the JSON contract object")


def _add_compare(sub) -> None:
    p = sub.add_parser("compare", help="static vs continuous on the same traffic (the chapter's script)")
    add_traffic_args(p, COMPARE_TRAFFIC)
    p.add_argument("--slots", type=bounded_int(1, MAX_SLOTS), default=COMPARE_SLOTS)
    p.add_argument("--batch-timeout", type=bounded_int(0), default=0)
    p.add_argument("--json", action="store_true")


def _add_sweep(sub) -> None:
    p = sub.add_parser("sweep", help="throughput and p99 latency against batch size, with a step-time cost model")
    add_traffic_args(p, SWEEP_TRAFFIC)
    p.add_argument("--rate-per-s", type=positive_float, default=10.0, help="arrival rate, requests per second")
    p.add_argument("--batches", default=",".join(map(str, DEFAULT_BATCHES)), help="comma-separated batch sizes")
    p.add_argument("--itl-target-ms", type=positive_float, default=50.0, help="inter-token latency target")
    for f in fields(CostModel):
        p.add_argument("--" + f.name.replace("_", "-"), type=float, default=f.default)
    p.add_argument("--json", action="store_true")


def build_parser() -> argparse.ArgumentParser:
    """Return the `batchviz` argument parser."""
    parser = Parser(prog="batchviz", description="Static vs continuous batching for LLM serving, step by step.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    _add_simulate(sub)
    _add_compare(sub)
    _add_sweep(sub)
    add_serve(sub)
    add_export(sub)
    add_replay(sub, COMPARE_TRAFFIC, COMPARE_SLOTS)
    return parser


def _simulate(args) -> str:
    run = simulate(load_requests(args), args.slots, args.policy, args.batch_timeout)
    metrics = compute_metrics(run, args.window)
    if args.json:
        return json.dumps(report.run_json(run, metrics, args.window))
    return report.run_text(run, metrics)


def _compare(args) -> str:
    requests = load_requests(args)
    result = compare(
        simulate(requests, args.slots, "static", args.batch_timeout), simulate(requests, args.slots, "continuous")
    )
    if args.json:
        return json.dumps(result.as_dict())
    return report.comparison_text(result, describe_traffic(args, requests), args.slots)


def _batches(text: str) -> tuple[int, ...]:
    try:
        batches = tuple(int(x) for x in text.split(","))
    except ValueError:
        batches = ()
    if not batches or min(batches) < 1 or max(batches) > MAX_SLOTS:
        raise UsageError(f"--batches: expected comma-separated integers in 1..{MAX_SLOTS}, got {text!r}")
    return batches


def _sweep(args) -> str:
    try:
        model = CostModel(**{f.name: getattr(args, f.name) for f in fields(CostModel)})
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    points = sweep(args.rate_per_s, _batches(args.batches), model, traffic_config(args), args.itl_target_ms)
    best = knee(points)
    if args.json:
        return json.dumps({"points": [vars(p) for p in points], "knee": best.batch if best else None})
    return report.sweep_text(points, best, args.itl_target_ms)


COMMANDS = {
    "simulate": _simulate,
    "compare": _compare,
    "sweep": _sweep,
    "serve": run_serve,
    "export": run_export,
    "replay": run_replay,
}


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status (2 for bad input, with one line on stderr)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        print(COMMANDS[args.command](args))
    except UsageError as exc:
        print(f"batchviz {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return 0


def main_exit() -> None:
    """Entry point of the `batchviz` console script."""
    sys.exit(main())
