"""Which entries on screen draw the same timeline, or one the eye cannot tell apart, by how much, and why."""

from __future__ import annotations

import html
import itertools
from collections.abc import Sequence

import numpy as np

from app.page.words import plural
from app.schedulers.phrases import paused_passes, share_text
from core.measure.lineup import Line
from core.states import PREFILL

# Two timelines whose every start, first token and finish lie within this share of the run of each other look the
# same on the page (half a percent: a few pixels at most): the page says so, with the largest difference.
ALIKE = 0.005
TIMES = ("start_ms", "first_token_ms", "finish_ms")
WHOLE_LIFE = "each request's prompt plus its answer cap at admission"


def gap_ms(a: Line, b: Line) -> float | None:
    """Return the largest difference between two entries' starts, first tokens and finishes (None: drawn apart).

    Drawn apart: other slots, other paused passes, or padding (static's hatching) where the other has none.
    """
    ra, rb = a.run, b.run
    if not np.array_equal(ra.slot, rb.slot) or paused_passes(a) != paused_passes(b):
        return None
    if not np.array_equal(ra.release_ms > ra.finish_ms, rb.release_ms > rb.finish_ms):
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


def _name(line: Line) -> str:
    return html.escape(line.entry.label())


def _clauses(said: Sequence[str]) -> str:
    """Return clauses that hold commas of their own as one list: "a; b; and c"."""
    return said[0] if len(said) == 1 else "; ".join(said[:-1]) + "; and " + said[-1]


def _blocked(line: Line) -> list[tuple[int, int]]:
    """Return the passes at which the pool held the queue's head back from a free slot, with that request."""
    s = line.run.schedule
    return [(e.step, e.request) for e in (s.events if s is not None else ()) if e.kind == "blocked"]


def _chunked(line: Line) -> bool:
    """Return whether the run cut a prompt into chunks (a prompt pass that yields no token: a prefill cell)."""
    s = line.run.schedule
    return s is not None and len(s.cells) > 0 and bool((s.cells[:, 4] == PREFILL).any())


def _pool(line: Line) -> tuple[int | None, str]:
    """Return the KV pool's blocks the run had (None: unlimited) and how requests take them (paged, contiguous)."""
    s = line.run.schedule  # a run without a record ran a fast loop, on an unlimited paged pool
    return (s.memory.kv_blocks, s.memory.allocation) if s is not None else (None, "paged")


def _cap_words(a: Line, b: Line) -> list[str]:
    """Where one entry has no request cap: the most it ran at once, within the other's slots."""
    if a.run.rules.has_request_cap == b.run.rules.has_request_cap:
        return []
    capped, free = (a, b) if a.run.rules.has_request_cap else (b, a)
    most = int(free.run.slot.max(initial=0)) + 1  # the lowest free slot each time: the rows used are the peak
    return [f"{_name(free)}, without a request cap, never ran more than {most} at once, within {_name(capped)}'s "
            f"{capped.run.slots} slots"]  # fmt: skip


def _pool_words(a: Line, b: Line) -> list[str]:
    """Where the entries reserve KV differently, or alike on a pool that held requests back: what the pool did."""
    pool, allocation = _pool(a)
    whole = [line.entry.policy().reserves_whole_life(allocation) for line in (a, b)]
    blocked = _blocked(a)
    if whole[0] == whole[1]:
        if not (whole[0] and pool and blocked and blocked == _blocked(b)):
            return []
        return [f"both reserve {WHOLE_LIFE}, so the {pool:,}-block pool held the next request back at the same "
                f"passes under each ({plural(len(blocked), 'time')})"]  # fmt: skip
    keeps, takes = (a, b) if whole[0] else (b, a)
    if pool is None:
        return [f"on an unlimited pool, {_name(keeps)}'s reserving {WHOLE_LIFE} holds no one back"]
    if _blocked(keeps) or _blocked(takes) or keeps.figures.preemptions or takes.figures.preemptions:
        return []
    return [f"the {pool:,}-block pool never held the next request back from a free slot under either, so "
            f"{_name(keeps)}'s reserving {WHOLE_LIFE} cost nothing and {_name(takes)} preempted no one"]  # fmt: skip


def _prompt_words(a: Line, b: Line, budget: int | dict[str, int] | None) -> list[str]:
    """Where the entries put prompts into passes by other rules: no prompt was cut into chunks under either."""

    def rule(line: Line) -> tuple:
        pol = line.entry.policy()
        own = budget.get(line.entry.text()) if isinstance(budget, dict) else budget
        return pol.has_token_budget and own, pol.prompt_tokens_cap(()), pol.cap_counts_decoders

    if rule(a) == rule(b) or _chunked(a) or _chunked(b):
        return []
    longest = max(r.prompt_tokens for r in a.run.requests)
    return [f"no prompt was cut into chunks under either (the longest, {longest:,} tokens, went into one pass)"]


def _order_words(a: Line, b: Line) -> list[str]:
    """Where an entry orders its queue its own way: every request of one class, or no later arrival let in first."""
    out = []
    for own in (line for line in (a, b) if line.entry.policy().ordered):
        run = own.run
        if own.entry.policy().orders_by_class and len({r.priority for r in run.requests}) == 1:
            out.append(f"every request here is in one priority class, so {_name(own)}'s queue is in arrival order")
        elif (np.diff(run.start_ms[np.argsort(run.arrival_ms, kind="stable")]) >= 0).all():
            out.append(f"{_name(own)} admitted no later arrival ahead of an earlier one: its queue kept arrival order")
    return out


def _batch_words(a: Line, b: Line) -> list[str]:
    """Where one entry pauses its running rows for prompts, or forms static batches: it never did here."""
    out = []
    for line in (a, b):
        pol = line.entry.policy()
        if (pol.pauses_decoders or pol.prefill_first) and not paused_passes(line):
            out.append(f"{_name(line)} never paused its running requests for a prompt pass")
        if pol.forms_batches and not (line.run.release_ms > line.run.finish_ms).any():
            out.append(f"{_name(line)}'s batches padded no slot: each request's slot came free as it finished")
    return out


def why_same(a: Line, b: Line, budget: int | dict[str, int] | None = None) -> list[str]:
    """Return, for two entries drawing the same timeline, what these runs show kept each rule that parts them idle.

    Each reason is read from the runs on screen: a cap never reached, a pool that never held a request back (or held
    it back alike under two rules that reserve alike), no prompt cut into chunks, no later arrival admitted first, no
    pause, no padding. A rule that parts them without such a reading is left unsaid.
    """
    return [
        *_cap_words(a, b),
        *_pool_words(a, b),
        *_prompt_words(a, b, budget),
        *_order_words(a, b),
        *_batch_words(a, b),
    ]


def alike_html(lines: Sequence[Line], budget: int | dict[str, int] | None = None, unlimited: bool = False) -> str:
    """Return which entries draw the same timeline, and why, or one the eye cannot tell apart, and by how much.

    `budget` is the budgeted presets' tokens a pass (or each one's, by its link text); the split prompts are named
    as the difference only on an unlimited pool without preemptions (elsewhere memory can part two entries too).
    """
    said = []
    run_ms = max((float(line.run.drain_ms) for line in lines), default=0.0)
    for i, j in itertools.combinations(range(len(lines)), 2):
        gap = gap_ms(lines[i], lines[j])
        if gap is None or gap > ALIKE * run_ms:
            continue
        names = f"{_name(lines[i])} and {_name(lines[j])}"
        if gap == 0:
            why = why_same(lines[i], lines[j], budget)
            because = (
                f"what parts their rules never came into play here: {_clauses(why)}"
                if why
                else "their rules differ, but not in any choice these requests put to them"
            )
            said.append(
                f'<p data-claim="same-timeline" data-alike="{i},{j}" data-gap-ms="0">Here {names} draw the same '
                "timeline (every request takes the same slot and starts, gets its first token and finishes at the "
                f"same moment under each, so their columns in the table match) because {because}.</p>"
            )
            continue
        why = _split_words(lines[i], lines[j], budget if unlimited else None)
        said.append(
            f'<p data-claim="same-timeline" data-alike="{i},{j}" data-gap-ms="{gap:.1f}">Here {names} look alike: '
            f"every request takes the same slot, and no start, first token or finish differs by more than "
            f"{gap:,.1f} ms ({share_text(gap / run_ms)} of the {run_ms / 1e3:,.1f} s run){why}.</p>"
        )
    return "".join(said)
