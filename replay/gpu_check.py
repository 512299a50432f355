"""`./dev gpu-check`: the GPU path in one short run; exit 1 when a parity check fails.

Checks, in order: the varlen attention path (packed and through block tables) against the plain causal reference in
bf16, a path this torch's varlen_attn cannot take skipped with the torch it needs; greedy batch invariance in bf16
(what holds is printed, not assumed); `calibrate` of gpt2; an online replay of both policies at 64 slots on a
chat-shaped workload (and on the first requests of the Azure conv trace when `shared/traces/` is there), each beside
the simulator's prediction from that profile and each kind of pass beside its price. Each part is printed as it
ends, and every line again as the summary, also when --budget-s runs out or SIGTERM arrives. `--device cpu --model
tiny --quick` runs the same script here, on the CPU's own attention path, to check the script itself.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from torch.nn.attention import SDPBackend

from core import generate
from core.batch.kv_blocks import BlockAllocator
from core.batch.ragged import build_batch
from core.batch.sequence import Sequence
from core.cli.parsers import COMPARE_TRAFFIC
from core.sched.policies import CHAPTER_PAIR
from core.workload.traces import TraceOptions, load_trace

from . import Cancelled
from . import attention as attn
from .attention import PagedKVCache, ReferenceAttention, ragged_attention, ragged_path, steady_sdpa, varlen_missing
from .calibrate import profiles
from .engine import BLOCK_SIZE, Engine
from .model import PRESETS
from .online import online_summary, online_text, replay_online
from .pass_prices import pass_errors

PARITY_TOLERANCE = {torch.bfloat16: 3e-2, torch.float16: 5e-3, torch.float32: 1e-4}  # of the largest logit
TRACE_NAMES = ("../shared/traces/AzureLLMInferenceTrace_conv.csv", "shared/traces/AzureLLMInferenceTrace_conv.csv")
# The whole run's limit: inside a short GPU rental (15 minutes, 1-2 of them to start) with time to run it again.
DEFAULT_BUDGET_S = 240.0


# A quick or CPU run's table is a smoke test of the path, not a measure of the simulator: say so under it.
QUICK_NOTE = (
    "note: a smoke test, not an accuracy figure: --quick replays a few requests, and a CPU's pass times move with "
    "whatever else the cores run, so errors of 100% or more here are expected; the prediction's accuracy is the full "
    "run's on a quiet machine (docs/replay.md)"
)


def varlen_parity(model: str = "tiny", device: str = "cuda", paged: bool = False, seed: int = 0) -> dict:
    """Return the worst logit error of the engine's ragged pass against the reference, over prefill then decodes.

    A varlen path this torch's varlen_attn cannot run is skipped ("needs torch 2.12+ (this is 2.11.0)"), not failed.
    """
    wanted = "block tables" if paged else "packed"
    if (paged or torch.device(device).type == "cuda") and (why := varlen_missing(wanted)):
        return {"path": f"varlen {wanted}", "model": model, "ok": True, "skipped": why}
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


def header(args: argparse.Namespace) -> str:
    """Return the run's first lines: the device, torch, cuDNN, and which attention each policy's passes run."""
    cuda = args.device == "cuda"
    where = torch.cuda.get_device_name() if cuda else "CPU"
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    config, dtype = PRESETS[args.model], torch.bfloat16 if cuda else torch.float32
    return (
        f"== gpu-check on {where}, torch {torch.__version__}, cuDNN {cudnn or 'none'}, model {args.model}\n"
        f"attention: continuous's ragged passes {ragged_path(args.device)}; static's dense decode on SDPA "
        f"{sdpa_backend(args.device, dtype, config.n_heads, config.head_dim)}"
    )


def sdpa_backend(device: str, dtype, heads: int, head_dim: int) -> str:
    """Return the SDPA backend a dense decode column (64 rows, 1,000 keys, boolean mask) gets, as run and by default."""
    q = torch.zeros(64, 1, heads, head_dim, device=device, dtype=dtype).transpose(1, 2)  # as DensePaddedAttention
    k = torch.zeros(64, heads, 1512, head_dim, device=device, dtype=dtype)[:, :, :1000]  # a wider cache's columns
    mask = torch.ones(64, 1, 1, 1000, dtype=torch.bool, device=device)
    choose = lambda: SDPBackend(torch._fused_sdp_choice(q, k, k, attn_mask=mask)).name  # noqa: E731
    try:  # a private call: a torch that lacks it still runs the check
        default = choose()
        with steady_sdpa():
            ours = choose()
    except (AttributeError, RuntimeError, TypeError, ValueError) as exc:
        return f"unknown ({type(exc).__name__} from torch._fused_sdp_choice)"
    return f"{ours} (cuDNN excluded; by default {default})"


def parity_line(r: dict) -> str:
    """Return one parity result as a line: its error against the tolerance, or why it was skipped."""
    head = f"parity {r['path']:<20} {r['model']:<6}"
    if "skipped" in r:
        return f"{head} skipped: {r['skipped']}"
    why = f"  ({r['why']})" if "why" in r else ""
    return (
        f"{head} max error {r['error']:.2e} of the largest logit (tolerance {r['tolerance']:.0e}): "
        f"{'ok' if r['ok'] else 'FAILED'}{why}"
    )


def checked_parity(model: str, device: str, paged: bool) -> dict:
    """Return varlen_parity's result, or a failed one naming the exception a kernel raised."""
    try:
        return varlen_parity(model, device, paged)
    except Exception as exc:  # a kernel that refuses this shape is a failed check, said plainly
        path, nan = f"varlen {'block tables' if paged else 'packed'}", float("nan")
        return {"path": path, "model": model, "ok": False, "error": nan, "tolerance": nan, "why": repr(exc)}


def price_lines(results: dict, costs: dict) -> list[str]:
    """Return each policy's kinds of pass (replay.pass_prices), measured against what its profile prices them at."""
    lines = ["each kind of pass, measured against its price in the policy's profile:"]
    for policy, result in results.items():
        for kind, e in pass_errors(result.run, costs[policy]).items():
            ratio = "-" if e["ratio"] is None else f"{e['ratio']:.2f}x"
            lines.append(
                f"  {policy:<10} {kind:<22} {e['passes']:>7,} passes: measured {e['measured_ms']:>10,.1f} ms, "
                f"priced {e['priced_ms']:>10,.1f} ms ({ratio})"
            )
    return lines


class Terminated(BaseException):
    """SIGTERM arrived: a BaseException, so no part's own `except Exception` swallows it before the summary."""


def _terminate(signum, frame) -> None:
    raise Terminated()


class Report:
    """The check's lines: each printed (flushed) as its part ends, and all of them again as the summary."""

    def __init__(self):
        self.lines: list[str] = []
        self.failed = False
        self.began = time.perf_counter()

    def add(self, text: str) -> None:
        """Keep a line (or several) for the summary and print it now."""
        self.lines.append(text)
        print(text, flush=True)

    def summary(self) -> str:
        """Return the summary: every line so far, under the run's time."""
        return f"\n== gpu-check summary ({time.perf_counter() - self.began:.0f} s)\n" + "\n".join(self.lines)


class Budget:
    """--budget-s: the seconds the whole run may take (0: no limit); a replay in flight is cancelled when spent."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.deadline = time.perf_counter() + seconds if seconds > 0 else float("inf")
        self.cancel = threading.Event()

    def left(self) -> float:
        """Return the seconds left."""
        return self.deadline - time.perf_counter()

    def check(self, *_progress) -> None:
        """Raise Cancelled once the budget is spent (calibrate calls it after each grid point)."""
        if self.cancel.is_set() or self.left() <= 0:
            self.cancel.set()
            raise Cancelled()

    def timer(self) -> threading.Timer | None:
        """Return a started timer that cancels a replay in flight when the budget runs out (None: no limit)."""
        if self.deadline == float("inf"):
            return None
        timer = threading.Timer(max(self.left(), 0.0), self.cancel.set)
        timer.daemon = True  # a run that ends early must not wait for it
        timer.start()
        return timer


def budgeted_replay(engine: Engine, workload: list, slots: int, policy: str, budget: Budget, report: Report):
    """Return one online replay, its line reported; Cancelled, said with how far it got, when the budget ran out."""
    budget.check()
    done = [0]
    total = sum(r.output_tokens for r in workload)
    timer, t0 = budget.timer(), time.perf_counter()
    try:
        result = replay_online(engine, workload, slots, policy, on_pass=lambda k, _n: done.__setitem__(0, k),
                               cancel=budget.cancel)  # fmt: skip
    except Cancelled:
        report.add(
            f"replay {policy}: stopped by --budget-s {budget.seconds:g} after {time.perf_counter() - t0:.1f} s, "
            f"{done[0]:,} of {total:,} tokens generated"
        )
        raise
    finally:
        if timer is not None:
            timer.cancel()
    report.add(f"replay {policy}: {result.run.passes:,} passes, {time.perf_counter() - t0:.1f} s")
    return result


def chat_workload(requests: int, step_ms: float) -> list:
    """Return compare's chat-shaped requests, arrivals in ms (one generated step = `step_ms`)."""
    chat = generate(replace(COMPARE_TRAFFIC, requests=requests))
    return [replace(r, arrival=round(r.arrival * step_ms)) for r in chat]


def workloads(args: argparse.Namespace, engine: Engine, report: Report) -> list[tuple[str, list]]:
    """Return the named workloads to replay: chat-shaped requests, and the Azure conv trace's first ones if found."""
    chat = chat_workload(24 if args.quick else args.requests, args.step_ms)
    out = [(f"{len(chat)} chat-shaped requests, one arrival step = {args.step_ms:g} ms", chat)]
    trace = _trace(args.trace_requests, args.trace_time_scale, engine.model.config.max_positions)
    if trace and not args.quick:
        out.append((f"first {len(trace)} Azure conv requests, time scale {args.trace_time_scale:g}", trace))
    elif not args.quick:
        report.add("Azure conv trace: not found under ../shared/traces or shared/traces; skipped")
    return out


def run_checks(args: argparse.Namespace, report: Report, budget: Budget) -> None:
    """Run every part in order, each reported as it ends; Cancelled when the budget runs out."""
    report.add(header(args))
    for model in dict.fromkeys(("tiny", args.model)):
        for paged in (False, True) if args.device == "cuda" else (False,):
            budget.check()
            r = checked_parity(model, args.device, paged)
            report.failed |= not r["ok"]
            report.add(parity_line(r))

    budget.check()
    engine = Engine(args.model, args.device)
    small = generate(replace(COMPARE_TRAFFIC, requests=8 if args.quick else 24, max_tokens=64))
    report.add(invariance_line(batch_invariance(engine, small, 8), engine.dtype))

    budget.check()
    t0 = time.perf_counter()
    costs = profiles(args.model, args.device, args.slots, on_point=budget.check)
    report.add(f"calibrate {args.model} on {args.device} (ragged and dense): {time.perf_counter() - t0:.1f} s")

    for name, workload in workloads(args, engine, report):
        results = {p: budgeted_replay(engine, workload, args.slots, p, budget, report) for p in CHAPTER_PAIR}
        table = online_text(online_summary(results, costs), name)
        if args.quick or args.device == "cpu":
            table += "\n" + QUICK_NOTE
        report.add("\n" + table)
        report.add("\n".join(price_lines(results, costs)))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="./dev gpu-check", description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--model", default="gpt2", choices=("tiny", "small", "gpt2"))
    p.add_argument("--slots", type=int, default=64)
    p.add_argument("--requests", type=int, default=256, help="chat-shaped requests (default 256)")
    p.add_argument("--step-ms", type=float, default=2.0, help="ms per generated arrival step (default 2)")
    p.add_argument("--trace-requests", type=int, default=200, help="Azure conv requests (default 200)")
    p.add_argument("--trace-time-scale", type=float, default=0.1)
    p.add_argument(
        "--budget-s",
        type=float,
        default=DEFAULT_BUDGET_S,
        help=f"stop a replay in flight, and skip what is left, after this many seconds in all; the summary is "
        f"printed all the same (default {DEFAULT_BUDGET_S:g}; 0: no limit)",
    )
    p.add_argument("--quick", action="store_true", help="a small workload: check the script, not the GPU")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run every check, each part printed as it ends, then the summary (also on SIGTERM or a spent budget).

    Return 1 if a parity check failed, 3 if --budget-s stopped the run, 143 on SIGTERM, else 0.
    """
    args = _parser().parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("./dev gpu-check: no CUDA device here; run it on a GPU machine (or --device cpu --quick)")
        return 2
    report, budget = Report(), Budget(args.budget_s)
    on_main = threading.current_thread() is threading.main_thread()  # only the main thread may take a signal
    previous = signal.signal(signal.SIGTERM, _terminate) if on_main else None
    code = 0
    try:
        run_checks(args, report, budget)
    except Cancelled:
        report.add(f"stopped: --budget-s {args.budget_s:g} was spent; the parts after this did not run")
        code = 3
    except Terminated:
        report.add("stopped by SIGTERM; the parts after this did not run")
        code = 143
    finally:
        if on_main:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
        print(report.summary(), flush=True)
    return 1 if report.failed else code


if __name__ == "__main__":
    sys.exit(main())
