"""The schedulers tab's words: the load on them, the guess, and the table with the best of each row marked.

Every sentence that claims a relation is computed from the runs on screen: its numbers are theirs and its verbs
follow the numbers ("falls" only where it is lower by more than the lineup's THRESHOLD, else "alike", as the table's
stars tie). The lessons' sentences are app/schedulers/lessons.py's, which pairs look alike app/schedulers/alike.py's.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

from app.page.words import value_range
from app.schedulers.alike import alike_html
from app.schedulers.lessons import lessons_html as lessons_html  # the page and its export read them from here
from app.schedulers.phrases import ROWS, listed, shown_best
from core.measure.lineup import LOWER, THRESHOLD, Line

# The question a lineup asks before its table: figure -> (its words, its unit, its format).
QUESTIONS = {
    "ttft_p99": ("the lowest p99 TTFT", " ms", "{:,.1f}"),
    "itl_p99": ("the lowest ITL p99 (all gaps pooled)", " ms", "{:,.1f}"),
    "tpot_p99": ("the lowest TPOT p99 (each request's mean time per token)", " ms", "{:,.1f}"),
    "latency_p50": ("the lowest median end-to-end latency", " ms", "{:,.0f}"),
    "throughput": ("the highest throughput", " tokens/s", "{:,.0f}"),
    "goodput": ("the highest goodput", " requests/s", "{:,.2f}"),
}


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
    said = [f"{how} of it for {listed(names)}" for how, names in groups.items()]
    return "of the time to first token here, that wait is " + "; ".join(said)


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
        shared = f" (tied with {listed(others)})" if others else ""
        verdict = f'<b data-lineup-guess="right">right</b>: {show(guess)}{tie}{shared}.'
    else:
        lead = min(leaders)
        verdict = (
            f'<b data-lineup-guess="wrong">not quite</b>: {html.escape(column_label(lines[lead]))} has {words}, '
            f"{show(lead)} against {show(guess)}{_more_at_once(lines, lead)}."
        )
    return f'<p class="bv-lineup-guess">You picked {html.escape(picked)}: {verdict}</p>'
