"""Argument types and the traffic flags shared by the `batchviz` subcommands; every flag given is used or refused."""

from __future__ import annotations

import argparse
from dataclasses import replace

from core.limits import (
    MAX_ARRIVAL_STEP,
    MAX_OUTPUT_TOKENS,
    MAX_PROMPT_TOKENS,
    MAX_REQUESTS,
    LimitError,
    check_writable,
    parse_float,
    parse_int,
    show_name,
)
from core.workload.request import Request
from core.workload.traces import (
    AZURE_COLUMNS,
    STEP_MS_RANGE,
    TIME_SCALE_RANGE,
    TraceError,
    TraceOptions,
    parse_trace,
    read_trace_bytes,
)
from core.workload.traffic import ARRIVAL_KINDS, LENGTH_KINDS, MAX_RATE, MIN_RATE, TrafficConfig, generate


class UsageError(Exception):
    """A bad flag or file: printed as one line, exit status 2."""


def bounded_int(low: int, high: int):
    """Return an argparse type accepting plain ASCII-digit integers in [low, high]."""

    def parse(text: str) -> int:
        try:
            return parse_int(text, "value", low, high)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer in {low}..{high}, got {text[:40]!r}") from None

    return parse


def bounded_float(low: float, high: float):
    """Return an argparse type accepting plain decimal numbers in [low, high] (no `1_0`, NaN, inf, or underflow)."""

    def parse(text: str) -> float:
        try:
            return parse_float(text, "value", low, high)
        except LimitError:
            raise argparse.ArgumentTypeError(f"expected a number in {low:g}..{high:g}, got {text[:40]!r}") from None
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a number in {low:g}..{high:g} (plain ASCII decimal: digits, one dot, an optional "
                f"exponent), got {text[:40]!r}"
            ) from None

    return parse


def file_name(text: str) -> str:
    """Return a file name given to a flag: argparse's type refusing an empty one (it would name no file)."""
    if not text or "\0" in text:
        raise argparse.ArgumentTypeError(f"expected a file name, got {text[:40]!r}")
    return text


def check_output(flag: str, path: str) -> None:
    """Raise UsageError now, before anything is measured or built, unless a file can be written at `path`."""
    try:
        check_writable(path)
    except OSError as exc:
        raise UsageError(f"{flag}: cannot write {show_name(path)}: {exc.strerror or exc}") from None


# flag -> (TrafficConfig field, argparse type, help with units); the default comes from the subcommand's workload.
GENERATOR_FLAGS = {
    "--seed": ("seed", bounded_int(0, 2**32 - 1), "generator seed"),
    "--requests": ("requests", bounded_int(1, MAX_REQUESTS), "number of requests"),
    "--arrivals": ("arrivals", None, "arrival process: window (uniform over --arrival-window) or poisson (--rate)"),
    "--arrival-window": ("arrival_window", bounded_int(1, MAX_ARRIVAL_STEP), "window arrivals: over steps 0..N-1"),
    "--rate": ("rate", bounded_float(MIN_RATE, MAX_RATE), "poisson arrivals: requests per step"),
    "--lengths": ("lengths", None, "output lengths: heavy (log-normal), uniform (mean/2..3mean/2) or fixed"),
    "--mean-tokens": ("mean_tokens", bounded_int(1, MAX_OUTPUT_TOKENS), "mean output length, tokens"),
    "--max-tokens": ("max_tokens", bounded_int(1, MAX_OUTPUT_TOKENS), "cap on output length, tokens"),
    "--tail": ("tail", bounded_float(0.05, 4.0), "heavy lengths: log-normal sigma (bigger: longer tail)"),
    "--prompt-lengths": ("prompt_lengths", None, "prompt lengths: heavy, uniform or fixed"),
    "--mean-prompt-tokens": ("mean_prompt_tokens", bounded_int(0, MAX_PROMPT_TOKENS), "mean prompt length, tokens"),
    "--high-priority-share": (
        "high_priority_share",
        bounded_float(0.0, 1.0),
        "share of requests in priority class 0, the rest class 1 (0: every request class 0)",
    ),
}
CHOICES = {"--arrivals": ARRIVAL_KINDS, "--lengths": LENGTH_KINDS, "--prompt-lengths": LENGTH_KINDS}
# The sweep's arrivals are Poisson at --rate-per-s, and it runs continuous batching in arrival order: a priority
# class would be drawn and never read, so the flag is not offered.
SWEEP_EXCLUDED = ("--arrivals", "--arrival-window", "--rate", "--high-priority-share")
TRACE_FLAGS = {"--step-ms": ("step_ms", STEP_MS_RANGE), "--time-scale": ("time_scale", TIME_SCALE_RANGE)}


def _dest(flag: str) -> str:
    return flag[2:].replace("-", "_")


def add_traffic_args(parser: argparse.ArgumentParser, defaults: TrafficConfig, exclude: tuple[str, ...] = ()) -> None:
    """Add the trace-file and generator flags; the defaults are this subcommand's workload."""
    parser.set_defaults(traffic_defaults=defaults)
    group = parser.add_argument_group("traffic (a trace file, or the seeded generator; not both)")
    group.add_argument(
        "--trace",
        metavar="FILE",
        type=file_name,
        help="CSV trace: arrival,output_tokens[,id,prompt_tokens,priority,max_tokens], or the Azure format "
        "(default: generated)",
    )
    for flag, (name, (low, high)) in TRACE_FLAGS.items():
        default = getattr(TraceOptions(), name)
        what = "milliseconds per step" if name == "step_ms" else "multiplies inter-arrival times (<1: more load)"
        group.add_argument(
            flag, type=bounded_float(low, high), help=f"Azure traces: {what}, {low:g}..{high:g} (default {default:g})"
        )
    for flag, (name, kind, text) in GENERATOR_FLAGS.items():
        if flag in exclude:
            continue
        default = getattr(defaults, name)
        group.add_argument(flag, type=kind, choices=CHOICES.get(flag), help=f"{text} (default {default})")


def given_generator_flags(args: argparse.Namespace) -> list[str]:
    """Return the generator flags given on the command line (they default to None, so given means not None)."""
    return [flag for flag in GENERATOR_FLAGS if getattr(args, _dest(flag), None) is not None]


def traffic_config(args: argparse.Namespace) -> TrafficConfig:
    """Return the generator config the flags describe, refusing flags that would change nothing."""
    given = {GENERATOR_FLAGS[f][0]: getattr(args, _dest(f)) for f in given_generator_flags(args)}
    try:
        config = replace(args.traffic_defaults, **given)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if "rate" in given and config.arrivals != "poisson":
        raise UsageError("--rate applies to --arrivals poisson only")
    if "arrival_window" in given and config.arrivals != "window":
        raise UsageError("--arrival-window applies to --arrivals window only")
    if "tail" in given and "heavy" not in (config.lengths, config.prompt_lengths):
        raise UsageError("--tail applies to heavy lengths only (--lengths heavy or --prompt-lengths heavy)")
    return config


def trace_options(args: argparse.Namespace) -> TraceOptions:
    """Return the Azure time mapping the flags ask for (defaults where not given)."""
    values = {name: getattr(args, name) for name, _ in TRACE_FLAGS.values() if getattr(args, name) is not None}
    return TraceOptions(**values)


def load_requests(args: argparse.Namespace, clock_only: bool = False) -> list[Request]:
    """Return the requests of --trace, or of the generator flags; refuse flags that do not apply, and no requests.

    `clock_only`: the command runs only on the clock in ms (the sweep), never the step simulator.
    """
    time_flags = [flag for flag, (name, _) in TRACE_FLAGS.items() if getattr(args, name) is not None]
    if args.trace is None:
        if time_flags and (time_flags[0] == "--time-scale" or not _timed(args) or clock_only):
            why = "; the sweep's generated arrivals are Poisson at --rate-per-s" if clock_only else ""
            raise UsageError(f"{time_flags[0]} applies to a --trace file only{why}")
        return generate(traffic_config(args))
    if given := given_generator_flags(args):
        raise UsageError(f"{given[0]} applies to generated traffic; a --trace file brings its own requests")
    name = show_name(args.trace)
    try:
        data = read_trace_bytes(args.trace)
        if unused := _unused_time_flag(args, time_flags, is_azure(data), clock_only, name):
            raise UsageError(unused)
        requests = parse_trace(data, args.trace, trace_options(args))
    except (TraceError, LimitError) as exc:
        raise UsageError(str(exc)) from None
    if not requests:
        raise UsageError(f"{name}: no requests; expected at least one row after the header")
    return requests


def _timed(args: argparse.Namespace) -> bool:
    """Return whether the command runs on a clock in ms (a --cost, or the online replay)."""
    return getattr(args, "cost", "unit") != "unit" or getattr(args, "online", False)


def _unused_time_flag(args, time_flags: list[str], azure: bool, clock_only: bool, name: str) -> str | None:
    """Return why a given --step-ms or --time-scale would change nothing for this trace and command, else None."""
    for flag in time_flags:
        if flag == "--time-scale" and not azure:
            return f"--time-scale applies to Azure-format traces only; {name} is a plain CSV"
        if flag == "--step-ms" and not azure and not _timed(args):
            return f"--step-ms applies to Azure-format traces only (or with --cost); {name} is a plain CSV"
        if flag == "--step-ms" and azure and (clock_only or getattr(args, "online", False)):
            return (
                f"--step-ms applies to plain-CSV traces here; {name}'s Azure timestamps are read to the "
                "millisecond (scale them with --time-scale)"
            )
    return None


def is_azure(data: bytes) -> bool:
    """Return whether a trace's first line is the Azure header."""
    first = data[:200].decode("utf-8-sig", "replace").lstrip("\ufeff").splitlines()[:1]
    return bool(first) and tuple(c.strip() for c in first[0].split(",")) == AZURE_COLUMNS


def describe_traffic(args: argparse.Namespace, requests: list[Request], arrivals: bool = True) -> str:
    """Return a one-line description of the workload (`arrivals=False`: its arrivals are described elsewhere)."""
    if args.trace is not None:
        return f"{len(requests)} requests from {show_name(args.trace)}"
    c = traffic_config(args)
    when = f"over the first {c.arrival_window} steps" if c.arrivals == "window" else f"Poisson at {c.rate}/step"
    shape = f"{c.lengths} lengths (mean {c.mean_tokens}, cap {c.max_tokens}" + (
        f", tail {c.tail})" if c.lengths == "heavy" else ")"
    )
    return f"{c.requests} requests, {shape}" + (f", arriving {when}" if arrivals else "") + f", seed {c.seed}"
