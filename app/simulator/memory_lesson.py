"""The simulator's memory lesson: the chapter's traffic on one KV pool, paged against contiguous against static.

Its pool is exactly the blocks continuous batching held at its peak with unlimited memory, so the sentence "paged
changes nothing" is a fact about the runs, and every figure in the text is read from the core's runs (tested in
tests/test_simulator_memory.py and, on the page, tests/browser/test_simulator_memory.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from app.page.words import plural
from app.simulator.state import BLOCK_SIZE, least_pool, shared_runs
from core.chapter.chapter_traffic import chapter_traffic
from core.kv.memory import ENGINE_BLOCK_SIZE as LINEUP_BLOCK_SIZE
from core.sched.policies import STATIC_ROW

SLOTS = 4  # the chapter's slots, as the other lessons


@dataclass(frozen=True)
class MemoryLesson:
    """The lesson's figures, each from a run on the chapter's traffic at SLOTS slots."""

    pool: int  # continuous batching's peak blocks with unlimited memory: the lesson's pool
    static_peak: int  # static's reserved peak with unlimited memory
    unlimited_drain: dict  # policy -> drain with unlimited memory
    paged_drain: int
    paged_preemptions: int
    paged_waits: int
    contiguous_drain: int
    contiguous_waits: int  # steps the next request waited for memory beside an empty slot
    contiguous_holes: int  # ... of which enough blocks were free, only not in one run
    static_drain: int
    tight_pool: int  # the least pool the traffic fits in
    tight_drain: int
    tight_preemptions: int


def _waits(run) -> list:
    return [d for d in run.log if d.kind == "wait"]


@lru_cache(maxsize=1)
def lesson() -> MemoryLesson:
    """Return the lesson's figures from the core's runs."""
    traffic = tuple(chapter_traffic())
    free = shared_runs(traffic, SLOTS, 0)
    pool = int(free["continuous"].schedule.blocks_by_step().max())
    paged, contiguous = (shared_runs(traffic, SLOTS, 0, pool, a) for a in ("paged", "contiguous"))
    tight = least_pool(traffic)
    squeezed = shared_runs(traffic, SLOTS, 0, tight, "paged")["continuous"]
    waits = _waits(contiguous["continuous"])
    return MemoryLesson(
        pool=pool,
        static_peak=int(free["static"].schedule.blocks_by_step().max()),
        unlimited_drain={policy: run.drain for policy, run in free.items()},
        paged_drain=paged["continuous"].drain,
        paged_preemptions=paged["continuous"].schedule.preemptions,
        paged_waits=len(_waits(paged["continuous"])),
        contiguous_drain=contiguous["continuous"].drain,
        contiguous_waits=len(waits),
        contiguous_holes=sum(1 for d in waits if d.free >= d.tokens > d.longest),
        static_drain=paged["static"].drain,
        tight_pool=tight,
        tight_drain=squeezed.drain,
        tight_preemptions=squeezed.schedule.preemptions,
    )


COLUMNS = (("paged", "continuous"), ("contiguous", "continuous"), ("paged", "static"))  # static: rows either way


@lru_cache(maxsize=1)
def lesson_table() -> list[tuple[str, list[tuple[int, int]]]]:
    """Return per pool (unlimited, the lesson's, the least) each column's (drain, preemptions), from the core."""
    traffic, f = tuple(chapter_traffic()), lesson()
    rows = []
    for label, blocks in (("unlimited", 0), (f"{f.pool} blocks", f.pool), (f"{f.tight_pool} blocks", f.tight_pool)):
        cells = []
        for allocation, policy in COLUMNS:
            run = shared_runs(traffic, SLOTS, 0, blocks, allocation)[policy]
            cells.append((run.drain, run.schedule.preemptions))
        rows.append((label, cells))
    return rows


def table_html() -> str:
    """Return the lesson's figures as a table: all done at step, per pool and mode, and paged's preemptions."""
    head = "".join(
        f'<th scope="col">{name}</th>' for name in ("continuous, paged", "continuous, contiguous", "static, whole rows")
    )
    body = ""
    for label, cells in lesson_table():
        tds = "".join(
            f'<td data-memory-cell="{label}|{k}">{drain}'
            + (f" ({plural(preempted, 'preemption')})" if preempted else "")
            + "</td>"
            for k, (drain, preempted) in enumerate(cells)
        )
        body += f'<tr><th scope="row">{label}</th>{tds}</tr>'
    return (  # its own frame scrolls sideways on a phone, never the page
        '<div style="overflow-x: auto; max-width: 100%" tabindex="0" role="region" '
        'aria-label="All done at step, per KV pool">'
        '<table class="bv-h2h bv-memory-table"><caption>All done at step, the chapter&#x27;s traffic on '
        f"{SLOTS} slots, per KV pool (blocks of {BLOCK_SIZE} tokens)</caption><thead><tr><td></td>{head}</tr>"
        f"</thead><tbody>{body}</tbody></table></div>"
    )


def lesson_buttons() -> dict[str, tuple[str, dict]]:
    """Return each button's label and the settings it applies (on the chapter's traffic, at SLOTS slots)."""
    f = lesson()
    return {
        "paged": (f"A pool of {f.pool} blocks, paged", {"kv_blocks": f.pool, "allocation": "paged"}),
        "contiguous": ("The same pool, contiguous", {"kv_blocks": f.pool, "allocation": "contiguous"}),
        "tight": (f"{f.tight_pool} blocks: preemption", {"kv_blocks": f.tight_pool, "allocation": "paged"}),
        "unlimited": ("Unlimited memory", {"kv_blocks": 0, "allocation": "paged"}),
    }


def lesson_html() -> str:
    """Return the lesson's text, every figure from `lesson()`."""
    f = lesson()
    b = lambda key, value: f'<b data-memory="{key}">{value}</b>'  # noqa: E731
    same = f.paged_drain == f.unlimited_drain["continuous"] and f.paged_preemptions == 0 == f.paged_waits
    paged = (
        f"<b>Paged</b>, where a request takes a block at a time as it grows, nothing changes: done at step "
        f"{b('paged_drain', f.paged_drain)}, no preemption, no wait"
        if same
        else f"<b>Paged</b>: done at step {b('paged_drain', f.paged_drain)}"
    )
    return (
        "<h3>Memory: no extra memory, given a paged KV cache</h3>"
        f"<p>Every running request keeps its KV cache, in blocks of {BLOCK_SIZE} tokens (small, for requests of "
        f"tens of tokens; the Schedulers tab uses vLLM's {LINEUP_BLOCK_SIZE}): on the steps axis the strip under "
        "each timeline counts the blocks held at every step. On the chapter's traffic at "
        f"{SLOTS} slots with unlimited memory, continuous batching holds at most {b('pool', f.pool)} blocks, "
        f"while static batching reserves up to {b('static_peak', f.static_peak)}: each row of its batch "
        f"reserves {STATIC_ROW}, as a server's max_tokens, before a token is generated, whatever the allocation. "
        f'<span data-claim="memory-same-pool">Give both exactly {f.pool} blocks (each drain below is what the '
        f"head-to-head's &quot;All done at step&quot; reads on the chapter's traffic at {SLOTS} slots with that "
        "pool; the timelines show steps 0-63). "
        f"{paged}. With "
        f"<b>contiguous</b> caches each request must reserve one unbroken run for its prompt plus that cap, "
        f"so fewer run at once: done at step {b('contiguous_drain', f.contiguous_drain)}, and on "
        f"{b('contiguous_waits', plural(f.contiguous_waits, 'step'))} in all a slot stands empty (⊘) while the "
        f"next request waits for memory, on {b('contiguous_holes', f.contiguous_holes)} of them with enough blocks "
        "free, only not in one run: the holes retired requests leave. Static batching, which needs its whole "
        f"rectangle, is done at step {b('static_drain', f.static_drain)} (with unlimited memory, step "
        f"{f.unlimited_drain['static']}).</span></p><p>"
        f'<span data-claim="memory-tight">Squeeze the pool to {b("tight_pool", f.tight_pool)} blocks, the least '
        "this traffic fits in, and paged continuous batching preempts: a request that needs a new block when none "
        "is free throws out the one admitted last, which later recomputes its KV (yellow). It preempts "
        f"{b('tight_preemptions', plural(f.tight_preemptions, 'time'))} and is done at step "
        f"{b('tight_drain', f.tight_drain)}.</span> The Memory tab shows all three side by side with every "
        "block's owner.</p>" + table_html()
    )
