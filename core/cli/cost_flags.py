"""The CLI's time flags: `--cost unit|roofline|FILE.json` with presets, and the workload's arrivals in milliseconds."""

from __future__ import annotations

import argparse
from dataclasses import replace

from core.cli.args import UsageError, is_azure
from core.cli.report import column_width, how_much_sooner
from core.clock.cost import Fitted, StepCost
from core.clock.hardware import ACCELERATORS, DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE, MODEL_SHAPES, cost_model
from core.limits import show_name
from core.sched.policies import REGISTRY, get_policy
from core.sched.timed import TimedMetrics
from core.workload.request import Request
from core.workload.traces import DEFAULT_STEP_MS, TraceError, TraceOptions, parse_trace, read_trace_bytes


def add_cost_args(parser: argparse.ArgumentParser) -> None:
    """Add --cost and its presets; `--step-ms` (a traffic flag) then also says how long a generated arrival step is."""
    group = parser.add_argument_group(
        "time (default: every pass costs one step; the roofline where an engine preset is listed)"
    )
    group.add_argument(
        "--cost",
        default=None,
        metavar="unit|roofline|FILE.json",
        help="what a forward pass costs: unit (one step), roofline (memory or compute, whichever is slower, for "
        "--accelerator and --model-shape), or a profile measured by `batchviz calibrate` (default: roofline where "
        f"an engine preset is listed ({', '.join(engine_presets())}), else unit). With a cost, arrivals are in "
        "milliseconds: Azure timestamps to the millisecond, and a generated or plain-CSV arrival step is --step-ms "
        f"milliseconds (default {DEFAULT_STEP_MS:g})",
    )
    group.add_argument(
        "--accelerator",
        choices=list(ACCELERATORS),
        default=None,
        help=f"--cost roofline: the accelerator (default {DEFAULT_ACCELERATOR})",
    )
    group.add_argument(
        "--model-shape",
        choices=list(MODEL_SHAPES),
        default=None,
        help=f"--cost roofline: the model (default {DEFAULT_MODEL_SHAPE})",
    )


def engine_presets() -> tuple[str, ...]:
    """Return the registered policies that follow a serving engine (Policy.engine set)."""
    return tuple(name for name, pol in REGISTRY.items() if pol.engine)


def default_cost(args: argparse.Namespace, policies) -> str | None:
    """Set --cost where it was not given: the roofline when a policy is an engine preset, else unit steps.

    An engine preset runs at its engine's defaults (prompt chunks of thousands of tokens, TGI without a request cap),
    which unit steps cannot judge: there a 2,048-token chunk costs what one decode does. Return the line saying the
    clock was chosen so (None where --cost was given, or unit steps were kept).
    """
    if args.cost is not None:
        return None
    if not any(get_policy(p).engine for p in policies):
        args.cost = "unit"
        return None
    args.cost = "roofline"
    model = MODEL_SHAPES[args.model_shape or DEFAULT_MODEL_SHAPE].name
    accelerator = ACCELERATORS[args.accelerator or DEFAULT_ACCELERATOR].name
    return (
        f"time: the roofline of {model} on {accelerator} (engine presets are judged on a clock; --cost unit for steps)"
    )


def cost_from_args(args: argparse.Namespace) -> StepCost | None:
    """Return the cost model the flags ask for, or None for unit steps (the step simulator, unchanged)."""
    presets = [f for f in ("--accelerator", "--model-shape") if getattr(args, f[2:].replace("-", "_")) is not None]
    if args.cost == "unit":
        if presets:
            raise UsageError(f"{presets[0]} applies to --cost roofline only")
        return None
    if args.cost == "roofline":
        return cost_model(args.accelerator or DEFAULT_ACCELERATOR, args.model_shape or DEFAULT_MODEL_SHAPE)
    if presets:
        raise UsageError(f"{presets[0]} applies to --cost roofline only; {show_name(args.cost)} is a measured profile")
    if not args.cost.endswith(".json"):
        raise UsageError(f"--cost: expected unit, roofline or a .json profile, got {args.cost[:60]!r}")
    return load_profile("--cost", args.cost)


def load_profile(flag: str, path: str) -> Fitted:
    """Return the profile a flag names, or raise UsageError naming the flag, the file and the field."""
    try:
        return Fitted.load(path)
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}") from None


def step_ms(args: argparse.Namespace) -> float:
    """Return how many milliseconds a generated or plain-CSV arrival step is."""
    return DEFAULT_STEP_MS if args.step_ms is None else args.step_ms


def requests_in_ms(args: argparse.Namespace, requests: list[Request]) -> list[Request]:
    """Return the workload with arrivals in milliseconds: Azure traces re-read to the millisecond, others scaled."""
    if args.trace is not None:
        scale = 1.0 if args.time_scale is None else args.time_scale
        try:
            data = read_trace_bytes(args.trace)
            if is_azure(data):
                return parse_trace(data, args.trace, TraceOptions(step_ms=1.0, time_scale=scale))
        except TraceError as exc:
            raise UsageError(str(exc)) from None
    per_step = step_ms(args)
    return [replace(r, arrival=round(r.arrival * per_step)) for r in requests]


def timed_text(cost: StepCost, by_policy: dict[str, TimedMetrics]) -> str:
    """Return the time-based figures of each policy side by side, and each one's ratios to the first."""
    ms = list(by_policy.values())
    rows = [("drain, ms", [m.drain_ms for m in ms]), ("tokens/s", [m.tokens_per_s for m in ms])]
    for label, key in (("TTFT", "ttft_ms"), ("inter-token", "itl_ms"), ("end-to-end", "e2e_ms")):
        for q in ("p50", "p99"):
            rows.append((f"{label} {q}, ms", [getattr(m, key)[q] for m in ms]))
    names = list(by_policy)
    w = column_width(names)
    lines = [f"time under the {describe_cost(cost)} cost model", f"{'':<22}" + "".join(f"{n:>{w}}" for n in names)]
    lines += [f"{label:<22}" + "".join(f"{x:>{w},.1f}" for x in xs) for label, xs in rows]
    base = ms[0]
    than = f" than {names[0]}" if len(names) > 2 else ""
    for name, m in zip(names[1:], ms[1:]):
        ratio = base.drain_ms / m.drain_ms if m.drain_ms else 1.0
        sooner = how_much_sooner(ratio, "sooner", "later")
        # "as soon as vllm (1.00x)", "1.10x later in time than vllm"
        sooner = (
            sooner.replace(" (", f" as {names[0]} (", 1)
            if sooner.startswith("as ") and than
            else (f"{sooner} in time{than}")
        )
        lines.append(f"{name} drains {sooner}; tokens/s x{_ratio(m, base):.2f}")
    return "\n".join(lines)


def _ratio(a: TimedMetrics, b: TimedMetrics) -> float:
    return a.tokens_per_s / b.tokens_per_s if b.tokens_per_s else 1.0


def describe_cost(cost: StepCost) -> str:
    """Return the cost model in a few words."""
    if cost.name == "fitted":
        return f"fitted ({cost.model or 'a model'} on {cost.device or 'a device'})"
    for a in ACCELERATORS.values():
        for m in MODEL_SHAPES.values():
            if cost == cost_model(a.key, m.key):
                return f"roofline ({m.name} on {a.name})"
    return cost.name
