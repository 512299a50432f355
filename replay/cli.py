"""`batchviz replay`: run the same schedules through a real model (torch is imported only when it runs)."""

from __future__ import annotations

import argparse
import importlib.util
import sys

from core.cli import report
from core.cli.args import (
    UsageError,
    add_traffic_args,
    bounded_int,
    check_output,
    describe_traffic,
    file_name,
    load_requests,
)
from core.cli.memory_flags import add_token_budget_arg, token_budget
from core.cli.parsers import COMPARE_SLOTS, COMPARE_TRAFFIC, batch_timeout, json_flag, slots_flag, timeout_flag
from core.limits import show_name
from core.sched.policies import CHAPTER_PAIR, REGISTRY, get_policy

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
    p.add_argument(
        "--policy",
        choices=[name for name, policy in REGISTRY.items() if not policy.forms_batches],
        default="continuous",
        help="what runs beside static: any registered policy that admits between passes (continuous, chunked "
        "prefill under --token-budget, sjf, priority), the core's schedule pass for pass (default continuous)",
    )
    add_token_budget_arg(p)
    online = p.add_argument_group("online (in real time)")
    online.add_argument(
        "--online",
        action="store_true",
        help="requests arrive on the wall clock (a generated step is --step-ms ms; Azure timestamps scaled by "
        "--time-scale) and the core's timed schedulers decide each pass from what has arrived; the simulator, on a "
        "profile of this model and device, predicts the same workload beside what was measured (default off: the "
        "core schedules first and the replay runs its steps back to back)",
    )
    online.add_argument(
        "--profile",
        metavar="FILE.json",
        type=file_name,
        help="--online: the profile that predicts continuous batching (`batchviz calibrate` on this device); "
        "default: both policies' profiles measured now, before the replay (about 15 s for tiny, 80 s for small "
        "on one CPU thread here)",
    )
    online.add_argument(
        "--static-profile",
        metavar="FILE.json",
        type=file_name,
        help="--online: the profile that predicts static batching (`batchviz calibrate --path dense`); default: "
        "measured now when --profile is not given, else --profile's",
    )
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

    for flag in ("profile", "static_profile"):
        if getattr(args, flag) is not None and not args.online:
            raise UsageError(f"--{flag.replace('_', '-')} applies to --online only")
    if args.online and get_policy(args.policy).fast_timed is None:
        followed = ", ".join(name for name, p in REGISTRY.items() if p.fast_timed is not None)
        raise UsageError(f"--online replays {followed} (on the wall clock) only: --policy {args.policy} runs offline")
    budget = token_budget(args, args.policy, args.slots)  # refused before the traffic is read or the model built
    requests = load_requests(args)
    given = _given_profiles(args)  # read and checked before the model is built
    try:
        engine = Engine(args.model, args.device, threads=args.threads)
        engine.check_fits(requests, args.slots)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    show = not args.no_progress and sys.stderr.isatty()
    if args.online:
        return _run_online(args, engine, requests, given, show)
    static = engine.replay(requests, args.slots, "static", batch_timeout(args), on_step=_progress("static", show))
    ragged = engine.replay(requests, args.slots, args.policy, token_budget=budget, on_step=_progress(args.policy, show))
    doc = summary(static, ragged)
    if args.json:
        return report.dumps(doc)
    return summary_text(doc, describe_traffic(args, requests))


def _given_profiles(args: argparse.Namespace) -> dict:
    """Return the profiles --profile and --static-profile name, by policy (none given: an empty dict)."""
    from core.cli.cost_flags import load_profile

    flags = (("continuous", "--profile", args.profile), ("static", "--static-profile", args.static_profile))
    return {policy: load_profile(flag, path) for policy, flag, path in flags if path is not None}


def _run_online(args: argparse.Namespace, engine, requests, given: dict, show: bool) -> str:
    """Replay both policies in real time, predict each with the profile, and return the side-by-side table."""
    from core.cli.cost_flags import requests_in_ms, step_ms
    from replay.calibrate import profiles
    from replay.online import online_summary, online_text, replay_online

    timed = requests_in_ms(args, requests)
    if given:
        costs = {"continuous": given.get("continuous", given.get("static")), "static": given.get("static")}
        costs["static"] = costs["static"] or costs["continuous"]
    else:
        bar = _progress("calibrate", show)
        costs = profiles(args.model, args.device, args.slots, on_point=lambda done, total: bar(done - 1, total))
    results = {}
    for policy in CHAPTER_PAIR:
        bar = _progress(policy, show)
        timeout_ms = batch_timeout(args) * step_ms(args) if get_policy(policy).has_timeout else 0.0
        on_pass = (lambda done, total, bar=bar: bar(done - 1, total)) if show else None
        results[policy] = replay_online(engine, timed, args.slots, policy, timeout_ms, on_pass=on_pass)
    doc = online_summary(results, costs)
    if args.json:
        return report.dumps(doc)
    return online_text(doc, describe_traffic(args, requests))


def _add_calibrate(sub) -> None:
    """Add `calibrate`: measure a model's pass times into a profile that `--cost FILE.json` reads."""
    p = sub.add_parser(
        "calibrate",
        help="measure a real model's forward-pass times into a profile for --cost FILE.json",
        description="Time the replay engine's whole pass (batch built, forward, tokens sampled) on a grid of "
        "decoding rows (0-64), prefill tokens (0-1,024) and cached context (0-6,144 tokens), the median of three "
        "passes each, and save the profile as JSON. `simulate` and `compare` read it with --cost FILE.json, and "
        "`replay --online` predicts with it. Needs torch; about 5 s for `tiny` and 30 s for `small` on one CPU "
        "thread here.",
    )
    p.add_argument(
        "--device", choices=("auto", "cpu", "cuda"), default="auto", help="default auto: CUDA when present, else CPU"
    )
    p.add_argument("--model", choices=PRESET_NAMES, default="small", help="size preset, random weights (default small)")
    p.add_argument(
        "--path",
        choices=("ragged", "dense"),
        default="ragged",
        help="which pass to time: ragged (continuous batching's, the default) or dense (static batching's padded "
        "rectangle, for replay --online --static-profile)",
    )
    p.add_argument(
        "--out",
        type=file_name,
        default=None,
        help="where to write the profile, checked before measuring (default profile-MODEL-DEVICE.json here)",
    )
    p.add_argument("--threads", type=bounded_int(1, 256), default=1, help="CPU threads for torch, 1..256 (default 1)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr (default: shown on a tty)")


def run_calibrate(args: argparse.Namespace) -> str:
    """Measure the profile, write it, and return where it went with its smallest and largest pass."""
    if importlib.util.find_spec("torch") is None:
        raise UsageError(ENABLE)
    from replay.calibrate import calibrate
    from replay.engine import resolve_device

    try:
        device = resolve_device(args.device).type
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    suffix = "" if args.path == "ragged" else "-dense"
    out = args.out if args.out is not None else f"profile-{args.model}-{device}{suffix}.json"
    check_output("--out", out)  # before 5-30 s of measuring, not after
    show = not args.no_progress and sys.stderr.isatty()
    bar = _progress("calibrate", show)
    try:
        profile = calibrate(
            args.model,
            args.device,
            on_point=lambda done, total: bar(done - 1, total),
            threads=args.threads,
            path=args.path,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        path = show_name(profile.save(out))
    except OSError as exc:  # the place was checked, but a disk can fill or a directory vanish meanwhile
        raise UsageError(f"--out: cannot write {show_name(out)}: {exc.strerror or exc}") from None
    times = [t for plane in profile.ms for line in plane for t in line]
    return (
        f"wrote {path}: {args.model} on {profile.device}, {len(times)} grid points, passes from {min(times):.2f} to "
        f"{max(times):.2f} ms; use it with --cost {path}"
    )


def register(sub) -> dict:
    """Add the replay's subcommands; return their runners by name."""
    _add_replay(sub)
    _add_calibrate(sub)
    return {"replay": run_replay, "calibrate": run_calibrate}
