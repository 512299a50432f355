"""The core's command line (simulate, compare, sweep) and the frame other packages register their commands in."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import replace

from core.cli import report
from core.cli.args import (
    UsageError,
    bounded_int,
    describe_traffic,
    load_requests,
    traffic_config,
)
from core.cli.cost_flags import (
    cost_from_args,
    default_cost,
    describe_cost,
    requests_in_ms,
    step_ms,
    timed_text,
)
from core.cli.memory_flags import memory_from_args, token_budget
from core.cli.parsers import (
    COST_FIELDS,
    Parser,
    add_compare,
    add_simulate,
    add_sweep,
    batch_timeout,
    registered_settings,
)
from core.clock.cost import UnitCost
from core.clock.hardware import ACCELERATORS, DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE, MODEL_SHAPES, cost_model
from core.limits import MAX_SLOTS, LimitError, one_line, show_name
from core.measure.lineup import entry_slots, rows_used
from core.measure.losses import losses
from core.measure.metrics import compare, compute_metrics
from core.measure.serving import serving_metrics
from core.measure.sweep import (
    DEFAULT_RATE_PER_S,
    decode_knee,
    knee,
    poisson_requests,
    sweep,
)
from core.sched.policies import REGISTRY, get_policy
from core.sched.schedule import simulate
from core.sched.timed import simulate_timed, timed_metrics

Command = Callable[[argparse.Namespace], str]
Registrar = Callable[..., dict[str, Command]]  # (subparsers) -> runners by command name


def _simulate(args) -> str:
    if args.batch_timeout is not None and not get_policy(args.policy).has_timeout:
        raise UsageError(f"--batch-timeout applies to a policy with a timeout ({_with('has_timeout')}) only")
    clock = default_cost(args, (args.policy,))
    memory = memory_from_args(args, (args.policy,))
    cost = cost_from_args(args)
    requests = load_requests(args)
    (policy,) = policies_with_knobs(args, (args.policy,))
    budget = token_budget(args, policy, args.slots, requests=requests)
    slots = entry_slots(policy, args.slots, len(requests), budget)  # TGI: no request cap of its own
    run = rows_used(simulate(requests, slots, policy, batch_timeout(args), memory, budget))
    metrics = compute_metrics(run, args.window)
    timed = _timed(args, requests, cost, policy, memory, budget, slots) if cost else None
    if args.json:
        doc = report.run_json(run, metrics, args.window)
        if timed:
            doc["timed"] = {"cost": describe_cost(cost), **timed.as_dict()}
        return report.dumps(doc)
    text = (clock + "\n" if clock else "") + report.run_text(run, metrics)
    if timed:
        text += f"\ntime under the {describe_cost(cost)} cost model: drain {timed.drain_ms:,.1f} ms, "
        text += f"{timed.tokens_per_s:,.0f} tokens/s, TTFT p50 {timed.ttft_ms['p50']:,.1f} ms, "
        text += f"inter-token p50 {timed.itl_ms['p50']:,.1f} ms, end-to-end p99 {timed.e2e_ms['p99']:,.1f} ms"
    return text


def _timed_run(args, requests, cost, policy, memory=None, budget=None, slots=None):
    """Return one policy's run on the cost model's clock, arrivals in milliseconds (steps under the unit cost)."""
    if cost.name == "unit":
        timeout, arrivals = batch_timeout(args), requests
    else:
        timeout, arrivals = batch_timeout(args) * step_ms(args), requests_in_ms(args, requests)
    timeout = timeout if get_policy(policy).has_timeout else 0.0
    return rows_used(simulate_timed(arrivals, slots or args.slots, policy, cost, timeout, memory, budget))


def _timed(args, requests, cost, policy, memory=None, budget=None, slots=None):
    """Return the timed metrics of one policy on the workload, arrivals in milliseconds."""
    return timed_metrics(_timed_run(args, requests, cost, policy, memory, budget, slots))


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


def _compare(args) -> str:
    keys = tuple(entry.text() for entry in args.policies)  # the columns: an entry as written, its settings in it
    objects = dict(zip(keys, policies_with_knobs(args, args.policies)))
    pols = tuple(objects.values())
    if args.batch_timeout is not None and not any(p.has_timeout for p in pols):
        raise UsageError(f"--batch-timeout applies to a policy with a timeout ({_with('has_timeout')}) only")
    clock = default_cost(args, pols)
    memory = memory_from_args(args, pols)
    cost = cost_from_args(args)
    requests = load_requests(args)
    budgets = {k: token_budget(args, p, args.slots, pols, requests) for k, p in objects.items()}
    slots = {k: entry_slots(p, args.slots, len(requests), budgets[k]) for k, p in objects.items()}
    timeout = lambda k: batch_timeout(args) if objects[k].has_timeout else 0  # noqa: E731
    runs = {k: rows_used(simulate(requests, slots[k], p, timeout(k), memory, budgets[k])) for k, p in objects.items()}
    result = compare(*runs.values(), names=keys)
    timed = (
        {k: _timed(args, requests, cost, p, memory, budgets[k], slots[k]) for k, p in objects.items()} if cost else None
    )
    serving = _serving(args, requests, cost, memory, budgets, objects, slots)
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
    text = (clock + "\n" if clock else "") + text
    if not memory.unlimited:
        width = max(len(k) for k in keys) + 1
        text += "\n\n" + "\n".join(f"{k:<{width}}{report.memory_text(run)}" for k, run in runs.items())
    if timed:
        text += "\n\n" + timed_text(cost, timed)
    if serving:
        text += "\n\n" + report.serving_text(*serving)
    return text


def _serving(args, requests, cost, memory, budgets, objects, slots):
    """Return (targets, entry -> serving figures) when targets were given, on the cost's clock or on steps."""
    if args.ttft_target is None and args.itl_target is None:
        return None
    if args.ttft_target is None or args.itl_target is None:
        raise UsageError("--ttft-target and --itl-target go together: goodput counts requests that met both")
    clock = cost or UnitCost()
    unit = "steps" if clock.name == "unit" else "ms"
    runs = {k: _timed_run(args, requests, clock, objects[k], memory, b, slots[k]) for k, b in budgets.items()}
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
    add_simulate(sub)
    add_compare(sub)
    add_sweep(sub)
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
