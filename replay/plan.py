"""What each pass of a core Schedule holds, read back from its cells: who decodes, which prompt chunk each prefill runs.

The core's engine (`core.sched.engine.schedule`) records per pass only its decoding rows and its prefill tokens, and per
request the intervals it spent in each state (F: a prompt chunk that yields no token; G or R: a pass that emits one).
That is enough to recover every chunk without deciding anything again: a request whose prefill ends in a pass
computes the rest of its prompt there, and the pass's remaining prefill tokens belong to the oldest request still in
prefill (the core serves chunks oldest first, so at most one chunk per pass stops short; those after it get none).
Every figure is checked against the Schedule, and a schedule that cannot be read this way is refused, not guessed.
Torch-free, so it is tested without a model.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.sched.schedule_record import Schedule
from core.states import GENERATING, PAUSED, PREFILL, RECOMPUTE


@dataclass(frozen=True)
class Chunk:
    """Positions [start, end) of a request's prompt (and, after a preemption, its earlier output) computed in a pass."""

    request: int  # index into the schedule's requests
    start: int
    end: int
    emits: bool  # the last chunk of its prefill: the pass samples its next token


@dataclass(frozen=True)
class PassPlan:
    """One forward pass as the core decided it; requests are indices into the schedule's requests."""

    index: int  # pass index
    step: int  # when it runs on the step clock
    preempt: tuple[int, ...]  # thrown out at the boundary before it (their blocks freed, their KV forgotten)
    admit: tuple[tuple[int, int], ...]  # (request, slot) (re)admitted at the boundary before it, in admission order
    decode: tuple[int, ...]  # one token each
    chunks: tuple[Chunk, ...]  # prompt chunks with at least one token, oldest admission first

    @property
    def prefill_tokens(self) -> int:
        """Return the prompt (and recomputed) tokens this pass computes."""
        return sum(c.end - c.start for c in self.chunks)


def pass_plans(s: Schedule) -> list[PassPlan]:
    """Return every pass of a step-clock continuous or chunked Schedule: its admissions, decoders and chunks."""
    if s.cost != "unit" or s.rules.forms_batches:
        raise ValueError(f"pass_plans reads a step-clock continuous or chunked schedule, got {s.policy} on {s.cost}")
    n, passes = len(s.requests), s.passes
    prompt = [max(1, r.prompt_tokens) for r in s.requests]
    decode: list[list[int]] = [[] for _ in range(passes)]
    ending: list[list[int]] = [[] for _ in range(passes)]  # requests whose prefill ends in the pass
    waiting: list[list[int]] = [[] for _ in range(passes)]  # requests in prefill that emit nothing in the pass
    admit: list[list[tuple[int, int, int]]] = [[] for _ in range(passes)]  # (slot, request, prefill target)
    by_request: list[list[tuple[int, int, int, int]]] = [[] for _ in range(n)]
    for i, slot, lo, hi, state in s.cells.tolist():
        by_request[i].append((lo, hi, slot, state))
    for i, cells in enumerate(by_request):
        emitted, end, in_prefill = 0, None, False
        for lo, hi, slot, state in sorted(cells):
            if lo != end:  # a gap (or the first cell): admitted here; a readmission recomputes what it had emitted
                admit[lo].append((slot, i, prompt[i] + emitted))
                in_prefill = True
            end = hi
            if state == PAUSED and not in_prefill:  # held its slot while a pass prefilled others' prompts (TGI)
                continue
            if state == PREFILL and in_prefill:
                for q in range(lo, hi):
                    waiting[q].append(i)
                continue
            if state not in (GENERATING, RECOMPUTE) or (state == RECOMPUTE and not in_prefill):
                raise ValueError(f"request {i}: a cell in state {state} at pass {lo} is not a pass the replay can run")
            emitted += hi - lo  # each G or R pass emits one token
            if in_prefill:
                ending[lo].append(i)
                lo, in_prefill = lo + 1, False
            for q in range(lo, hi):
                decode[q].append(i)
    preempt: list[list[int]] = [[] for _ in range(passes)]
    for e in s.events:
        if e.kind == "preempt":
            preempt[e.step].append(e.request)
    return _read(s, preempt, admit, decode, ending, waiting)


def _read(s: Schedule, preempt, admit, decode, ending, waiting) -> list[PassPlan]:
    """Walk the passes in order, tracking each request's prefill progress, and hand out each pass's prefill tokens."""
    n = len(s.requests)
    done = [0] * n  # prefill tokens computed in the current stint
    target = [0] * n  # the current stint's prefill: prompt plus the tokens it had emitted before
    order = [(0, 0)] * n  # the current stint's admission (pass, slot): the core serves chunks in this order
    out = []
    for p in range(s.passes):
        for i in preempt[p]:
            done[i] = 0
        admitted = sorted(admit[p])  # in one pass the core admits into the lowest free slot, so slot order is theirs
        for slot, i, tokens in admitted:
            done[i], target[i], order[i] = 0, tokens, (p, slot)
        chunks = [Chunk(i, done[i], target[i], True) for i in ending[p]]
        if (
            ending[p]
            and waiting[p]
            and max(map(order.__getitem__, ending[p])) > min(map(order.__getitem__, waiting[p]))
        ):
            raise ValueError(f"pass {p}: a prompt finished while an older one still waited for its chunk")
        left = int(s.pass_prefill[p]) - sum(c.end - c.start for c in chunks)
        if left:
            oldest = min(waiting[p], key=order.__getitem__, default=None)
            if oldest is None or not 0 < left < target[oldest] - done[oldest]:
                raise ValueError(
                    f"pass {p}: {left} prefill tokens the schedule records cannot be read as one chunk of the oldest "
                    "prompt in prefill"
                )
            chunks.append(Chunk(oldest, done[oldest], done[oldest] + left, False))
        if len(decode[p]) != s.pass_rows[p]:
            raise ValueError(
                f"pass {p}: {len(decode[p])} decoding cells but the schedule records {s.pass_rows[p]} rows"
            )
        for c in chunks:
            done[c.request] = c.end
        chunks.sort(key=lambda c: order[c.request])
        out.append(
            PassPlan(
                index=p,
                step=int(s.pass_start[p]),
                preempt=tuple(preempt[p]),
                admit=tuple((i, slot) for slot, i, _ in admitted),
                decode=tuple(decode[p]),
                chunks=tuple(chunks),
            )
        )
    return out
