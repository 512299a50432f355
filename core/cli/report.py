"""Plain-text and JSON renderings of runs, comparisons and sweeps for the command line."""

from __future__ import annotations

import json

from core.measure.losses import Losses, losses
from core.measure.metrics import Comparison, Metrics, latency_by_class
from core.measure.sweep import CostModel, SweepPoint
from core.sched.run import Run

MAX_TEXT_STEPS = 120
JSON_DECIMALS = 6


def rounded(value):
    """Return `value` with every float rounded to JSON_DECIMALS places (no 77.00000000000001 in the output)."""
    if isinstance(value, float):
        return round(value, JSON_DECIMALS)
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(v) for v in value]
    return value


def dumps(doc: dict) -> str:
    """Return the command line's JSON: floats rounded, NaN and infinities refused (they are not JSON)."""
    return json.dumps(rounded(doc), allow_nan=False)


def run_json(run: Run, metrics: Metrics, window: int | None) -> dict:
    """Return the `simulate --json` object (docs/design.md, "Command-line contract"); unreached times are null."""
    rows = []
    for i, r in enumerate(run.requests):
        start, finish = int(run.start[i]), int(run.finish[i])
        started = window is None or start < window
        rows.append(
            {
                "id": r.id,
                "arrival": r.arrival,
                "output_tokens": r.output_tokens,
                "priority": r.priority,
                "max_tokens": r.max_tokens,
                "start": start if started else None,
                "finish": finish if window is None or finish <= window else None,
                "slot": int(run.slot[i]) if started else None,
            }
        )
    doc = {
        "policy": run.policy,
        "policy_traits": run.rules.traits(),
        "slots": run.slots,
        "batch_timeout": run.batch_timeout,
        "requests": rows,
        "timeline": run.timeline_strings(window),
        "metrics": metrics.as_dict(),
        "losses": losses(run, metrics.window).as_dict(),
    }
    if run.schedule is not None:  # a limited pool or chunked prefill: what memory decided
        s = run.schedule
        doc["metrics"].update(s.memory_metrics())
        doc["memory"] = {
            "kv_blocks": s.memory.kv_blocks,
            "block_size": s.memory.block_size,
            "allocation": s.memory.allocation,
            "reserve_tokens": s.memory.reserve_tokens,
            "token_budget": s.token_budget,
        }
        doc["kv"] = kv_per_step(run, metrics.window)
        doc["memory_events"] = [
            {
                "step": int(s.pass_start[e.step]),
                "kind": e.kind,
                "request": run.requests[e.request].id,
                "slot": e.slot,
                "tokens": e.tokens,
                "free_blocks": e.free,
            }
            for e in s.events
        ]
    return doc


def kv_per_step(run: Run, window: int) -> list[int]:
    """Return the blocks in use at each step of [0, window) of a step-clock schedule (0 while nothing runs)."""
    s = run.schedule
    out = [0] * window
    for start, blocks in zip(s.pass_start.astype(int).tolist(), s.pass_blocks.tolist()):
        if start < window:
            out[start] = blocks
    return out


def memory_text(run: Run) -> str:
    """Return one line on what memory decided: preemptions, recomputed tokens, peak blocks, KV use, holes."""
    s = run.schedule
    m = s.memory_metrics()
    pool = "unlimited" if s.memory.unlimited else f"{s.memory.kv_blocks:,} blocks of {s.memory.block_size} tokens"
    rules, how = s.rules, s.memory.allocation
    if rules.forms_batches:
        how = "dense rectangles"  # a batch row: its width
    elif rules.reserves_whole_life(how) and how == "paged":
        how = "paged, each request's whole life reserved at admission"
    line = f"memory: {pool}, {how}; peak {m['peak_blocks']:,} blocks"
    if "kv_utilisation" in m:
        line += f", KV use {m['kv_utilisation']:.0%} of the pool"
    if "fragmentation" in m:
        line += f", {m['fragmentation']:.0%} of free blocks outside the largest hole"
    line += f"; {m['preemptions']} preemptions, {m['recomputed_tokens']:,} tokens recomputed"
    blocked = sum(1 for e in s.events if e.kind == "blocked")
    if blocked:
        line += f"; {blocked} admissions waited for memory"
    return line


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def run_text(run: Run, metrics: Metrics) -> str:
    """Return the timeline (first steps), the metrics and where the slot-time went, as text."""
    loss = losses(run, metrics.window)
    shown = min(metrics.window, MAX_TEXT_STEPS)
    lines = [
        f"{run.policy} batching, {run.slots} slots, window {metrics.window} steps (G generating, P padding, . idle"
        + (", R recomputing after preemption, F prompt chunk" if run.schedule is not None else "")
        + (", Z paused while a pass prefills others' prompts" if run.rules.pauses_decoders else "")
        + ")"
    ]
    lines += [f"slot{i:<3} {row}" for i, row in enumerate(run.timeline_strings(shown))]
    if shown < metrics.window:
        lines.append(f"(first {shown} of {metrics.window} steps shown)")
    lines += [
        f"completed        {metrics.completed}/{metrics.requests}",
        f"useful tokens    {metrics.useful_tokens}",
        f"GPU utilisation  {metrics.utilisation:.1%}   padding {metrics.padding_share:.1%}"
        f"   idle {metrics.idle_share:.1%}",
        f"latency (steps)  mean {_fmt(metrics.avg_latency)}  p50 {_fmt(metrics.p50_latency)}"
        f"  p90 {_fmt(metrics.p90_latency)}  p99 {_fmt(metrics.p99_latency)}"
        + (f"   (of the {metrics.completed} completed)" if metrics.completed < metrics.requests else ""),
        f"latency, all {metrics.requests} to their finish (steps)  mean {_fmt(metrics.avg_latency_all)}"
        f"  p99 {_fmt(metrics.p99_latency_all)}",
        f"slot-time lost   padding {loss.padding}  empty while requests waited {loss.idle_while_waiting}"
        f"  (slot-steps)   waiting with a slot free or padding {loss.boundary_wait} (request-steps)",
        f"avg queue wait   {_fmt(metrics.avg_wait)} steps    drain {metrics.drain_steps} steps",
    ]
    if run.schedule is not None:
        lines.append(memory_text(run))
    return "\n".join(lines)


def loss_rows(losses_by: dict[str, Losses]) -> list[tuple[str, ...]]:
    """Return the rows saying where each policy's slot-time went (core.measure.losses), for the side-by-side table."""
    return [
        ("padding (slot-steps)", *(f"{x.padding}" for x in losses_by.values())),
        ("empty, requests waiting", *(f"{x.idle_while_waiting}" for x in losses_by.values())),
        ("boundary wait (req-steps)", *(f"{x.boundary_wait}" for x in losses_by.values())),
    ]


def class_rows(runs: dict[str, Run]) -> list[tuple[str, ...]]:
    """Return each priority class's mean latency (to its finish) per policy, when the traffic has more than one."""
    by_class = latency_by_class(list(runs.values()))
    return [(f"latency mean, class {c} ({n})", *(f"{m:.1f}" for m in means)) for c, (n, means) in by_class.items()]


def column_width(names) -> int:
    """Return a side-by-side table's column width: 12, or wider so the longest name keeps a gap before it."""
    return max(12, 2 + max((len(n) for n in names), default=0))


def how_much_sooner(ratio: float, word: str = "faster", opposite: str = "slower") -> str:
    """Return a drain ratio (baseline / this one) in words that stay true either way: "2.88x faster", "1.04x slower"."""
    if f"{ratio:.2f}" == "1.00":
        return f"as fast ({ratio:.2f}x)" if word == "faster" else f"as soon ({ratio:.2f}x)"
    return f"{ratio:.2f}x {word}" if ratio > 1 else f"{1 / ratio:.2f}x {opposite}"


def comparison_text(comparison: Comparison, workload: str, slots: int, runs: dict[str, Run]) -> str:
    """Return the side-by-side table (throughput, utilisation, padding, drain, latency) and each ratio to the first."""
    ms = list(comparison.metrics.values())
    row = lambda label, fmt: (label, *(fmt(m) for m in ms))  # noqa: E731
    rows = [
        row("throughput (tokens/step)", lambda m: f"{m.throughput:.2f}"),
        row("GPU utilisation", lambda m: f"{m.utilisation:.1%}"),
        row("padding waste (slot-time)", lambda m: f"{m.padding_share:.1%}"),
        row("idle (slot-time)", lambda m: f"{m.idle_share:.1%}"),
        row("drain time (steps)", lambda m: f"{m.drain_steps}"),
        row("latency p50 (steps)", lambda m: _fmt(m.p50_latency)),
        row("latency p90 (steps)", lambda m: _fmt(m.p90_latency)),
        row("latency p99 (steps)", lambda m: _fmt(m.p99_latency)),
        row("latency mean (steps)", lambda m: _fmt(m.avg_latency)),
        row("queue wait mean (steps)", lambda m: _fmt(m.avg_wait)),
        *loss_rows({name: losses(run) for name, run in runs.items()}),
        *class_rows(runs),
    ]
    w = column_width(comparison.names)
    own = [f"{name} ran up to {run.slots}" for name, run in runs.items() if run.slots != slots]  # no request cap
    note = (  # these runs are on steps: on a clock (the timed figures below) the passes, and so the rows, differ
        f" ({', '.join(own)} at once on these steps: an engine without a request cap runs every request that fits)"
        if own
        else ""
    )
    header = f"{'':27}" + "".join(f"{n:>{w}}" for n in comparison.names)
    lines = [f"workload: {workload}; {slots} slots{note}", "", header]
    lines += [f"{name:27}" + "".join(f"{x:>{w}}" for x in xs) for name, *xs in rows]
    lines.append("")
    base = comparison.names[0]
    than = f" than {base}" if len(comparison.names) > 2 else ""  # two columns: the chapter's sentence, as it was
    for name in comparison.names[1:]:
        r, b, m = comparison.ratios(name), comparison[base], comparison[name]
        drains = how_much_sooner(r["drain"])
        # "as fast as continuous (1.00x)", "1.07x slower than continuous"
        drains = drains.replace(" (", f" as {base} (", 1) if drains.startswith("as ") and than else drains + than
        lines.append(
            f"{name} drains {drains}; throughput x{r['throughput']:.2f}; "
            f"padding {b.padding_share:.0%} -> {m.padding_share:.0%} of slot-time"
        )
    return "\n".join(lines)


def serving_text(targets: dict, figures: dict) -> str:
    """Return each policy's serving figures side by side: TTFT, ITL, TPOT, stalls, goodput, fairness."""
    unit = targets["unit"]
    rate = "per step" if unit == "steps" else "per s"
    names = list(figures)
    rows = [
        (f"TTFT p50 ({unit})", "ttft_p50", ".1f"),
        (f"TTFT p99 ({unit})", "ttft_p99", ".1f"),
        (f"ITL p50, pooled ({unit})", "itl_p50", ".1f"),
        (f"ITL p99, pooled ({unit})", "itl_p99", ".1f"),
        (f"TPOT mean p50 ({unit})", "tpot_p50", ".1f"),
        (f"TPOT mean p99 ({unit})", "tpot_p99", ".1f"),
        (f"longest stall p99 ({unit})", "stall_p99", ".1f"),
        (f"longest stall max ({unit})", "stall_max", ".1f"),
        (f"queue wait mean ({unit})", "wait_mean", ".1f"),
        ("met both targets", "met", "d"),
        ("SLO attainment", "slo_attainment", ".1%"),
        (f"goodput (requests {rate})", "goodput", ".4f" if unit == "steps" else ".2f"),
        ("fairness (Jain, slowdown)", "fairness", ".3f"),
        ("preemptions", "preemptions", "d"),
    ]
    head = (
        f"serving: targets TTFT <= {targets['ttft_target']:g} {unit} and each request's mean TPOT <= "
        f"{targets['itl_target']:g} {unit} (goodput: requests that met both, DistServe's)\n"
        "ITL pooled: over every gap of every request; TPOT mean: a request's (last token - first) / (tokens - 1);\n"
        "longest stall: a request's largest gap; TPOT and stall percentiles over the requests of 2+ tokens"
    )
    w = column_width(names)
    lines = [head, f"{'':27}" + "".join(f"{n:>{w}}" for n in names)]
    for label, key, fmt in rows:
        lines.append(f"{label:27}" + "".join(f"{getattr(figures[n], key):>{w}{fmt}}" for n in names))
    return "\n".join(lines)


def sweep_text(
    points: list[SweepPoint], knee: SweepPoint | None, target_ms: float, decode_knee: SweepPoint | None = None
) -> str:
    """Return the sweep table, the knee on the clock and the knee decode alone would give."""
    lines = [
        "ITL: inter-token latency on the simulated clock, each token waiting its whole pass, prefill included "
        "(a pass that admits a request also computes its prompt);",
        "decode p99: the same passes without their prefill work; full step: a decode-only pass over a full batch",
        f"{'batch':>6}{'full step ms':>13}{'ITL p50':>9}{'ITL p99':>9}{'decode p99':>11}{'tokens/s':>10}"
        f"{'p99 lat s':>11}{'mean lat s':>11}{'util':>7}  ITL p99<={target_ms:g}ms",
    ]
    for p in points:
        lines.append(
            f"{p.batch:>6}{p.step_ms:>13.1f}{p.itl_p50_ms:>9.1f}{p.itl_p99_ms:>9.1f}{p.decode_itl_p99_ms:>11.1f}"
            f"{p.tokens_per_s:>10.0f}{p.p99_latency_ms / 1e3:>11.2f}"
            f"{p.avg_latency_ms / 1e3:>11.2f}{p.utilisation:>7.0%}  {'yes' if p.meets_target else 'no'}"
        )
    if knee is None:
        lines.append(f"knee: no batch size meets the {target_ms:g} ms inter-token latency target")
    else:
        lines.append(
            f"knee: batch {knee.batch} is the largest that meets {target_ms:g} ms per token at p99 "
            f"({knee.itl_p99_ms:.1f} ms, {knee.tokens_per_s:.0f} tokens/s)"
        )
    decode = f"batch {decode_knee.batch}" if decode_knee else "no batch size"
    lines.append(f"decode alone (no prefill stalls): {decode} would meet {target_ms:g} ms per token at p99")
    return "\n".join(lines)


def sweep_assumptions(workload: str, rate_per_s: float | None, model: CostModel, presets: str = "") -> str:
    """Return the lines stating the workload and the cost model (and the presets it started from) a sweep assumed."""
    arrivals = f"Poisson at {rate_per_s:g} requests/s" if rate_per_s is not None else "the trace's own arrival times"
    if not hasattr(model, "params_b"):  # a measured profile: its own table, no parameters to print
        return f"workload: {workload}; arrivals {arrivals}\ncost model: {presets}, interpolated from its measured table"
    return (
        f"workload: {workload}; arrivals {arrivals}\n"
        f"cost model{f' ({presets})' if presets else ''}: {model.params_b:g}B parameters x "
        f"{model.bytes_per_param:g} bytes, "
        f"{model.kv_bytes_per_token:,.0f} KV bytes/token, {model.mem_bw_gbs:g} GB/s, {model.tflops:g} TFLOP/s, "
        f"{model.overhead_ms:g} ms overhead per pass; a pass costs max(memory, compute) + overhead, its compute "
        "counting every decoding row and every prompt token it prefills"
    )
