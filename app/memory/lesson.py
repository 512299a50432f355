"""The Memory tab's lesson: the example's three runs on a pool of some size, their figures and its sentences.

The runs are the core's (one loop, asked by the block manager); every figure the lesson states is read from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from app.page.words import plural
from core.chapter.memory_example import BLOCK_SIZE, MIN_BLOCKS, MODES, SLOTS, memory_requests
from core.kv.memory import MemoryConfig
from core.sched.engine import as_run, memory_waits, schedule
from core.sched.policies import STATIC_ROW
from core.sched.run import GENERATING, IDLE, Run
from core.sched.schedule_record import Schedule
from core.sched.waits import Wait
from core.states import PADDING, PREFILL, RECOMPUTE

MAX_BLOCKS = 24
TITLES = {
    "paged": "Continuous batching, paged KV cache",
    "contiguous": "Continuous batching, contiguous KV cache",
    "static": "Static batching",
}
CELL = {  # state -> (css class, words)
    IDLE: ("idle", "idle"),
    GENERATING: ("gen", "generating"),
    PADDING: ("pad", "padding"),
    RECOMPUTE: ("rec", "recomputing its KV after a preemption, then its next token"),
    PREFILL: ("pre", "a prompt chunk"),
}


@lru_cache(maxsize=2 * (MAX_BLOCKS - MIN_BLOCKS + 1))
def runs_for(blocks: int) -> dict[str, Schedule]:
    """Return the three schedules of the example on a pool of `blocks` blocks, with their pool maps (shared)."""
    reqs = memory_requests()
    return {
        mode: schedule(
            reqs,
            SLOTS,
            policy,
            MemoryConfig(kv_blocks=blocks, block_size=BLOCK_SIZE, allocation=alloc),
            record_pool=True,
        )
        for mode, (policy, alloc) in MODES.items()
    }


@lru_cache(maxsize=4 * (MAX_BLOCKS - MIN_BLOCKS + 1))
def step_run(s: Schedule) -> Run:
    """Return a cached schedule's Run (schedules are compared by identity: runs_for caches them)."""
    return as_run(s)


@lru_cache(maxsize=4 * (MAX_BLOCKS - MIN_BLOCKS + 1))
def waits_of(s: Schedule) -> tuple[Wait, ...]:
    """Return a cached schedule's waits for memory: every redraw of every step reads them."""
    return tuple(memory_waits(s))


@dataclass(frozen=True)
class ModeFigures:
    """What one mode did on the pool: rows running in the first decode pass, the drain, memory's decisions."""

    running: int
    drain: int
    peak_blocks: int
    preemptions: int
    waits: tuple[Wait, ...]  # each step (static: slot-step) a request waited for memory with a slot empty


def figures(blocks: int) -> dict[str, ModeFigures]:
    """Return each mode's figures on a pool of `blocks` blocks, from the core's runs."""
    out = {}
    for mode, s in runs_for(blocks).items():
        run = step_run(s)
        out[mode] = ModeFigures(
            running=max(int(((run.grid(run.drain) != IDLE).sum(axis=0)).max()), 0),
            drain=run.drain,
            peak_blocks=int(s.pass_blocks.max()),
            preemptions=s.preemptions,
            waits=waits_of(s),
        )
    return out


def claim(key: str, text: str) -> str:
    """Return `text` marked as the claim `key`, which the page's claims tests check against the runs."""
    return f'<span data-claim="{key}">{text}</span>'


def _paged_words(p: ModeFigures, unlimited: int) -> str:
    """Return what the paged run did: how many ran, its drain against unlimited memory, its preemptions and waits."""
    words = f"runs up to {plural(p.running, 'request')} at once and is done at step {p.drain}" + (
        ", as with unlimited memory" if p.drain == unlimited else f" (unlimited memory: step {unlimited})"
    )
    if p.preemptions:
        times = {1: "once", 2: "twice"}.get(p.preemptions, f"{p.preemptions} times")
        words += f"; it preempts {times} when a growing request finds no free block"
    if p.waits:
        words += f"; its queue waits for memory at {plural(len(p.waits), 'step')} with a slot empty (⊘)"
    return words


def _contiguous_waits(c: ModeFigures, reqs) -> str:
    """Return why the contiguous run's queue waited for memory: blocks short, or free but not in one run (holes)."""
    holes = [w for w in c.waits if w.hole]
    if not c.waits:
        return "its queue never waits for memory"
    why = []
    if len(c.waits) > len(holes):
        why.append(
            f"{len(c.waits) - len(holes)} for want of free blocks, since every reservation is made before a token "
            "is generated"
        )
    if holes:
        why.append(f"{len(holes)} with enough blocks free but not in one run")
    waited = f"its queue waits for memory at {plural(len(c.waits), 'step')} with a slot empty (⊘): " + " and ".join(why)
    if holes:
        w = holes[0]
        waited += (
            f". At step {w.step}, {reqs[w.request].id} needs {plural(w.needed, 'block')}, {w.free} are free, but "
            f"the longest run is {w.longest_run}: holes that retired requests left"
        )
    return waited


def _gap_html(blocks: int, p: ModeFigures, c: ModeFigures, s: ModeFigures) -> str:
    """Return the lesson's last sentence: paged against contiguous and static on the same pool, as the runs show."""
    if p.drain < c.drain:
        return (
            "<p>"
            + claim(
                "memory-gap",
                f"Same traffic, same memory: paged finishes {c.drain - p.drain} steps before "
                f"contiguous and {s.drain - p.drain} before static.",
            )
            + " That is the chapter's claim: "
            "continuous batching is scheduling alone, no extra memory, <i>given a paged KV cache</i>.</p>"
        )
    return (
        "<p>"
        + claim(
            "memory-gap",
            f"With {blocks} blocks contiguous is done at step {c.drain} too, as paged is: the pool holds its "
            f"reservations, but at its peak contiguous holds {c.peak_blocks} blocks where paged holds "
            f"{p.peak_blocks}; static still waits for each batch's longest member (step {s.drain}).",
        )
        + " Shrink the pool to see memory decide who runs.</p>"
    )


def lesson_html(blocks: int) -> str:
    """Return the lesson under the pool slider: each sentence a claim on the figures of the runs shown."""
    f = figures(blocks)
    p, c, s = f["paged"], f["contiguous"], f["static"]
    reqs = memory_requests()
    reserve = max(r.output_tokens for r in reqs)
    prompts = sorted({r.prompt_tokens for r in reqs})
    unlimited = as_run(schedule(reqs, SLOTS, "continuous")).drain
    static_words = f"done at step {s.drain}"
    if s.waits:
        static_words += f"; a slot stands empty for memory for {plural(len(s.waits), 'slot-step')} (⊘)"
    item = lambda key, text: "<li>" + claim(key, text) + "</li>"  # noqa: E731
    return "".join(
        [
            f"<p>Eight requests (A to H) arrive together, with prompts of {prompts[0]} to {prompts[-1]} tokens; "
            f"the longest answer is {reserve} tokens. The pool holds {plural(blocks, 'block')} of {BLOCK_SIZE} "
            f"tokens ({blocks * BLOCK_SIZE} tokens of KV), and there are {SLOTS} slots.</p><ul>",
            item(
                "memory-paged",
                "<b>Paged:</b> a request takes one block at a time as it grows, so the batch "
                f"{_paged_words(p, unlimited)}.",
            ),
            item(
                "memory-contiguous",
                f"<b>Contiguous:</b> each request reserves one run of blocks for its prompt and the longest answer, "
                f"so it runs up to {plural(c.running, 'request')} at once and is done at step {c.drain}; "
                f"{_contiguous_waits(c, reqs)}.",
            ),
            item(
                "memory-static",
                f"<b>Static:</b> every row of a batch reserves {STATIC_ROW}, so batches of "
                f"up to {plural(s.running, 'request')} run, each until its longest member finishes: {static_words}.",
            )
            + "</ul>",
            _gap_html(blocks, p, c, s),
        ]
    )
