"""The command line's parsers: each subcommand's flags, the engines' settings as flags, and one-line errors.

Every engine setting's flag is made from its declaration (core/sched/settings.py); `commands.py` runs what these
parse.
"""

from __future__ import annotations

import argparse

from core.cli.args import SWEEP_EXCLUDED, add_traffic_args, bounded_float, bounded_int
from core.cli.cost_flags import add_cost_args
from core.cli.memory_flags import add_memory_args
from core.clock.cost import ROOFLINE_FIELDS, ROOFLINE_RANGES
from core.clock.hardware import ACCELERATORS, DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE, MODEL_SHAPES, cost_model
from core.limits import MAX_DRAIN_STEPS, MAX_SLOTS, one_line, show_text
from core.measure.lineup import Entry, parse_entry, refuse_repeats
from core.measure.sweep import DEFAULT_BATCHES, DEFAULT_RATE_PER_S, SWEEP_TRAFFIC
from core.sched.policies import REGISTRY
from core.sched.settings import Setting
from core.workload.traffic import TrafficConfig

# The chapter's script: chat-shaped traffic on 8 slots; a typical seed drains ~3x faster under continuous batching.
COMPARE_TRAFFIC = TrafficConfig(
    seed=4, requests=256, arrival_window=64, mean_tokens=64, max_tokens=1024, tail=1.1, mean_prompt_tokens=128
)
COMPARE_SLOTS = 8
COST_HELP = {
    "params_b": "model parameters, billions",
    "bytes_per_param": "bytes per weight (2 for bf16)",
    "kv_bytes_per_token": "KV-cache bytes per cached token",
    "mem_bw_gbs": "memory bandwidth, GB/s",
    "tflops": "dense bf16 compute, TFLOP/s",
    "overhead_ms": "fixed cost per step, ms",
}

COST_FIELDS = ROOFLINE_FIELDS  # the cost model's numbers, one flag each

class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and exit status 2, without the usage dump."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)  # a prefix of a flag is refused, not guessed
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        """Print one line and exit with status 2 (argparse's hook)."""
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see --help)\n")


def slots_flag(parser: argparse.ArgumentParser, default: int, high: int = MAX_SLOTS) -> None:
    """Add --slots with its range and default in the help."""
    parser.add_argument(
        "--slots", type=bounded_int(1, high), default=default, help=f"batch slots, 1..{high} (default %(default)s)"
    )


def timeout_flag(parser: argparse.ArgumentParser) -> None:
    """Add --batch-timeout (static batching only; None when not given, so that any given value can be refused)."""
    parser.add_argument(
        "--batch-timeout",
        type=bounded_int(0, MAX_DRAIN_STEPS),
        default=None,
        help="static: steps the oldest waiting request may wait before a partial batch starts (default 0)",
    )


def batch_timeout(args: argparse.Namespace) -> int:
    """Return the static batch timeout in steps (0 when not given)."""
    return args.batch_timeout or 0


def json_flag(parser: argparse.ArgumentParser, what: str) -> None:
    """Add --json."""
    parser.add_argument("--json", action="store_true", help=f"print {what} as one JSON object (default: a text table)")


def add_simulate(sub) -> None:
    """Add `simulate`: one policy on the traffic, its timeline and metrics."""
    p = sub.add_parser(
        "simulate",
        help="schedule one policy; print the timeline and metrics",
        description="Schedule the traffic under one policy; print the per-slot timeline and the metrics.",
    )
    add_traffic_args(p, TrafficConfig())
    slots_flag(p, 4)
    p.add_argument("--policy", choices=REGISTRY, default="continuous", help="batching policy (default %(default)s)")
    timeout_flag(p)
    add_cost_args(p)
    add_memory_args(p)
    add_knob_args(p)
    p.add_argument(
        "--window",
        type=bounded_int(0, MAX_DRAIN_STEPS),
        default=None,
        help="steps shown and measured (default: the drain, the step the last request finishes)",
    )
    json_flag(p, "the contract object (requests, timeline, metrics)")


def add_compare(sub) -> None:
    """Add `compare`: policies side by side on the same traffic, the first the baseline."""
    p = sub.add_parser(
        "compare",
        help="policies side by side on the same traffic (the chapter's script: static vs continuous)",
        description="Policies (default static against continuous batching) on the same traffic and slots, side by "
        "side; the first is the baseline every ratio is taken against.",
    )
    add_traffic_args(p, COMPARE_TRAFFIC)
    slots_flag(p, COMPARE_SLOTS)
    p.add_argument(
        "--policies",
        type=policy_list,
        default="static,continuous",  # a string default goes through the type, as a given list does
        help="comma-separated registered policies, the first the baseline, each with settings of its own if wanted "
        "(vllm,vllm:scheduling_policy=priority); default static,continuous; registered: " + ", ".join(REGISTRY),
    )
    timeout_flag(p)
    add_cost_args(p)
    add_memory_args(p)
    add_knob_args(p)
    for name, what in (("ttft", "time to first token"), ("itl", "a request's mean time per output token, TPOT")):
        p.add_argument(
            f"--{name}-target",
            type=_positive_target,
            default=None,
            help=f"serving target: {what}, in ms under --cost, in steps without (a request meets the SLO with "
            "TTFT and mean TPOT within them, DistServe's); with both targets compare adds TTFT, pooled ITL, TPOT, "
            "longest stalls, goodput, SLO attainment and fairness (default: none)",
        )
    json_flag(p, "each policy's metrics and the ratios")


def _positive_target(text: str) -> float:
    """Return a serving target: a number above 0 (one of 0 is met by nobody; the Schedulers tab refuses it too)."""
    value = bounded_float(0.0, 1e9)(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, at most 1e9, got {show_text(text)}")
    return value


def add_sweep(sub) -> None:
    """Add `sweep`: continuous batching at each batch size on a step-time cost model, and the knee."""
    p = sub.add_parser(
        "sweep",
        help="throughput and p99 latency against batch size, with a step-time cost model",
        description="Continuous batching at each batch size, every step costed by a memory-or-compute model: "
        "throughput, latency and the knee (the largest batch meeting the inter-token latency target). "
        "Generated arrivals are Poisson at --rate-per-s; a --trace keeps its own arrival times "
        "(plain CSV arrivals are read as steps of --step-ms).",
    )
    add_traffic_args(p, SWEEP_TRAFFIC, exclude=SWEEP_EXCLUDED)
    p.add_argument(
        "--rate-per-s",
        type=bounded_float(0.001, 1e6),
        default=None,
        help=f"generated traffic: arrival rate, requests per second, 0.001..1e6 (default {DEFAULT_RATE_PER_S:g})",
    )
    p.add_argument(
        "--batches",
        default=",".join(map(str, DEFAULT_BATCHES)),
        help=f"comma-separated batch sizes, 1..{MAX_SLOTS} (default %(default)s)",
    )
    p.add_argument(
        "--itl-target-ms",
        type=bounded_float(0.001, 1e6),
        default=50.0,
        help="inter-token latency target, ms (default %(default)s)",
    )
    add_sweep_cost_args(p)
    json_flag(p, "the points and the knee")


def add_sweep_cost_args(p: argparse.ArgumentParser) -> None:
    """Add sweep's cost model flags: the accelerator and model presets, a measured profile, and each number."""
    p.add_argument(
        "--accelerator",
        choices=list(ACCELERATORS),
        default=None,
        help="cost model preset: memory bandwidth and dense bf16 compute as published: "
        + ", ".join(f"{a.key} ({a.name}: {a.mem_bw_gbs:g} GB/s, {a.tflops:g} TFLOP/s)" for a in ACCELERATORS.values())
        + f" (default {DEFAULT_ACCELERATOR})",
    )
    p.add_argument(
        "--model-shape",
        choices=list(MODEL_SHAPES),
        default=None,
        help="cost model preset: parameters and KV bytes per token, bf16: "
        + ", ".join(f"{m.key} ({m.params_b:g}B, {m.kv_bytes_per_token:,.0f} B/token)" for m in MODEL_SHAPES.values())
        + f" (default {DEFAULT_MODEL_SHAPE})",
    )
    p.add_argument(
        "--cost",
        default="roofline",
        metavar="roofline|FILE.json",
        help="the step-time cost model: roofline (the presets and flags here) or a profile measured by "
        "`batchviz calibrate` (default %(default)s)",
    )
    preset = cost_model()
    for f in COST_FIELDS:
        p.add_argument(
            "--" + f.name.replace("_", "-"),
            type=bounded_float(*ROOFLINE_RANGES[f.name]),
            default=None,
            help=f"cost model: {COST_HELP[f.name]}; overrides the preset (default {getattr(preset, f.name):g}, "
            "from the default presets)",
        )


def registered_settings() -> dict[str, Setting]:
    """Return every registered policy's engine settings by name, in registration order (each declared once)."""
    out: dict[str, Setting] = {}
    for pol in REGISTRY.values():
        for setting in pol.settings:
            out.setdefault(setting.name, setting)
    return out


def _setting_type(setting: Setting):
    """Return an argparse type that parses a flag's value as the setting does, refusing in its words."""

    def parse(text: str):
        try:
            return setting.parse(text)
        except ValueError:  # the flag is named already: say what it takes, as the other flags do
            raise argparse.ArgumentTypeError(f"expected {setting.allowed()}, got {show_text(text)}") from None

    return parse


def add_knob_args(parser) -> None:
    """Add every registered engine setting as a flag, by the engine's own name (applied to a policy that has it)."""
    for setting in registered_settings().values():
        parser.add_argument(setting.flag, type=_setting_type(setting), default=None, help=setting.describe())


def policy_list(text: str) -> tuple[Entry, ...]:
    """Return `--policies` as entries (`vllm`, `vllm:scheduling_policy=priority`): registered, distinct, two or more."""
    parts = [part.strip() for part in text.split(",")]
    unknown = [part.partition(":")[0] for part in parts if part.partition(":")[0] not in REGISTRY]
    if unknown:
        raise argparse.ArgumentTypeError(f"{show_text(unknown[0])} is not a policy; registered: {', '.join(REGISTRY)}")
    if len(parts) < 2:
        raise argparse.ArgumentTypeError(f"give at least two different policies, got {show_text(text)}")
    try:
        entries = tuple(parse_entry(part) for part in parts)
        refuse_repeats(entries)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return entries
