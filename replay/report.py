"""What a pair of replays measured, side by side: throughput, latency percentiles, speedups and step time by batch."""

from __future__ import annotations

import numpy as np

from core.measure.metrics import compare
from core.sched.policies import get_policy

from .engine import ReplayResult


def _pct(values: np.ndarray, q: float) -> float | None:
    values = values[~np.isnan(values)]
    return float(np.percentile(values, q)) if len(values) else None


def policy_summary(result: ReplayResult) -> dict:
    """Return one replay's measured figures (times in ms, throughput in tokens per second)."""
    lat = result.latencies_ms()
    out = {
        "tokens_per_s": result.throughput,
        "wall_s": result.total_s,
        "steps": int(result.run.drain),
        "rows_computed": int(result.rows_per_step.sum()),
        "tokens": int(result.tokens_per_step.sum()),
        "cancelled": result.cancelled,
    }
    for name in ("ttft", "itl", "e2e"):
        for q in (50, 99):
            out[f"{name}_p{q}_ms"] = _pct(lat[name], q)
    return out


def step_ms_by_batch(result: ReplayResult) -> dict[int, float]:
    """Return the mean measured step time for each batch size (rows computed) that occurred."""
    ran = result.rows_per_step > 0
    rows, ms = result.rows_per_step[ran], result.step_ms[ran]
    return {int(b): float(ms[rows == b].mean()) for b in np.unique(rows)}


def summary(static: ReplayResult, continuous: ReplayResult) -> dict:
    """Return both replays, the measured speedup and the simulator's prediction for the same schedules.

    The second replay is keyed by its policy: `continuous`, or `chunked` (then `token_budget` says its budget).
    """
    predicted = compare(static.run, continuous.run)
    policy = continuous.run.policy
    doc = {
        "device": continuous.device,
        "model": continuous.model,
        "slots": continuous.run.slots,
        "requests": len(continuous.run.requests),
        "static": policy_summary(static),
        "beside": policy,  # the policy that ran beside static
        policy: policy_summary(continuous),
        "measured_speedup": continuous.throughput / static.throughput if static.throughput else None,
        "predicted_speedup": predicted.throughput_ratio,
        "step_ms_by_batch": {
            "static": step_ms_by_batch(static),
            policy: step_ms_by_batch(continuous),
        },
    }
    if get_policy(policy).has_token_budget:
        doc["token_budget"] = continuous.run.schedule.token_budget
    return doc


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def summary_text(doc: dict, workload: str) -> str:
    """Return the side-by-side table of a summary (see `summary`)."""
    other = doc["beside"]
    s, c = doc["static"], doc[other]
    rows = [
        ("tokens/s (measured)", f"{s['tokens_per_s']:.0f}", f"{c['tokens_per_s']:.0f}"),
        ("wall time (s)", f"{s['wall_s']:.2f}", f"{c['wall_s']:.2f}"),
        ("rows computed (incl. padding)", f"{s['rows_computed']}", f"{c['rows_computed']}"),
        ("TTFT p50 (ms)", _ms(s["ttft_p50_ms"]), _ms(c["ttft_p50_ms"])),
        ("inter-token p50 (ms)", _ms(s["itl_p50_ms"]), _ms(c["itl_p50_ms"])),
        ("end-to-end p50 (ms)", _ms(s["e2e_p50_ms"]), _ms(c["e2e_p50_ms"])),
        ("end-to-end p99 (ms)", _ms(s["e2e_p99_ms"]), _ms(c["e2e_p99_ms"])),
    ]
    budget = f"; chunked prefill, {doc['token_budget']:,} tokens a pass" if "token_budget" in doc else ""
    lines = [
        f"replay on {doc['device']}, model {doc['model']}, {doc['slots']} slots{budget}; workload: {workload}",
        "",
        f"{'':31}{'static':>12}{other:>12}",
    ]
    lines += [f"{name:31}{a:>12}{b:>12}" for name, a, b in rows]
    lines += [
        "",
        f"measured speedup (tokens/s, {other} / static):{' ' * (10 - len(other))} {doc['measured_speedup']:.2f}x",
        f"simulator's prediction (tokens/step):             {doc['predicted_speedup']:.2f}x",
        "step time by batch size (rows computed), mean ms:",
    ]
    for policy in doc["step_ms_by_batch"]:
        by_batch = doc["step_ms_by_batch"][policy]
        lines.append(f"  {policy:<11}" + ", ".join(f"{b}: {ms:.2f}" for b, ms in sorted(by_batch.items())))
    return "\n".join(lines)
