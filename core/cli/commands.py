"""The core's command line (simulate, compare, sweep) and the frame other packages register their commands in."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import replace

from core.cli import report
from core.cli.args import (
    SWEEP_EXCLUDED,
    UsageError,
    add_traffic_args,
    bounded_float,
    bounded_int,
    describe_traffic,
    load_requests,
    traffic_config,
)
from core.cli.cost_flags import (
    add_cost_args,
    cost_from_args,
    describe_cost,
    requests_in_ms,
    step_ms,
    timed_text,
)
from core.cli.memory_flags import add_memory_args, memory_from_args, token_budget
from core.clock.cost import ROOFLINE_FIELDS, ROOFLINE_RANGES, UnitCost
from core.clock.hardware import ACCELERATORS, DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE, MODEL_SHAPES, cost_model
from core.limits import MAX_DRAIN_STEPS, MAX_SLOTS, LimitError, one_line, show_name, show_text
from core.measure.lineup import Entry, parse_entry, refuse_repeats
from core.measure.losses import losses
from core.measure.metrics import compare, compute_metrics
from core.measure.serving import serving_metrics
from core.measure.sweep import (
    DEFAULT_BATCHES,
    DEFAULT_RATE_PER_S,
    SWEEP_TRAFFIC,
    decode_knee,
    knee,
    poisson_requests,
    sweep,
)
from core.sched.policies import REGISTRY, get_policy
from core.sched.schedule import simulate
from core.sched.settings import Setting
from core.sched.timed import simulate_timed, timed_metrics
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

Command = Callable[[argparse.Namespace], str]
Registrar = Callable[..., dict[str, Command]]  # (subparsers) -> runners by command name


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


def _add_simulate(sub) -> None:
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


def _add_compare(sub) -> None:
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
        type=_policy_list,
        default="static,continuous",  # a string default goes through the type, as a given list does
        help="comma-separated registered policies, the first the baseline, each with settings of its own if wanted "
        "(vllm,vllm:scheduling_policy=priority); default static,continuous; registered: " + ", ".join(REGISTRY),
    )
    timeout_flag(p)
    add_cost_args(p)
    add_memory_args(p)
    add_knob_args(p)
    for name, what in (("ttft", "time to first token"), ("itl", "p99 of a request's own inter-token gaps")):
        p.add_argument(
            f"--{name}-target",
            type=bounded_float(0.0, 1e9),
            default=None,
            help=f"serving target: {what}, in ms under --cost, in steps without; with both targets compare adds "
            "TTFT, ITL, goodput, SLO attainment and fairness (default: none)",
        )
    json_flag(p, "each policy's metrics and the ratios")


def _add_sweep(sub) -> None:
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
    json_flag(p, "the points and the knee")


def _simulate(args) -> str:
    if args.batch_timeout is not None and not get_policy(args.policy).has_timeout:
        raise UsageError(f"--batch-timeout applies to a policy with a timeout ({_with('has_timeout')}) only")
    memory = memory_from_args(args, (args.policy,))
    budget = token_budget(args, args.policy, args.slots)
    cost = cost_from_args(args)
    requests = load_requests(args)
    (policy,) = policies_with_knobs(args, (args.policy,))
    run = simulate(requests, args.slots, policy, batch_timeout(args), memory, budget)
    metrics = compute_metrics(run, args.window)
    timed = _timed(args, requests, cost, args.policy, memory, budget) if cost else None
    if args.json:
        doc = report.run_json(run, metrics, args.window)
        if timed:
            doc["timed"] = {"cost": describe_cost(cost), **timed.as_dict()}
        return report.dumps(doc)
    text = report.run_text(run, metrics)
    if timed:
        text += f"\ntime under the {describe_cost(cost)} cost model: drain {timed.drain_ms:,.1f} ms, "
        text += f"{timed.tokens_per_s:,.0f} tokens/s, TTFT p50 {timed.ttft_ms['p50']:,.1f} ms, "
        text += f"inter-token p50 {timed.itl_ms['p50']:,.1f} ms, end-to-end p99 {timed.e2e_ms['p99']:,.1f} ms"
    return text


def _timed_run(args, requests, cost, policy: str, memory=None, budget=None):
    """Return one policy's run on the cost model's clock, arrivals in milliseconds (steps under the unit cost)."""
    if cost.name == "unit":
        timeout, arrivals = batch_timeout(args), requests
    else:
        timeout, arrivals = batch_timeout(args) * step_ms(args), requests_in_ms(args, requests)
    timeout = timeout if get_policy(policy).has_timeout else 0.0
    return simulate_timed(arrivals, args.slots, policy, cost, timeout, memory, budget)


def _timed(args, requests, cost, policy: str, memory=None, budget=None):
    """Return the timed metrics of one policy on the workload, arrivals in milliseconds."""
    return timed_metrics(_timed_run(args, requests, cost, policy, memory, budget))


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


def policies_with_knobs(args, entries) -> list:
    """Return each entry's policy with the settings the flags give, then the entry's own; refuse a flag none has.

    An entry is a name or a lineup `Entry` (`vllm:scheduling_policy=priority`).
    """
    settings = registered_settings()
    given = {name: getattr(args, name) for name in settings if getattr(args, name, None) is not None}
    out = []
    for entry in entries:
        name, own = (entry, {}) if isinstance(entry, str) else (entry.name, dict(entry.knobs))
        pol = get_policy(name)
        mine = {**{k: v for k, v in given.items() if k in pol.knobs}, **own}
        try:
            out.append(pol.with_knobs(**mine) if mine else pol)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    for key in given:
        if not any(key in pol.knobs for pol in out):
            having = ", ".join(n for n, p in REGISTRY.items() if key in p.knobs)
            raise UsageError(f"{settings[key].flag} applies to a policy with that setting ({having}) only")
    return out


def _with(trait: str) -> str:
    """Return the registered policies that have `trait`, for a message."""
    return ", ".join(name for name, pol in REGISTRY.items() if getattr(pol, trait))


def _policy_list(text: str) -> tuple[Entry, ...]:
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


def _compare(args) -> str:
    keys = tuple(entry.text() for entry in args.policies)  # the columns: an entry as written, its settings in it
    objects = dict(zip(keys, policies_with_knobs(args, args.policies)))
    pols = tuple(objects.values())
    if args.batch_timeout is not None and not any(p.has_timeout for p in pols):
        raise UsageError(f"--batch-timeout applies to a policy with a timeout ({_with('has_timeout')}) only")
    memory = memory_from_args(args, pols)
    budgets = {k: token_budget(args, p, args.slots, pols) for k, p in objects.items()}
    cost = cost_from_args(args)
    requests = load_requests(args)
    timeout = lambda k: batch_timeout(args) if objects[k].has_timeout else 0  # noqa: E731
    runs = {k: simulate(requests, args.slots, p, timeout(k), memory, budgets[k]) for k, p in objects.items()}
    result = compare(*runs.values(), names=keys)
    timed = {k: _timed(args, requests, cost, p, memory, budgets[k]) for k, p in objects.items()} if cost else None
    serving = _serving(args, requests, cost, memory, budgets, objects)
    if args.json:
        doc = result.as_dict()
        doc["losses"] = {k: losses(run).as_dict() for k, run in runs.items()}
        for k, run in runs.items():
            if run.schedule is not None and not memory.unlimited:
                doc[k].update(run.schedule.memory_metrics())
        if timed:
            doc["timed"] = {"cost": describe_cost(cost), **{k: m.as_dict() for k, m in timed.items()}}
        if serving:
            doc["serving"] = {**serving[0], **{k: m.as_dict() for k, m in serving[1].items()}}
        return report.dumps(doc)
    text = report.comparison_text(result, describe_traffic(args, requests), args.slots, runs)
    if not memory.unlimited:
        width = max(len(k) for k in keys) + 1
        text += "\n\n" + "\n".join(f"{k:<{width}}{report.memory_text(run)}" for k, run in runs.items())
    if timed:
        text += "\n\n" + timed_text(cost, timed)
    if serving:
        text += "\n\n" + report.serving_text(*serving)
    return text


def _serving(args, requests, cost, memory, budgets, objects):
    """Return (targets, entry -> serving figures) when targets were given, on the cost's clock or on steps."""
    if args.ttft_target is None and args.itl_target is None:
        return None
    if args.ttft_target is None or args.itl_target is None:
        raise UsageError("--ttft-target and --itl-target go together: goodput counts requests that met both")
    clock = cost or UnitCost()
    unit = "steps" if clock.name == "unit" else "ms"
    runs = {k: _timed_run(args, requests, clock, objects[k], memory, budget) for k, budget in budgets.items()}
    figures = {p: serving_metrics(run, clock, args.ttft_target, args.itl_target) for p, run in runs.items()}
    return {"unit": unit, "ttft_target": args.ttft_target, "itl_target": args.itl_target}, figures


def _batches(text: str) -> tuple[int, ...]:
    try:
        batches = tuple(bounded_int(1, MAX_SLOTS)(x) for x in text.split(","))
    except argparse.ArgumentTypeError:
        batches = ()
    if not batches:
        raise UsageError(f"--batches: expected comma-separated integers in 1..{MAX_SLOTS}, got {text[:40]!r}")
    return batches


def _sweep_cost(args):
    """Return (the sweep's cost model, the words naming it): the roofline with its presets and edits, or a profile."""
    roofline_flags = ["--accelerator", "--model-shape"] + ["--" + f.name.replace("_", "-") for f in COST_FIELDS]
    given = [flag for flag in roofline_flags if getattr(args, flag[2:].replace("-", "_")) is not None]
    if args.cost != "roofline":
        if given:
            profile = show_name(args.cost)
            raise UsageError(f"{given[0]} applies to --cost roofline only; {profile} is a measured profile")
        model = cost_from_args(args)  # refuses unit and junk with a message naming what is allowed
        if model is None:
            raise UsageError("--cost unit has no time: the sweep needs roofline or a profile (FILE.json)")
        return model, describe_cost(model)
    accelerator, shape = args.accelerator or DEFAULT_ACCELERATOR, args.model_shape or DEFAULT_MODEL_SHAPE
    try:
        preset = cost_model(accelerator, shape)
        overrides = {f.name: getattr(args, f.name) for f in COST_FIELDS if getattr(args, f.name) is not None}
        model = replace(preset, **overrides)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    words = f"{MODEL_SHAPES[shape].name} on {ACCELERATORS[accelerator].name}" + (", edited" if model != preset else "")
    return model, words


def _sweep(args) -> str:
    model, presets = _sweep_cost(args)
    batches = _batches(args.batches)
    requests = load_requests(args, clock_only=True)
    if args.trace is not None and args.rate_per_s is not None:
        raise UsageError("--rate-per-s applies to generated traffic; a --trace file brings its own arrival times")
    rate = args.rate_per_s or DEFAULT_RATE_PER_S
    # Arrivals in ms: a trace's as `compare --cost` reads them, generated ones Poisson at the rate.
    timed = requests_in_ms(args, requests) if args.trace is not None else poisson_requests(traffic_config(args), rate)
    points = sweep(rate, batches, model, itl_target_ms=args.itl_target_ms, requests=timed)
    best, decode_best = knee(points), decode_knee(points)
    if args.json:
        return report.dumps(
            {
                "points": [vars(p) for p in points],
                "knee": best.batch if best else None,
                "decode_knee": decode_best.batch if decode_best else None,
            }
        )
    assumed = report.sweep_assumptions(
        describe_traffic(args, requests, arrivals=False), None if args.trace is not None else rate, model, presets
    )
    return assumed + "\n" + report.sweep_text(points, best, args.itl_target_ms, decode_best)


def register(sub) -> dict[str, Command]:
    """Add the core's subcommands (simulate, compare, sweep); return their runners by name."""
    _add_simulate(sub)
    _add_compare(sub)
    _add_sweep(sub)
    return {"simulate": _simulate, "compare": _compare, "sweep": _sweep}


def build_parser(
    registrars: Iterable[Registrar], prog: str = "batchviz"
) -> tuple[argparse.ArgumentParser, dict[str, Command]]:
    """Return the parser (named `prog`) with every registrar's subcommands, and the runners by command name."""
    parser = Parser(prog=prog, description="Static vs continuous batching for LLM serving, step by step.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    commands: dict[str, Command] = {}
    for registrar in registrars:
        commands.update(registrar(sub))
    return parser, commands


def main(argv: list[str] | None = None, registrars: Iterable[Registrar] = (register,), prog: str = "batchviz") -> int:
    """Run the command line; return the exit status (2 for bad input, with one line on stderr)."""
    parser, commands = build_parser(registrars, prog)
    args = parser.parse_args(argv)
    try:
        print(commands[args.command](args))
    except (UsageError, LimitError) as exc:
        print(f"{prog} {args.command}: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `batchviz ... | head`: the reader left early, which is not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit-time flush is quiet too
    return 0
