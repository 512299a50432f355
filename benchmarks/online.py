"""The online replay against the simulator's prediction: two loads, both policies, each model preset asked.

`./dev bench online [--model tiny|small] [--requests N] [--json]`. For each model: `calibrate` on this machine
(both profiles), then 256 chat-shaped requests (compare's lengths) replayed in real time at a light load (Poisson
arrivals at a tenth of what 8 slots serve under continuous batching: mostly idle under either policy) and a
saturated one (all of them inside 64 arrival steps: a queue builds). One arrival step lasts one full decode pass of
8 rows on that model. Prints every figure predicted, measured and the error, and the engine's overhead share; then
where the errors come from: each kind of pass, measured against what the profile prices it at, and that 8-row pass
timed again just before each replay (a machine whose speed drifts between the profile and a replay moves every
figure together).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

import torch

from core import generate
from core.cli.args import bounded_int
from core.cli.parsers import COMPARE_SLOTS, COMPARE_TRAFFIC
from replay import Engine
from replay.calibrate import profiles
from replay.online import online_summary, replay_online
from replay.pass_prices import KINDS, pass_errors
from replay.synthetic import time_pass

MODELS = ("tiny", "small")
MEAN_CONTEXT = 160  # tokens a decoding row holds on average in this workload (prompt ~128 plus output so far)


def loads(requests: int) -> dict:
    """Return the two workloads' generator configs (arrivals in steps)."""
    mean_output = COMPARE_TRAFFIC.mean_tokens
    saturation = COMPARE_SLOTS / mean_output  # requests per step that 8 slots can serve
    return {
        # A tenth of what continuous serves: static, which serves about a third as much here, stays light too.
        "light": replace(COMPARE_TRAFFIC, requests=requests, arrivals="poisson", rate=round(saturation / 10, 5)),
        "saturated": replace(COMPARE_TRAFFIC, requests=requests),
    }


def measure(model: str, requests: int) -> dict:
    """Return, for one model, the profile's cost and, per load, both policies' predicted and measured figures."""
    engine = Engine(model)
    t0 = time.perf_counter()
    costs = profiles(model, "cpu", COMPARE_SLOTS)
    out = {"model": model, "calibrate_s": time.perf_counter() - t0, "loads": {}}
    step_ms = float(costs["continuous"].pass_ms(COMPARE_SLOTS, 0, COMPARE_SLOTS * MEAN_CONTEXT))
    out["step_ms"] = step_ms
    for load, config in loads(requests).items():
        timed = [replace(r, arrival=round(r.arrival * step_ms)) for r in generate(config)]
        results, probes = {}, {}
        for p in ("static", "continuous"):
            probes[p] = time_pass(engine, COMPARE_SLOTS, 0, COMPARE_SLOTS * MEAN_CONTEXT)  # the step's pass, again
            results[p] = replay_online(engine, timed, COMPARE_SLOTS, p)
        out["loads"][load] = doc = online_summary(results, costs)
        for p, result in results.items():
            doc["policies"][p]["step_probe_ms"] = probes[p]
            doc["policies"][p]["pass_errors"] = pass_errors(result.run, costs[p])
    return out


def table(doc: dict) -> str:
    """Return one model's errors as a table: rows are figures, columns load x policy."""
    keys = [(load, p) for load in doc["loads"] for p in ("static", "continuous")]
    first = doc["loads"][keys[0][0]]["policies"][keys[0][1]]["figures"]
    lines = [
        f"== {doc['model']}: profile measured in {doc['calibrate_s']:.0f} s; "
        f"one arrival step = {doc['step_ms']:.2f} ms",
        f"  {'predicted / measured (error)':<24}" + "".join(f"{load + ' ' + p:>30}" for load, p in keys),
    ]
    for name in first:
        cells = []
        for load, p in keys:
            f = doc["loads"][load]["policies"][p]["figures"][name]
            cells.append(f"{f['predicted']:>11,.1f} /{f['measured']:>9,.1f} ({f['error']:+6.1%})")
        lines.append(f"  {name:<24}" + "".join(f"{c:>30}" for c in cells))
    overhead = "".join(f"{doc['loads'][load]['policies'][p]['overhead_share']:>30.1%}" for load, p in keys)
    lines.append(f"  {'overhead share':<24}{overhead}")
    for load in doc["loads"]:
        d = doc["loads"][load]
        lines.append(
            f"  {load}: speedup measured {d['measured_speedup']:.2f}x, predicted {d['predicted_speedup']:.2f}x"
        )
    lines.append(f"  {'measured / priced':<24}" + "".join(f"{load + ' ' + p:>30}" for load, p in keys))
    for kind in KINDS:
        cells = []
        for load, p in keys:
            e = doc["loads"][load]["policies"][p]["pass_errors"].get(kind)
            cells.append(f"{e['ratio']:.2f}x of {e['passes']:,} passes" if e else "none")
        lines.append(f"  {kind:<24}" + "".join(f"{c:>30}" for c in cells))
    probes = [doc["loads"][load]["policies"][p]["step_probe_ms"] for load, p in keys]
    again = [f"{ms:.3f} ms ({ms / doc['step_ms']:.2f}x)" for ms in probes]
    lines.append(f"  {'the step pass, again':<24}" + "".join(f"{c:>30}" for c in again))
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    """Measure each model asked (default both) and print a table per model, or one JSON document."""
    p = argparse.ArgumentParser(prog="./dev bench online", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=MODELS, action="append", help="a preset; repeat for both (default: both)")
    p.add_argument("--requests", type=bounded_int(1, 100_000), default=256, help="requests per workload (default 256)")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of the tables")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    docs = []
    for model in args.model or MODELS:
        docs.append(measure(model, args.requests))
        if not args.json:
            print(table(docs[-1]), flush=True)
    if args.json:
        print(json.dumps({d["model"]: d for d in docs}, indent=1))
