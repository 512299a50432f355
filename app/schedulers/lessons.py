"""The sentences under the Schedulers tab's table: each lesson's pair compared, and what a fairness star reads."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

from app.page.words import times
from app.schedulers.phrases import ROWS, moves, paused_passes, shown_best, than
from core.clock.cost import StepCost
from core.measure.lineup import Line, differs
from core.measure.serving import per_request


def _knob(line: Line, name: str):
    return getattr(line.entry.policy(), name, None)


def ratio_html(lines: Sequence[Line]) -> str:
    """TGI at two waiting_served_ratios: what the higher one does to the decoders' TPOT and the waiting's TTFT."""
    tgis = [line for line in lines if "waiting_served_ratio" in line.entry.policy().knobs]
    ratios = {_knob(line, "waiting_served_ratio") for line in tgis}
    if len(tgis) < 2 or len(ratios) < 2:
        return ""
    low = min(tgis, key=lambda line: _knob(line, "waiting_served_ratio"))
    high = max(tgis, key=lambda line: _knob(line, "waiting_served_ratio"))
    a, b = high.figures, low.figures
    rh, rl = _knob(high, "waiting_served_ratio"), _knob(low, "waiting_served_ratio")
    tpot, ttft = moves(a.tpot_p99, b.tpot_p99), moves(a.ttft_p99, b.ttft_p99)
    trades = (tpot, ttft) == ("falls", "rises")
    verdict = (
        "the waiting requests pay for the decoders' lower time per token (fewer prefill pauses, each longer): that is "
        "the trade the ratio sets."
        if trades
        else "here the ratio does not trade one for the other."
    )
    return (
        f'<p data-claim="tgi-ratio">Here TGI at waiting_served_ratio {rh:g} pauses its running batch for '
        f"{paused_passes(high)} prefill passes against {paused_passes(low)} at {rl:g}: the TPOT p99 (a request's "
        f"mean time per token after its first) {tpot} ({a.tpot_p99:,.2f} ms against {b.tpot_p99:,.2f}) and the TTFT "
        f"p99 {ttft} ({a.ttft_p99:,.1f} ms against {b.ttft_p99:,.1f}); {verdict}</p>"
    )


def _rows(line: Line) -> tuple[float, int]:
    """Return the decoding rows a pass held: the mean over time, and the most."""
    run = line.run
    if not run.passes:
        return 0.0, 0
    spans = run.pass_end_ms - run.pass_start_ms
    return float((run.pass_rows * spans).sum() / spans.sum()), int(run.pass_rows.max())


def _whole_life(line: Line) -> bool:
    """Return whether the line's policy reserves each request's prompt and answer cap at admission."""
    pol = line.entry.policy()
    return not pol.forms_batches and pol.reserves_whole_life("paged")


def _plain(line: Line) -> bool:
    """Return whether the line's policy is continuous batching in arrival order, nothing added."""
    p = line.entry.policy()
    return not (p.forms_batches or p.ordered or p.has_token_budget or p.pauses_decoders or p.engine)


def evict_html(lines: Sequence[Line]) -> str:
    """An engine's two capacity schedulers (TensorRT-LLM's): never preempting against running more at once."""
    # One engine's two capacity schedulers: one reserves each request's whole life, the other admits by need.
    reserving = [line for line in lines if line.entry.policy().engine and _whole_life(line)]
    engines = {line.entry.policy().engine for line in reserving}
    packing = [line for line in lines if not _whole_life(line) and line.entry.policy().engine in engines]
    if not packing:
        return ""
    mu = packing[0]
    ne = next(line for line in reserving if line.entry.policy().engine == mu.entry.policy().engine)
    (ne_mean, ne_max), (mu_mean, mu_max) = _rows(ne), _rows(mu)
    recomputed = mu.run.schedule.recomputed_tokens if mu.run.schedule is not None else 0
    # A readmission prefills its prompt again with the tokens it had made: the recompute in all.
    again = sum(
        mu.run.requests[e.request].prompt_tokens + e.tokens
        for e in (mu.run.schedule.events if mu.run.schedule is not None else ())
        if e.kind == "preempt"
    )
    s = ne.run.schedule
    cap = (s.memory.reserve_tokens or max(r.output_tokens for r in s.requests)) if s is not None else 0
    capped = any(r.max_tokens for r in ne.run.requests)
    holds = "its prompt plus its max_tokens" if capped else f"its prompt plus {cap:,} tokens (the longest answer here)"
    more = than(mu_mean, ne_mean, "fewer", "more", "about as many", time=False)
    return (
        f'<p data-claim="trtllm">Here GUARANTEED_NO_EVICT, each request holding {holds} from its admission, '
        f"preempted {times(ne.figures.preemptions)} and decoded {ne_mean:.1f} rows a pass on average (at most "
        f"{ne_max}); MAX_UTILIZATION decoded {more} at once, "
        f"{mu_mean:.1f} on average (at most {mu_max}), preempted {times(mu.figures.preemptions)} and recomputed "
        f"{recomputed:,} generated tokens, {again:,} with their prompts. TTFT p99 {ne.figures.ttft_p99:,.1f} ms "
        f"against {mu.figures.ttft_p99:,.1f}; "
        f"throughput {ne.figures.throughput:,.0f} tokens/s against {mu.figures.throughput:,.0f}.</p>"
    )


def class_figures(line: Line, cost: StepCost) -> dict[int, tuple[int, float]]:
    """Return each priority class's size and mean TTFT (ms)."""
    ttft = per_request(line.run, cost).ttft
    classes = np.array([r.priority for r in line.run.requests])
    return {int(c): (int((classes == c).sum()), float(ttft[classes == c].mean())) for c in np.unique(classes)}


def priority_html(lines: Sequence[Line], cost: StepCost) -> str:
    """A queue by priority against arrival order on two classes: the high class's TTFT, the low's, and fairness."""
    ordered = [line for line in lines if line.entry.policy().orders_by_class]
    plain = [line for line in lines if not line.entry.policy().ordered]
    if not ordered or not plain or len({r.priority for r in lines[0].run.requests}) < 2:
        return ""
    pri, fcfs = ordered[0], plain[0]
    a, b = class_figures(pri, cost), class_figures(fcfs, cost)
    high, low = min(a), max(a)
    hi_verb, lo_verb = moves(a[high][1], b[high][1]), moves(a[low][1], b[low][1])
    fair = moves(pri.figures.fairness, fcfs.figures.fairness, time=False)
    return (
        f'<p data-claim="priority">Here {html.escape(pri.entry.label())} against {html.escape(fcfs.entry.label())}: '
        f"the high class's mean TTFT {hi_verb} ({a[high][0]} requests: {a[high][1]:,.1f} ms against "
        f"{b[high][1]:,.1f}) and the low class's {lo_verb} ({a[low][0]}: {a[low][1]:,.1f} ms against "
        f"{b[low][1]:,.1f}); fairness over every request's slowdown {fair} ({pri.figures.fairness:.3f} against "
        f"{fcfs.figures.fairness:.3f}).</p>"
    )


def longest_mean(line: Line, share: float = 0.1) -> tuple[int, float]:
    """Return how many requests are the longest `share` of answers, and their mean end-to-end latency (ms)."""
    run = line.run
    n = max(1, int(round(share * len(run.requests))))
    longest = np.argsort([-r.output_tokens for r in run.requests], kind="stable")[:n]
    return n, float((run.finish_ms - run.arrival_ms)[longest].mean())


def sjf_html(lines: Sequence[Line]) -> str:
    """A queue by answer length against arrival order: the mean latency, and the longest answers' latency."""
    by_length = [line for line in lines if line.entry.policy().order_field == "output"]
    by_arrival = [line for line in lines if _plain(line)]
    if not by_length or not by_arrival:
        return ""
    s, c = by_length[0], by_arrival[0]
    mean_s = float((s.run.finish_ms - s.run.arrival_ms).mean())
    mean_c = float((c.run.finish_ms - c.run.arrival_ms).mean())
    (n, long_s), (_, long_c) = longest_mean(s), longest_mean(c)
    return (
        f'<p data-claim="sjf">Here under shortest-first the mean end-to-end latency {moves(mean_s, mean_c)} '
        f"({mean_s:,.0f} ms against {mean_c:,.0f} in arrival order) while the {n} longest answers "
        f"{than(long_s, long_c, 'finish sooner', 'finish later', 'are alike')} ({long_s:,.0f} ms against "
        f"{long_c:,.0f} end to end on average).</p>"
    )


def mean_slowdowns(lines: Sequence[Line], cost: StepCost) -> list[float]:
    """Return each entry's mean slowdown: its requests' latency over their latency alone, averaged."""
    return [float(per_request(line.run, cost).slowdown.mean()) for line in lines]


def fairness_html(lines: Sequence[Line], cost: StepCost) -> str:
    """Where the fairness row stars an entry whose requests were slowed more than a less fair one's: what it reads.

    Jain's index over the slowdowns is 1 when every request is slowed alike, however much: static batching, where
    everyone waits for the batch, can lead it. The sentence names the starred entry slowed most on average against
    the least slowed of those without a star, where their slowdowns differ past the THRESHOLD.
    """
    fmt = dict((field, f) for field, _words, f in ROWS)["fairness"]
    starred, mean = shown_best(lines, "fairness", fmt), mean_slowdowns(lines, cost)
    if not starred:
        return ""
    fair = max(starred, key=lambda i: mean[i])
    a = lines[fair]
    below = [i for i in range(len(lines)) if i not in starred]  # those the table reads less fair: no star
    if not below:
        return ""
    least = min(below, key=lambda i: mean[i])
    b, slower, faster = lines[least], f"{mean[fair]:,.2f}", f"{mean[least]:,.2f}"
    if mean[fair] <= mean[least] or not differs(mean[fair], mean[least]) or slower == faster:
        return ""
    rank = "the fairest" if len(starred) == 1 else "among the fairest"
    return (
        "<p data-claim=\"fairness\">The fairness star reads how alike the requests' slowdowns are (each one's "
        f"latency over its latency alone), not how small: {html.escape(a.entry.label())} is {rank} here "
        f"({a.figures.fairness:.3f} against {b.figures.fairness:.3f} for {html.escape(b.entry.label())}), yet its "
        f"requests were slowed {slower}× on average against {faster}×: more alike, but more.</p>"
    )


# Each lesson's sentence shows only where its pair is on screen; its numbers are the runs' and its verbs follow the
# numbers ("falls" only past the lineup's THRESHOLD, else "alike", as the table's stars tie).
def lessons_html(lines: Sequence[Line], cost: StepCost) -> str:
    """Return the sentence of every lesson whose pair is on screen, and the fairness star's where it could mislead."""
    return "".join(
        (ratio_html(lines), evict_html(lines), priority_html(lines, cost), sjf_html(lines), fairness_html(lines, cost))
    )
