"""A plain run on an unlimited pool records no pass: the passes its assembly rebuilds equal the ones it would record."""

import random

import numpy as np
import pytest

import core.sched.continuous as continuous
import core.sched.engine as engine
from core.measure.lineup import parse_entry
from core.sched.engine import schedule
from core.workload.request import Request

FIELDS = (
    "slot", "start_pass", "first_pass", "finish_pass", "release_pass", "cells", "pass_start", "pass_end", "pass_rows",
    "pass_prefill", "pass_context", "pass_blocks", "pass_largest_free", "pass_token_blocks",
)  # fmt: skip


def _traffic(rng: random.Random) -> list[Request]:
    """Idle gaps, arrivals on one step, empty prompts and one-token answers, not always in arrival order."""
    return [
        Request(
            id=f"r{i}",
            arrival=rng.choice([0, rng.randint(0, 60), rng.randint(0, 400)]),
            prompt_tokens=rng.choice([0, 1, rng.randint(1, 300)]),
            output_tokens=rng.choice([1, rng.randint(1, 50)]),
            priority=rng.randint(0, 1),
        )
        for i in range(rng.randint(0, 40))
    ]


@pytest.mark.parametrize("policy", ["continuous", "sjf", "priority"])
def test_rebuilt_passes_equal_the_recorded_ones(policy, monkeypatch):
    """Seeded traffic, 1-8 slots: every field of the Schedule, bit for bit and dtype for dtype, with and without."""
    rng = random.Random(5)
    cases = [(_traffic(rng), rng.randint(1, 8)) for _ in range(120)]
    bare = [schedule(reqs, slots, policy) for reqs, slots in cases]
    init = continuous.ContinuousLoop.__init__

    def recording(self, engine):
        init(self, engine)
        assert self.bare, "a plain run on steps and an unlimited pool should record nothing"
        self.bare = engine.bare = False

    monkeypatch.setattr(continuous.ContinuousLoop, "__init__", recording)
    for (reqs, slots), fast in zip(cases, bare):
        slow = schedule(reqs, slots, policy)
        for field in FIELDS:
            a, b = getattr(fast, field), getattr(slow, field)
            assert a.dtype == b.dtype and np.array_equal(a, b), (field, slots, reqs)


@pytest.mark.parametrize(  # fmt: skip
    "policy",
    ["chunked", "vllm", "vllm:scheduling_policy=priority;long_prefill_token_threshold=8", "tgi",
     "sglang"],
)
def test_drawn_cells_equal_the_recorded_ones(policy, monkeypatch):
    """Nobody preempted (an unlimited pool): the cells the assembly draws equal the ones the loop would record.

    Prefill cells of prompts spread over passes and all, in the loop's order; so do the first passes.
    """
    policy = parse_entry(policy).policy()  # a preset with its settings (a priority queue admits out of arrival order)
    rng = random.Random(11)
    cases = [(_traffic(rng), rng.randint(1, 8), rng.choice([8, 16, 64, 512])) for _ in range(120)]
    drawn = [schedule(reqs, slots, policy, token_budget=budget) for reqs, slots, budget in cases]
    assert any(len(s.cells) > len(s.requests) for s in drawn), "no prompt was spread over passes"
    init = engine._Engine.__init__

    def recording(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.plain = False

    monkeypatch.setattr(engine._Engine, "__init__", recording)
    for (reqs, slots, budget), fast in zip(cases, drawn):
        slow = schedule(reqs, slots, policy, token_budget=budget)
        for field in FIELDS:
            a, b = getattr(fast, field), getattr(slow, field)
            assert a.dtype == b.dtype and np.array_equal(a, b), (field, slots, budget, reqs)
