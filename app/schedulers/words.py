"""The schedulers tab's words: its table with the best of each row marked, the guess, and the lessons' sentences.

Every sentence that claims a relation is computed from the runs on screen: its numbers are theirs and its verbs
follow the numbers ("falls" only where it is lower by more than the lineup's THRESHOLD, else "alike", as the table's
stars tie), and a lesson's sentence shows only where its pair is on screen.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Sequence

import numpy as np

from app.page.words import plural, times, value_range
from core.clock.cost import StepCost
from core.measure.lineup import LOWER, THRESHOLD, Line, best, differs
from core.measure.serving import per_request
from core.states import PAUSED

# (figure, words, format): the table's rows, in the order an engineer reads them.
ROWS = (
    ("ttft_p50", "TTFT p50 (ms)", "{:,.1f}"),
    ("ttft_p99", "TTFT p99 (ms)", "{:,.1f}"),
    ("itl_p50", "ITL p50, all gaps pooled (ms)", "{:,.1f}"),
    ("itl_p99", "ITL p99, all gaps pooled (ms)", "{:,.1f}"),
    ("tpot_p50", "TPOT, each request's mean: p50 (ms)", "{:,.1f}"),
    ("tpot_p99", "TPOT, each request's mean: p99 (ms)", "{:,.1f}"),
    ("stall_p99", "Longest stall, p99 over requests (ms)", "{:,.1f}"),
    ("stall_max", "Longest stall of any request (ms)", "{:,.1f}"),
    ("latency_p50", "End-to-end p50 (ms)", "{:,.0f}"),
    ("latency_p99", "End-to-end p99 (ms)", "{:,.0f}"),
    ("wait_mean", "Queue wait, mean (ms)", "{:,.1f}"),
    ("throughput", "Throughput (tokens/s)", "{:,.0f}"),
    ("preemptions", "Preemptions", "{:,}"),
    ("slo_attainment", "Met both targets", "{:.0%}"),
    ("goodput", "Goodput (requests/s)", "{:,.2f}"),
    ("fairness", "Fairness (Jain, slowdown)", "{:.3f}"),
)
# The question a lineup asks before its table: figure -> (its words, its unit, its format).
QUESTIONS = {
    "ttft_p99": ("the lowest p99 TTFT", " ms", "{:,.1f}"),
    "itl_p99": ("the lowest ITL p99 (all gaps pooled)", " ms", "{:,.1f}"),
    "tpot_p99": ("the lowest TPOT p99 (each request's mean time per token)", " ms", "{:,.1f}"),
    "latency_p50": ("the lowest median end-to-end latency", " ms", "{:,.0f}"),
    "throughput": ("the highest throughput", " tokens/s", "{:,.0f}"),
    "goodput": ("the highest goodput", " requests/s", "{:,.2f}"),
}


def shown_best(lines: Sequence[Line], field: str, fmt: str) -> set[int]:
    """Return the lines a row stars: the leaders of `field` (ties within THRESHOLD), and any that reads as a leader.

    None where every entry reads the same on the page (a star there would mark a difference nobody can see).
    """
    texts = [fmt.format(getattr(line.figures, field)) for line in lines]
    leaders = best(lines, field)
    if len(set(texts)) == 1 or not leaders:
        return set()
    shown = {texts[i] for i in leaders}
    return {i for i, text in enumerate(texts) if text in shown}


def column_label(line: Line) -> str:
    """Return an entry's label as its column and its verdict name it: an engine without a request cap says so."""
    label = line.entry.label()
    if line.run.rules.has_request_cap:
        return label
    return label[:-1] + "; no request cap)" if label.endswith(")") else label + " (no request cap)"


def table_html(lines: Sequence[Line], ttft_ms: float, itl_ms: float) -> str:
    """Return the figures side by side, each row's best marked (a star and bold) where the entries differ."""
    # A setting's name may break after each underscore (waiting_served_ratio), never inside a word.
    head = "".join(f'<th scope="col">{html.escape(column_label(line)).replace("_", "_<wbr>")}</th>' for line in lines)
    body = []
    for field, words, fmt in ROWS:
        leaders = shown_best(lines, field, fmt)
        cells = []
        for i, line in enumerate(lines):
            text = fmt.format(getattr(line.figures, field))
            lead = i in leaders
            mark = f"<b>{text} ★</b>" if lead else text
            cells.append(f'<td data-col="{i}" data-best="{int(lead)}">{mark}</td>')
        body.append(f'<tr data-row="{field}"><th scope="row">{words}</th>{"".join(cells)}</tr>')
    caption = (
        f"Each scheduler on the same requests, KV pool and clock, and the same slots but for an engine without a "
        f"request cap. ★: the best of the row, and any within {THRESHOLD.share:.0%} of it, or for a time within "
        f"{THRESHOLD.ms:g} ms: a smaller difference is not claimed (the sentences call it alike), and a row where "
        f"all are alike has no star. Targets, DistServe's: TTFT at most {ttft_ms:g} ms and each request's mean "
        f"TPOT (time per output token after its first) at most {itl_ms:g} ms (goodput: the requests that met both, "
        "per second). TPOT rows: over the requests of two tokens or more. A request's longest stall is its largest "
        "gap between two tokens, which a p99 of pooled gaps hides. Fairness: Jain's index over each request's "
        "latency divided by its latency alone on the same engine (1: everyone slowed alike)."
    )
    return (
        # The page's compact type, 4 px between columns: four engines and the rows' names fit a phone's 390 px; the
        # frame scrolls what still cannot (long settings' names).
        "<style>.bv-h2h-compact table.bv-lineup-table :is(th, td) { padding: 2px 4px; }</style>"
        '<div class="bv-h2h-compact" style="overflow-x: auto; max-width: 100%" tabindex="0" role="region" '
        'aria-label="The schedulers side by side">'
        f'<table class="bv-h2h bv-lineup-table"><thead><tr><th></th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div><p>{caption}</p>"
    )


def load_html(lines: Sequence[Line], budget: int | dict[str, int] | None = None, unlimited: bool = False) -> str:
    """Return the traffic against the schedulers (arrivals, drains, TTFT), and which entries look alike on it."""
    run = lines[0].run
    n, arrivals = len(run.requests), float(run.arrival_ms.max() - run.arrival_ms.min()) / 1e3
    drains = [float(line.run.drain_ms) / 1e3 for line in lines]
    waits = [line.figures.wait_mean for line in lines]
    ttfts = [float(np.mean(line.run.first_token_ms - line.run.arrival_ms)) for line in lines]
    shares = [w / t if t > 0 else 0.0 for w, t in zip(waits, ttfts)]
    capped = [line.run.slots for line in lines if line.run.rules.has_request_cap]
    where = f"on {capped[0]} slots" if capped else "with no request cap"
    return (
        f'<p data-claim="load">{n} requests arrive over {arrivals:,.1f} s {where}; the schedulers finish them '
        f"in {value_range(min(drains), max(drains), '{:,.1f}', ' s')}. The mean wait to be admitted (for a slot or "
        f"for KV blocks) is {value_range(min(waits), max(waits), '{:,.0f}', ' ms')} of a mean TTFT of "
        f"{value_range(min(ttfts), max(ttfts), '{:,.0f}', ' ms')}: {_wait_words(lines, shares)}.</p>"
        + uncapped_html(lines)
        + alike_html(lines, budget, unlimited)
    )


def _wait_words(lines: Sequence[Line], shares: Sequence[float]) -> str:
    """Return how much of each entry's time to first token is the wait to be admitted: most, part or little."""
    groups: dict[str, list[str]] = {}
    for line, share in zip(lines, shares):
        how = "most" if share > 0.5 else "part" if share > 0.05 else "little"
        groups.setdefault(how, []).append(html.escape(column_label(line)))
    if len(groups) == 1:
        return f"{next(iter(groups))} of the time to first token here is that wait"
    said = [f"{how} of it for {_names(names)}" for how, names in groups.items()]
    return "of the time to first token here, that wait is " + "; ".join(said)


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def uncapped_html(lines: Sequence[Line]) -> str:
    """Return, for an entry without a request cap (TGI), how many it ran at once against the others' cap ("" : none)."""
    capped = [line.run.slots for line in lines if line.run.rules.has_request_cap]
    if not capped:
        return ""
    out = []
    for line in lines:
        if line.run.rules.has_request_cap:
            continue
        most = int(line.run.slot.max(initial=0)) + 1  # the lowest free slot each time: the rows used are the peak
        if most > capped[0]:
            out.append(
                f"{html.escape(line.entry.label())} has no request cap: it ran up to {most} requests at once where "
                f"the others ran at most {capped[0]}, the slots standing for their caps (vLLM's max_num_seqs is 1,024 "
                f"by default on an H100, 256 on an A100); to compare the rules alone, give the others {most} slots"
            )
    return f'<p data-claim="uncapped">{"; ".join(out)}.</p>' if out else ""


# Two timelines whose every start, first token and finish lie within this share of the run of each other look the
# same on the page (half a percent: a few pixels at most): the page says so, with the largest difference.
ALIKE = 0.005
TIMES = ("start_ms", "first_token_ms", "finish_ms")


def gap_ms(a: Line, b: Line) -> float | None:
    """Return the largest difference between two entries' starts, first tokens and finishes (None: other slots)."""
    ra, rb = a.run, b.run
    if not np.array_equal(ra.slot, rb.slot) or paused_passes(a) != paused_passes(b):
        return None
    return max(float(np.abs(getattr(ra, c) - getattr(rb, c)).max(initial=0.0)) for c in TIMES)


def _split_words(a: Line, b: Line, budget: int | dict[str, int] | None) -> str:
    """Return the prompts one entry splits over passes (over its token budget) and the other computes in one.

    `budget`: every budgeted entry's, or each one's by its link text (each engine at its own default).
    """
    split = [line.entry.policy().has_token_budget for line in (a, b)]
    if budget is None or split[0] == split[1] or a.figures.preemptions or b.figures.preemptions:
        return ""
    chunks, whole = (a, b) if split[0] else (b, a)
    budget = budget.get(chunks.entry.text()) if isinstance(budget, dict) else budget
    over = sorted(r.prompt_tokens for r in a.run.requests if budget is not None and r.prompt_tokens > budget)
    if not over:
        return ""
    return (
        f"; where they part: {plural(len(over), 'prompt')} of these requests "
        f"({', '.join(f'{t:,}' for t in over[:3])}{', ...' if len(over) > 3 else ''} tokens) "
        f"{'is' if len(over) == 1 else 'are'} over the {budget:,}-token budget, which "
        f"{html.escape(chunks.entry.label())} computes over more than one pass and "
        f"{html.escape(whole.entry.label())} in one"
    )


def alike_html(lines: Sequence[Line], budget: int | dict[str, int] | None = None, unlimited: bool = False) -> str:
    """Return which entries on screen draw the same timeline, or one the eye cannot tell apart, and by how much.

    `budget` is the budgeted presets' tokens a pass (or each one's, by its link text); the split prompts are named
    as the difference only on an unlimited pool without preemptions (elsewhere memory can part two entries too).
    """
    said = []
    run_ms = max((float(line.run.drain_ms) for line in lines), default=0.0)
    for i, j in itertools.combinations(range(len(lines)), 2):
        gap = gap_ms(lines[i], lines[j])
        if gap is None or gap > ALIKE * run_ms:
            continue
        names = f"{html.escape(lines[i].entry.label())} and {html.escape(lines[j].entry.label())}"
        if gap == 0:
            said.append(
                f'<p data-claim="same-timeline" data-alike="{i},{j}" data-gap-ms="0">Here {names} draw the same '
                "timeline: every request takes the same slot and starts, gets its first token and finishes at the "
                "same moment under each, so their columns in the table match: their rules differ, but not in any "
                "choice these requests put to them.</p>"
            )
            continue
        why = _split_words(lines[i], lines[j], budget if unlimited else None)
        said.append(
            f'<p data-claim="same-timeline" data-alike="{i},{j}" data-gap-ms="{gap:.1f}">Here {names} look alike: '
            f"every request takes the same slot, and no start, first token or finish differs by more than "
            f"{gap:,.1f} ms ({_share(gap / run_ms)} of the {run_ms / 1e3:,.1f} s run){why}.</p>"
        )
    return "".join(said)


def _share(x: float) -> str:
    """Return a small share as it reads: "0.27%", or "under 0.01%" where two decimals would show 0.00%."""
    return f"{x:.2%}" if x >= 0.00005 else "under 0.01%"


def _more_at_once(lines: Sequence[Line], k: int) -> str:
    """Return ", running up to N at once against the others' M" where line k has no request cap and ran more."""
    capped = [line.run.slots for line in lines if line.run.rules.has_request_cap]
    run = lines[k].run
    if run.rules.has_request_cap or not capped or run.slots <= capped[0]:
        return ""
    return f", running up to {run.slots} requests at once against the others' {capped[0]}"


def guess_html(lines: Sequence[Line], guess: int | None, field: str = "ttft_p99") -> str:
    """Return the question before the guess; after it, whether it was right, with the figures that decide it."""
    words, unit, fmt = QUESTIONS[field]
    show = lambda k: fmt.format(values[k]) + unit  # noqa: E731
    if guess is None:
        return (
            '<p class="bv-lineup-guess" data-lineup-guess="ask"><b>Your guess first.</b> On this traffic, which '
            f"scheduler will have {words}? The table shows once you pick.</p>"
        )
    values = [getattr(line.figures, field) for line in lines]
    leaders = shown_best(lines, field, fmt)  # a tie on the page is a tie
    picked = lines[guess].entry.label()
    if not leaders:  # every entry within the THRESHOLD of the best: alike, though they may read apart
        low, high = show(int(np.argmin(values))), show(int(np.argmax(values)))
        alike = f"all read {low}" if low == high else f"all are alike ({low} to {high})"
        verdict = f'{alike}: <b data-lineup-guess="right">any pick is right</b>.'
    elif guess in leaders:
        top = int(np.argmin(values) if field in LOWER else np.argmax(values))
        tie = f", alike the best's {show(top)}" if show(top) != show(guess) else ""
        others = [html.escape(column_label(lines[i])) for i in sorted(leaders) if i != guess]
        shared = f" (tied with {_names(others)})" if others else ""
        verdict = f'<b data-lineup-guess="right">right</b>: {show(guess)}{tie}{shared}.'
    else:
        lead = min(leaders)
        verdict = (
            f'<b data-lineup-guess="wrong">not quite</b>: {html.escape(column_label(lines[lead]))} has {words}, '
            f"{show(lead)} against {show(guess)}{_more_at_once(lines, lead)}."
        )
    return f'<p class="bv-lineup-guess">You picked {html.escape(picked)}: {verdict}</p>'


def paused_passes(line: Line) -> int:
    """Return how many passes paused the running requests for others' prompts (TGI, SGLang)."""
    s = line.run.schedule
    if s is None or not len(s.cells):
        return 0
    paused = s.cells[s.cells[:, 4] == PAUSED]
    return len({p for lo, hi in paused[:, 2:4].tolist() for p in range(lo, hi)})


def _than(a: float, b: float, lower: str, higher: str, same: str, time: bool = True) -> str:
    """Return the verb a comparison of a with b earns: `same` unless they differ past the lineup's THRESHOLD."""
    return same if not differs(a, b, time) else lower if a < b else higher


def _moves(a: float, b: float, time: bool = True) -> str:
    """Return how a figure moves from b to a: falls, rises, or is alike (within the THRESHOLD)."""
    return _than(a, b, "falls", "rises", "is alike", time)


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
    tpot, ttft = _moves(a.tpot_p99, b.tpot_p99), _moves(a.ttft_p99, b.ttft_p99)
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
    more = _than(mu_mean, ne_mean, "fewer", "more", "about as many", time=False)
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
    hi_verb, lo_verb = _moves(a[high][1], b[high][1]), _moves(a[low][1], b[low][1])
    fair = _moves(pri.figures.fairness, fcfs.figures.fairness, time=False)
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
        f'<p data-claim="sjf">Here under shortest-first the mean end-to-end latency {_moves(mean_s, mean_c)} '
        f"({mean_s:,.0f} ms against {mean_c:,.0f} in arrival order) while the {n} longest answers "
        f"{_than(long_s, long_c, 'finish sooner', 'finish later', 'are alike')} ({long_s:,.0f} ms against "
        f"{long_c:,.0f} end to end on average).</p>"
    )


def lessons_html(lines: Sequence[Line], cost: StepCost) -> str:
    """Return every lesson's sentence that applies to the lineup on screen (none where no pair applies)."""
    return "".join((ratio_html(lines), evict_html(lines), priority_html(lines, cost), sjf_html(lines)))
