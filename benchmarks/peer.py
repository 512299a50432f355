"""Our replay engine against transformers' continuous batching and `generate`, same model, requests and schedule.

`./dev bench peer [--requests N] [--model tiny|small] [--json]`. The peer is a LlamaForCausalLM holding our model's
exact weights (so greedy outputs can be compared token for token), run by transformers' `ContinuousBatchingManager`
(continuous: FCFS, pages of 16, at most `slots` requests per batch) and by `generate` over our static batches
(left-padded, each batch to its longest output). Both sides get the same prompts and each request's output length.
Needs the `bench` extra (transformers, pinned); installs nothing at run time.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from core import generate, simulate
from core.cli.args import bounded_int
from core.cli.parsers import COMPARE_SLOTS, COMPARE_TRAFFIC
from replay import Engine

MODELS = ("tiny", "small")
STEP_TOLERANCE = 0.01  # the peer's forward passes against our scheduled steps


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="./dev bench peer", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--requests",
        type=bounded_int(1, 100_000),
        default=256,
        help="the first N of compare's chat-shaped requests (256)",
    )
    p.add_argument("--model", choices=MODELS, action="append", help="a preset; repeat for both (default: both)")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    return p


def measure(model: str, requests: int) -> dict:
    """Return both engines' tokens/s under both policies, the checks, and our overhead share, for one preset."""
    from .peer_engine import peer_model, run_continuous, run_static

    workload = generate(COMPARE_TRAFFIC)[:requests]
    engine = Engine(model)
    peer = peer_model(engine)
    doc = {"model": model, "parameters": engine.model.num_parameters, "requests": len(workload)}
    doc["slots"], doc["threads"] = COMPARE_SLOTS, torch.get_num_threads()
    ours, theirs, checks = {}, {}, {}
    for policy, peer_run in (("continuous", run_continuous), ("static", run_static)):
        result = engine.replay(workload, COMPARE_SLOTS, policy)
        steps = int((result.rows_per_step > 0).sum())
        peer_result = peer_run(peer, simulate(workload, COMPARE_SLOTS, policy), engine)
        same = sum(peer_result.outputs.get(r.id) == o for r, o in zip(result.run.requests, result.outputs))
        ours[policy] = result.throughput
        theirs[policy] = peer_result.throughput
        checks[policy] = {
            "our_steps": steps,
            "peer_passes": peer_result.passes,
            "steps_match": abs(peer_result.passes - steps) <= STEP_TOLERANCE * steps,
            "tokens": int(result.tokens_per_step.sum()),
            "peer_tokens": peer_result.tokens,
            "same_outputs": same,
            "overhead_share": result.overhead_share,
            "our_wall_s": result.total_s,
            "peer_wall_s": peer_result.wall_s,
        }
    doc.update(ours=ours, peer=theirs, checks=checks)
    doc["ratio"] = {p: ours[p] / theirs[p] for p in ours}
    return doc


def table(doc: dict) -> str:
    """Return one preset's results as a table."""
    ours, peer, checks = doc["ours"], doc["peer"], doc["checks"]
    lines = [
        f"== {doc['model']} ({doc['parameters'] / 1e6:.1f}M parameters), {doc['requests']} chat-shaped requests, "
        f"{doc['slots']} slots, CPU fp32, {doc['threads']} thread(s)",
        f"  {'tokens/s':<12}{'ours':>9}{'peer':>9}{'ours/peer':>11}{'steps ours/peer':>18}{'same outputs':>14}"
        f"{'our overhead':>14}",
    ]
    for policy in ("continuous", "static"):
        c = checks[policy]
        lines.append(
            f"  {policy:<12}{ours[policy]:>9.0f}{peer[policy]:>9.0f}{doc['ratio'][policy]:>10.2f}x"
            f"{c['our_steps']:>10,}/{c['peer_passes']:<7,}{c['same_outputs']:>8}/{doc['requests']:<5}"
            f"{c['overhead_share']:>13.1%}"
        )
    lines.append(
        f"  continuous/static speedup: ours {ours['continuous'] / ours['static']:.2f}x, "
        f"peer {peer['continuous'] / peer['static']:.2f}x"
    )
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    """Run the comparison for each preset asked; print a table per preset (or JSON); exit 1 if a check fails."""
    args = _parser().parse_args(argv)
    try:
        import transformers
    except ImportError:
        sys.exit("./dev bench peer: transformers is not installed; install the bench extra: pip install -e '.[bench]'")
    torch.set_num_threads(1)
    docs = []
    for model in args.model or MODELS:
        doc = measure(model, args.requests)
        doc["transformers"] = transformers.__version__
        docs.append(doc)
        if not args.json:
            print(table(doc), flush=True)
    if args.json:
        print(json.dumps(docs[0] if len(docs) == 1 else {d["model"]: d for d in docs}, indent=1))
    failed = [
        f"{d['model']} {p}: {what}"
        for d in docs
        for p, c in d["checks"].items()
        for what, bad in (
            (f"peer ran {c['peer_passes']} passes against our {c['our_steps']} steps", not c["steps_match"]),
            (f"peer generated {c['peer_tokens']} tokens against our {c['tokens']}", c["peer_tokens"] != c["tokens"]),
        )
        if bad
    ]
    if failed:
        sys.exit("./dev bench peer: " + "; ".join(failed))
