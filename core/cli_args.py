"""Argument types and the traffic flags shared by the `batchviz` subcommands."""

from __future__ import annotations

import argparse
from dataclasses import fields, replace

from .request import Request
from .traces import TraceError, TraceOptions, load_trace
from .traffic import ARRIVAL_KINDS, LENGTH_KINDS, TrafficConfig, generate


class UsageError(Exception):
    """A bad flag or file: printed as one line, exit status 2."""


def bounded_int(low: int, high: int | None = None):
    """Return an argparse type accepting integers in [low, high]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            allowed = f">= {low}" if high is None else f"in {low}..{high}"
            raise argparse.ArgumentTypeError(f"expected an integer {allowed}, got {text!r}")
        return value

    return parse


def positive_float(text: str) -> float:
    """Parse a float > 0 for argparse."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def add_traffic_args(parser: argparse.ArgumentParser, defaults: TrafficConfig) -> None:
    """Add the trace-file and generator flags; the defaults are this subcommand's workload."""
    group = parser.add_argument_group("traffic (a trace file, or the seeded generator)")
    group.add_argument("--trace", metavar="FILE", help="CSV trace: arrival,output_tokens[,id,prompt_tokens], or Azure")
    group.add_argument(
        "--step-ms",
        type=positive_float,
        default=TraceOptions.step_ms,
        help="Azure traces: milliseconds per step (default %(default)s)",
    )
    group.add_argument(
        "--time-scale",
        type=positive_float,
        default=1.0,
        help="Azure traces: multiply inter-arrival times (<1 compresses; default 1)",
    )
    group.add_argument("--seed", type=bounded_int(0, 2**32 - 1), default=defaults.seed)
    group.add_argument("--requests", type=bounded_int(0, 10_000_000), default=defaults.requests)
    group.add_argument("--arrivals", choices=ARRIVAL_KINDS, default=defaults.arrivals)
    group.add_argument(
        "--arrival-window",
        type=bounded_int(1),
        default=defaults.arrival_window,
        help="window arrivals: spread over steps 0..N-1",
    )
    group.add_argument("--rate", type=positive_float, default=defaults.rate, help="poisson arrivals: requests per step")
    group.add_argument("--lengths", choices=LENGTH_KINDS, default=defaults.lengths)
    group.add_argument("--mean-tokens", type=bounded_int(1), default=defaults.mean_tokens)
    group.add_argument("--max-tokens", type=bounded_int(1), default=defaults.max_tokens)
    group.add_argument("--tail", type=positive_float, default=defaults.tail, help="heavy lengths: log-normal sigma")
    group.add_argument("--prompt-lengths", choices=LENGTH_KINDS, default=defaults.prompt_lengths)
    group.add_argument("--mean-prompt-tokens", type=bounded_int(0), default=defaults.mean_prompt_tokens)


def traffic_config(args: argparse.Namespace) -> TrafficConfig:
    """Return the generator config the flags describe."""
    values = {f.name: getattr(args, f.name) for f in fields(TrafficConfig)}
    try:
        return replace(TrafficConfig(), **values)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def load_requests(args: argparse.Namespace) -> list[Request]:
    """Return the requests of --trace, or of the generator flags."""
    if not args.trace:
        return generate(traffic_config(args))
    try:
        return load_trace(args.trace, TraceOptions(args.step_ms, args.time_scale))
    except TraceError as exc:
        raise UsageError(str(exc)) from None


def describe_traffic(args: argparse.Namespace, requests: list[Request]) -> str:
    """Return a one-line description of the workload."""
    if args.trace:
        return f"{len(requests)} requests from {args.trace}"
    c = traffic_config(args)
    arrivals = f"over the first {c.arrival_window} steps" if c.arrivals == "window" else f"Poisson at {c.rate}/step"
    shape = f"{c.lengths} lengths (mean {c.mean_tokens}, cap {c.max_tokens}" + (
        f", tail {c.tail})" if c.lengths == "heavy" else ")"
    )
    return f"{c.requests} requests, {shape}, arriving {arrivals}, seed {c.seed}"
