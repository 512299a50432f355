"""A huge prompt among decoders, on the clock: one pass that prefills it stalls them all, unless prompts are chunked.

Seven requests are decoding on 8 slots of a Llama-2 7B on an H100 (the roofline) when an 8,000-token prompt arrives.
Continuous batching prefills it in one pass: every decoder waits that pass out for its next token. Chunked prefill
(a token budget per pass) splits the prompt over several passes, each short enough that the decoders keep their
pace; the big request's first token comes a little later.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.clock.hardware import cost_model
from core.sched.engine import schedule
from core.sched.schedule_record import Schedule
from core.workload.request import Request

SLOTS = 8
DECODERS = 7
HUGE_PROMPT = 8_000
ARRIVES_MS = 100.0
BUDGET = 512


def huge_prompt_requests() -> list[Request]:
    """Return seven decoders with short prompts from time 0, and one 8,000-token prompt at 100 ms."""
    decoders = [Request(chr(ord("A") + i), 0, 200, 64) for i in range(DECODERS)]
    return decoders + [Request("H", int(ARRIVES_MS), 50, HUGE_PROMPT)]


def huge_prompt_runs(budget: int = BUDGET) -> dict[str, Schedule]:
    """Return the traffic's schedule under continuous batching and under chunked prefill with `budget`."""
    reqs, cost = huge_prompt_requests(), cost_model()
    return {
        "continuous": schedule(reqs, SLOTS, "continuous", cost=cost),
        "chunked": schedule(reqs, SLOTS, "chunked", cost=cost, token_budget=budget),
    }


@dataclass(frozen=True)
class StallFigures:
    """What the huge prompt did to its neighbours: the longest pass a decoder sat through, and its own TTFT."""

    longest_decode_pass_ms: float  # the longest pass in which at least one decoder produced a token
    typical_pass_ms: float  # the median such pass
    huge_ttft_ms: float  # the big prompt's first token, from its arrival
    chunk_passes: int  # passes that carried a piece of the big prompt


def stall_figures(s: Schedule) -> StallFigures:
    """Return the stall figures of one schedule of `huge_prompt_requests`."""
    ms = s.pass_end - s.pass_start
    with_decoders = ms[s.pass_rows > 0]
    huge = len(s.requests) - 1
    first = int(s.first_pass[huge])
    return StallFigures(
        longest_decode_pass_ms=float(with_decoders.max()),
        typical_pass_ms=float(np.median(with_decoders)),
        huge_ttft_ms=float(s.pass_end[first] - s.requests[huge].arrival),
        chunk_passes=first - int(s.start_pass[huge]) + 1,
    )
