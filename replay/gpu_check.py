"""`./dev gpu-check`: the GPU path in one short run, printing one table; exit 1 when a parity check fails.

Checks, in order: the varlen attention path (packed and through block tables) against the plain causal reference in
bf16; greedy batch invariance in bf16 (what holds is printed, not assumed); `calibrate` of gpt2; an online replay of
both policies at 64 slots on a chat-shaped workload (and on the first requests of the Azure conv trace when
`shared/traces/` is there), each beside the simulator's prediction from that profile. `--device cpu --model tiny
--quick` runs the same script here, on the CPU's own attention path, to check the script itself.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from core import generate
from core.batch.kv_blocks import BlockAllocator
from core.batch.ragged import build_batch
from core.batch.sequence import Sequence
from core.cli.parsers import COMPARE_TRAFFIC
from core.sched.policies import CHAPTER_PAIR
from core.workload.traces import TraceOptions, load_trace

from . import attention as attn
from .attention import PagedKVCache, ReferenceAttention, ragged_attention
from .calibrate import profiles
from .engine import BLOCK_SIZE, Engine
from .online import online_summary, online_text, replay_online

PARITY_TOLERANCE = {torch.bfloat16: 3e-2, torch.float16: 5e-3, torch.float32: 1e-4}  # of the largest logit
TRACE_NAMES = ("../shared/traces/AzureLLMInferenceTrace_conv.csv", "shared/traces/AzureLLMInferenceTrace_conv.csv")


# A quick or CPU run's table is a smoke test of the path, not a measure of the simulator: say so under it.
QUICK_NOTE = (
    "note: a smoke test, not an accuracy figure: --quick calibrates on a few passes, and a CPU's pass times move with "
    "whatever else the cores run, so errors of 100% or more here are expected; the prediction's accuracy is the full "
    "run's on a quiet machine (docs/replay.md)"
)


def varlen_parity(model: str = "tiny", device: str = "cuda", paged: bool = False, seed: int = 0) -> dict:
    """Return the worst logit error of the engine's ragged pass against the reference, over prefill then decodes."""
    engine = Engine(model, device, seed=seed)
    vocab, m = engine.model.config.vocab_size, engine.model
    rng = np.random.default_rng(seed)
    seqs = [Sequence(str(i), i, rng.integers(0, vocab, n).tolist(), n, 8) for i, n in enumerate((37, 5, 120, 1))]
    blocks = 64
    allocator = BlockAllocator(blocks, BLOCK_SIZE)
    cache = PagedKVCache(m.config, blocks, BLOCK_SIZE, engine.device, engine.dtype)
    previous, attn.VARLEN_PAGED = attn.VARLEN_PAGED, paged
    worst = 0.0
    try:
        allocator.allocate(seqs[0])
        for step in range(4):
            if step == 1:
                for s in seqs[1:]:
                    allocator.allocate(s)  # prefills join a decode in one ragged pass
            live = seqs[:1] if step == 0 else seqs
            for s in live:
                allocator.append(s)
            batch = build_batch(live, BLOCK_SIZE)
            dev = engine.device
            hidden = m(
                torch.as_tensor(batch.token_ids, device=dev),
                torch.as_tensor(batch.positions, device=dev),
                ragged_attention(cache, batch, dev),
            )
            logits = m.logits(hidden[torch.as_tensor(batch.last_token_index, device=dev)])
            for s, row in zip(live, logits):
                ids = torch.tensor(s.token_ids, device=dev)
                want = m.logits(m(ids, torch.arange(len(ids), device=dev), ReferenceAttention()))[-1]
                worst = max(worst, float((row - want).abs().max() / want.abs().max()))
                s.num_computed_tokens = s.num_tokens
                s.token_ids.append(int(want.argmax()))
    finally:
        attn.VARLEN_PAGED = previous
    tolerance = PARITY_TOLERANCE[engine.dtype]
    kind = "varlen " + ("block tables" if paged else "packed") if cache.token_major else "ours (CPU)"
    return {"path": kind, "model": model, "error": worst, "tolerance": tolerance, "ok": worst <= tolerance}


def batch_invariance(engine: Engine, requests, slots: int) -> dict:
    """Return how many requests' greedy tokens are the same under continuous batching as alone."""
    together = engine.replay(requests, slots, "continuous").outputs
    alone = [engine.replay([r], 1, "continuous").outputs[0] for r in requests]
    same = sum(a == b for a, b in zip(together, alone))
    first = [next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), None) for a, b in zip(together, alone)]
    diverged = [k for k in first if k is not None]
    return {"same": same, "of": len(requests), "earliest_divergence": min(diverged) if diverged else None}


def invariance_line(inv: dict, dtype) -> str:
    """Return the batch-invariance line: how many requests matched, and where the first divergence was, if any."""
    where = (
        "none diverged"
        if inv["earliest_divergence"] is None
        else f"the earliest divergence is at token {inv['earliest_divergence']}"
    )
    return (
        f"greedy batch invariance ({dtype}): {inv['same']} of {inv['of']} requests' tokens identical under "
        f"continuous batching and alone; {where}"
    )


def _trace(limit: int, time_scale: float, context: int) -> list | None:
    for name in TRACE_NAMES:
        path = Path(name)
        if path.exists():
            requests = load_trace(path, TraceOptions(step_ms=1.0, time_scale=time_scale))
            fits = [r for r in requests if max(1, r.prompt_tokens) + r.output_tokens <= context][:limit]
            first = fits[0].arrival if fits else 0
            return [replace(r, arrival=r.arrival - first) for r in fits]  # the replay starts at the first arrival
    return None


def main(argv: list[str] | None = None) -> int:
    """Run every check; print one table; return 1 if a parity check failed, else 0."""
    p = argparse.ArgumentParser(prog="./dev gpu-check", description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--model", default="gpt2", choices=("tiny", "small", "gpt2"))
    p.add_argument("--slots", type=int, default=64)
    p.add_argument("--requests", type=int, default=1024)
    p.add_argument("--step-ms", type=float, default=2.0, help="ms per generated arrival step (default 2)")
    p.add_argument("--trace-requests", type=int, default=400)
    p.add_argument("--trace-time-scale", type=float, default=0.1)
    p.add_argument("--quick", action="store_true", help="a small workload: check the script, not the GPU")
    args = p.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("./dev gpu-check: no CUDA device here; run it on a GPU machine (or --device cpu --quick)")
        return 2
    began = time.perf_counter()
    where = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    print(f"== gpu-check on {where}, torch {torch.__version__}, model {args.model}", flush=True)

    lines, failed = [], False
    for model in dict.fromkeys(("tiny", args.model)):
        for paged in (False, True) if args.device == "cuda" else (False,):
            try:
                r = varlen_parity(model, args.device, paged)
            except Exception as exc:  # a kernel that refuses this shape is a failed check, said plainly
                path = f"varlen {'block tables' if paged else 'packed'}"
                nan = float("nan")
                r = {"path": path, "model": model, "ok": False, "error": nan, "tolerance": nan, "why": repr(exc)}
            failed |= not r["ok"]
            why = f"  ({r['why']})" if "why" in r else ""
            lines.append(
                f"parity {r['path']:<20} {r['model']:<6} max error {r['error']:.2e} of the largest logit "
                f"(tolerance {r['tolerance']:.0e}): {'ok' if r['ok'] else 'FAILED'}{why}"
            )
            print(lines[-1], flush=True)

    engine = Engine(args.model, args.device)
    small = generate(replace(COMPARE_TRAFFIC, requests=8 if args.quick else 24, max_tokens=64))
    inv = batch_invariance(engine, small, 8)
    lines.append(invariance_line(inv, engine.dtype))
    print(lines[-1], flush=True)

    t0 = time.perf_counter()
    costs = profiles(args.model, args.device, args.slots)
    lines.append(f"calibrate {args.model} on {args.device} (ragged and dense): {time.perf_counter() - t0:.1f} s")
    print(lines[-1], flush=True)

    requests = 24 if args.quick else args.requests
    chat = [
        replace(r, arrival=round(r.arrival * args.step_ms))
        for r in generate(replace(COMPARE_TRAFFIC, requests=requests))
    ]
    workloads = [(f"{len(chat)} chat-shaped requests, one arrival step = {args.step_ms:g} ms", chat)]
    trace = _trace(args.trace_requests, args.trace_time_scale, engine.model.config.max_positions)
    if trace and not args.quick:
        workloads.append((f"first {len(trace)} Azure conv requests, time scale {args.trace_time_scale:g}", trace))
    elif not args.quick:
        lines.append("Azure conv trace: not found under ../shared/traces or shared/traces; skipped")
    for name, workload in workloads:
        results = {policy: replay_online(engine, workload, args.slots, policy) for policy in CHAPTER_PAIR}
        lines += ["", online_text(online_summary(results, costs), name)]
        if args.quick or args.device == "cpu":
            lines[-1] += "\n" + QUICK_NOTE
        print(lines[-1], flush=True)
    print(f"\n== gpu-check summary ({time.perf_counter() - began:.0f} s)\n" + "\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
