"""The chapter's story beside the widget: why static wastes, the scheduling loop at the cursor, spread, limits."""

from __future__ import annotations

import numpy as np

from app.page.words import plural
from core import Run
from core.sched.policies import STATIC_ROW
from core.sched.timed import TimedRun

WHY = (
    "<h3>Why static batching wastes, and what continuous batching changes</h3>"
    "<p><b>Static batching</b> takes a group of requests and runs it until its longest member has finished. A member "
    "that finishes early keeps its slot anyway, and the GPU keeps computing a row for it that nobody reads: that is "
    "<i>padding</i>. A request that arrives meanwhile waits for the whole batch, however short it is.</p>"
    "<p><b>Continuous batching</b> (iteration-level scheduling) looks at the batch between every two forward passes: "
    "finished requests leave at once and waiting ones take their slots. There is no batch boundary any more; the "
    "batch is simply whoever is running now. It does not make one forward pass any faster. It removes the gaps, the "
    "padding and the wait for the next batch, and on real traffic, where a few answers are many times longer than "
    'most, that is worth <span data-claim="gain-2-4x">2-4x the throughput on heavy-tailed traffic that keeps a '
    "queue (the chapter's figure; <code>batchviz compare</code>'s 256 chat-shaped requests, in the cards below)</span> "
    '<span data-claim="latency-lower">with lower latency at the same time</span>. The small example the timelines '
    "open on shows its own ratio, which the head-to-head states.</p>"
)

SPREAD = (
    "<h3>The gain comes from the spread of lengths, once requests queue</h3>"
    "<p>Static batching loses slot-time three ways, each counted in the head-to-head: <b>padding</b> (a finished "
    "member keeps its slot until the longest one ends), <b>empty slots while requests wait</b> (a batch that formed "
    "partly filled), and the <b>wait for the next batch boundary</b>. Each button below loads a lesson's traffic on "
    "4 slots, counted in steps. "
    '<span data-claim="fixed-queued-identical">Queue every request at step 0 with equal lengths, and all three '
    "vanish: every batch is full and finishes together, so the two timelines and the head-to-head bars are "
    "identical.</span> "
    '<span data-claim="heavy-queued-gap">Give the same queue heavy-tailed lengths and the padding comes back, and '
    "with it the gap.</span> "
    '<span data-claim="fixed-spread-boundary">Now let the equal-length requests arrive over 18 steps: on 4 slots '
    "static pads nothing, yet it still falls behind, because a request that arrives while a batch runs waits for "
    "the batch boundary with slots empty beside it.</span> That is the chapter's second gain: latency improves too, "
    "because continuous batching has no boundary to wait for.</p>"
)


def _parts(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _same(starts, finishes, release_first) -> bool:
    """Return whether two schedules are the same: starts and finishes equal, nobody kept past its finish."""
    return (
        np.array_equal(*starts) and np.array_equal(*finishes) and np.array_equal(release_first, finishes[0])
    )


def _here_on_a_clock(timed: tuple[TimedRun, TimedRun], where: str) -> str:
    """Return the "Here" line on a clock: the drains in ms (padding priced even where the schedules agree), latency."""
    from core.sched.timed import timed_metrics

    same = _same(
        (timed[0].start_pass, timed[1].start_pass), (timed[0].finish_pass, timed[1].finish_pass), timed[0].release_pass
    )
    ts, tc = (timed_metrics(run) for run in timed)
    ds, dc = float(timed[0].drain_ms), float(timed[1].drain_ms)
    prompts = [int(run.pass_prefill.sum()) for run in timed]
    text = f"static finishes at {ds:,.1f} ms against continuous's {dc:,.1f}"
    if same and ds != dc:
        text = (
            f"the two schedules are the same pass for pass, yet {text}: static's prompt pass computes every "
            f"prompt padded to its batch's longest ({prompts[0]:,} prompt tokens against {prompts[1]:,}) and its "
            "decode passes read the padded rows' KV too"
        )
    elif same:
        text = f"the two schedules are identical, and both finish at {ds:,.1f} ms"
    latency = f"mean latency over every request {ts.e2e_ms['mean']:,.1f} ms against {tc.e2e_ms['mean']:,.1f}"
    return f'<p class="bv-here" data-here="clock"><b>Here</b> ({where}): {text}; {latency}.</p>'


def _here_identical(static: Run, continuous: Run, where: str) -> str:
    """Return the "Here" line where both timelines are identical: what static did not lose, and the KV strips."""
    kv = [run.schedule.blocks_by_step() if run.schedule is not None else None for run in (static, continuous)]
    strips = ""
    if kv[0] is not None and kv[1] is not None and not np.array_equal(kv[0], kv[1]):
        strips = (
            f" Their KV strips still differ: each static row reserves {STATIC_ROW} when its batch starts, "
            "the paged cache a block as its tokens need one (memory, not scheduling)."
        )
    return (
        f'<p class="bv-here" data-here="identical"><b>Here</b> ({where}): the two timelines are identical and '
        f"both finish at step {static.drain}: static pads nothing, no slot stands empty while a request waits, "
        f"and nobody waits for a batch boundary.{strips}</p>"
    )


def here_html(
    static: Run, continuous: Run, window: int, timed: tuple[TimedRun, TimedRun] | None = None, limited: bool = False
) -> str:
    """Return what holds on the view on screen, from its runs: identical or not, each loss, drains, latency.

    The lessons' sentences are about their own settings; this line is about whatever the learner has set (any seed,
    slots, lengths or clock), so no general sentence stands beside a view that contradicts it. `limited`: the
    learner set a KV pool, where a request may also wait for blocks.
    """
    from core import compute_metrics
    from core.measure.losses import losses

    where = f"{plural(static.slots, 'slot')}, " + ("on a clock" if timed else f"steps 0–{window - 1}")
    if timed is not None:
        return _here_on_a_clock(timed, where)
    if _same((static.start, continuous.start), (static.finish, continuous.finish), static.release):
        return _here_identical(static, continuous, where)
    loss = losses(static, window)
    # On a limited pool a slot also stands empty while its request waits for KV blocks, not only for a boundary.
    why = "for a batch boundary or for KV blocks" if limited else "for a batch boundary"
    if static.batch_timeout:  # a batch also waits, up to its timeout, for more requests to fill it
        why = why.replace("for a batch boundary", "for a batch to form or end")
    items = [
        f"pads {plural(loss.padding, 'slot-step')}" if loss.padding else "pads nothing",
        f"leaves {plural(loss.idle_while_waiting, 'slot-step')} empty that waiting requests could have taken"
        if loss.idle_while_waiting
        else "never leaves a slot empty while a request waits",
        f"keeps requests waiting {plural(loss.boundary_wait, 'request-step')} {why}"
        if loss.boundary_wait
        else "keeps nobody waiting for a boundary",
    ]
    ms, mc = compute_metrics(static, window), compute_metrics(continuous, window)
    drains = (
        f"both finish at step {static.drain}"
        if static.drain == continuous.drain
        else f"static finishes at step {static.drain} against continuous's {continuous.drain}"
    )
    latency = f"mean latency over every request {ms.avg_latency_all:.1f} steps against {mc.avg_latency_all:.1f}"
    return (
        f'<p class="bv-here" data-here="steps"><b>Here</b> ({where}): static {_parts(items)}'
        f"{_continuous_waits(continuous, window)}; {drains}; {latency}.</p>"
    )


def _continuous_waits(continuous: Run, window: int) -> str:
    """Return continuous's own empty slots and waits, where a KV pool makes it have any ("" elsewhere).

    Without a pool continuous never leaves a slot empty while a request waits; short of blocks it does, and the
    line says so rather than list static's losses alone (a learner found them only in the table, issue 47).
    """
    from core.measure.losses import losses

    loss = losses(continuous, window)
    if not (loss.idle_while_waiting or loss.boundary_wait):
        return ""
    return (
        f"; continuous, short of KV blocks, leaves {plural(loss.idle_while_waiting, 'slot-step')} empty while "
        f"requests wait for blocks and keeps requests waiting {plural(loss.boundary_wait, 'request-step')}"
    )


# One click each: the settings that make the lesson's sentence true (tested in tests/test_page_claims.py), on
# LESSON_SLOTS slots: with as many slots as requests every batch holds the whole queue and the gap closes.
LESSON_SLOTS = 4
LESSONS = {
    "fixed-queued": ("Fixed lengths, all queued at step 0", {"lengths": "fixed", "arrival_window": 1}),
    "heavy-queued": ("Heavy-tailed, all queued at step 0", {"lengths": "heavy", "arrival_window": 1}),
    "fixed-spread": ("Fixed lengths, arriving over 18 steps", {"lengths": "fixed", "arrival_window": 18}),
}


def worked_html(figures: dict[str, int]) -> str:
    """Return the worked example's caption, every figure from the core's schedules of A-F (`worked_figures`)."""
    f = {k: f'<b data-worked="{k}">{v}</b>' for k, v in figures.items()}
    return (
        '<div class="bv-worked" data-claim="worked-figures"><h3>The chapter\'s worked example: six requests, four '
        "slots</h3><p><b>Static</b> pads "
        f"{f['static_padding']} slot-steps and makes E and F wait {f['static_wait_e']} and {f['static_wait_f']} "
        f"steps for the first batch to end; everything is done at t={f['static_drain']}. <b>Continuous</b> leaves "
        f"{f['continuous_idle']} slot-steps idle (spare capacity: nobody was waiting), starts E and F "
        f"{f['continuous_earlier_e']} and {f['continuous_earlier_f']} steps earlier, and is done at "
        f"t={f['continuous_drain']}. Both complete all six: what differs is when (the drain and the waits "
        "below).</p></div>"
    )


ONE_SLOT = (
    "<h3>Try slots = 1</h3>"
    '<p><span data-claim="one-slot-identical">With one slot, static and continuous batching both run one request at '
    "a time in arrival order, and their two timelines are identical</span> (the button shows them; shortest first "
    "and priority still reorder the queue): there is no padding to remove. Continuous batching is an "
    "occupancy optimisation, not a faster kernel.</p>"
)
# The served page draws a KV strip under each timeline (the exported page has none: memory needs the server).
ONE_SLOT_KV = (
    '<p><span data-claim="one-slot-kv">With one slot, on the steps axis with the page\'s paged cache, the KV strips '
    f"under the two timelines still differ: each static row reserves {STATIC_ROW} when its batch starts, while the "
    "paged cache takes a block as the tokens need one, so static holds at least as many blocks at every step. That "
    "difference is memory allocation, not scheduling.</span></p>"
)

NOT_FIXED = (
    "<h3>What batching does not fix</h3>"
    "<p>On the steps axis every forward pass costs one step, whatever it holds; on a clock (the time axis in ms, "
    '<a href="?clock=ms">on a clock</a>) each pass takes what a real GPU would. On a real GPU a small batch is '
    "memory-bound: "
    "reading the weights dominates, so more rows are nearly free. Past a point the batch becomes compute-bound, each "
    "step gets slower as rows are added, and every request in the batch feels it: a single request's latency gets "
    "worse, not better. Batching raises throughput; it never makes one request faster than running it alone. "
    "Choosing the batch size, the largest one whose step time still meets the latency target, is the next "
    'problem: <a href="?tab=knee">Exercise 1, find the knee</a>.</p>'
)
