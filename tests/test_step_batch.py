"""The batch at a step, from a Run: rows, ragged layout and block tables follow the schedule; static pads as it must."""

import numpy as np
import pytest

from core import PADDING, TrafficConfig, generate, simulate
from core.batch.step_batch import BLOCK_SIZE, ContinuousBatches, pool_size, prompt_length, static_step
from core.chapter.worked_example import BATCH_TIMEOUT, SLOTS, worked_example

CASES = [(seed, slots) for seed in (0, 4, 11) for slots in (1, 3, 8)]


def _continuous(seed: int, slots: int):
    return simulate(generate(TrafficConfig(seed=seed, requests=20)), slots, "continuous")


@pytest.mark.parametrize(("seed", "slots"), CASES)
def test_every_step_lays_out_the_running_requests_as_the_schedule_says(seed, slots):
    """Row i is the i-th running request by slot; prefill rows carry the prompt, decode rows one token at its place."""
    run = _continuous(seed, slots)
    batches = ContinuousBatches(run)
    for t in range(run.drain + 2):
        step = batches.at(t)
        running = [i for i in np.argsort(run.slot, kind="stable") if run.start[i] <= t < run.finish[i]]
        assert list(step.requests) == running
        b = step.batch
        expected_positions: list[int] = []
        for row, i in enumerate(running):
            prompt = prompt_length(run.requests[i].prompt_tokens)
            age = t - int(run.start[i])
            assert step.prefill[row] == (age == 0)
            expected_positions += list(range(prompt)) if age == 0 else [prompt + age - 1]
            tokens_after_admission = prompt + age
            assert len(b.block_tables[row][b.block_tables[row] >= 0]) == -(-tokens_after_admission // BLOCK_SIZE)
        assert b.positions.tolist() == expected_positions
        assert b.cu_seqlens[0] == 0 and b.cu_seqlens[-1] == len(b.token_ids) == len(expected_positions)
        assert np.all(np.diff(b.cu_seqlens) >= 1)


@pytest.mark.parametrize(("seed", "slots"), CASES)
def test_blocks_are_owned_once_and_never_move(seed, slots):
    """No block has two owners; the pool's owner map agrees with the tables; a request's table only grows."""
    run = _continuous(seed, slots)
    batches = ContinuousBatches(run)
    tables: dict[int, list[int]] = {}
    for t in range(run.drain):
        step = batches.at(t)
        owned = []
        for row, i in enumerate(step.requests):
            table = [int(x) for x in step.batch.block_tables[row] if x >= 0]
            assert table[: len(tables.get(i, []))] == tables.get(i, [])  # paged: nothing already placed moves
            tables[i] = table
            owned += table
            assert all(step.block_owner[block] == i for block in table)
        assert len(owned) == len(set(owned)) == int((step.block_owner >= 0).sum())
        assert max(owned, default=0) < pool_size(run)


def test_going_back_replays_to_the_same_batch():
    """Scrubbing backwards gives exactly the batch a fresh walk gives."""
    run = _continuous(4, 4)
    walked = ContinuousBatches(run)
    walked.at(run.drain - 1)
    for t in (7, 0, 12):
        again, fresh = walked.at(t).batch, ContinuousBatches(run).at(t).batch
        assert again.block_tables.tolist() == fresh.block_tables.tolist()
        assert again.positions.tolist() == fresh.positions.tolist()


@pytest.mark.parametrize(("seed", "slots", "timeout"), [(0, 4, 0), (4, 4, 2), (11, 8, 0), (4, 1, 0)])
def test_static_padding_rows_add_up_to_the_runs_padding(seed, slots, timeout):
    """Summed over the run, the rectangle's padding rows are exactly the run's padding cells."""
    run = simulate(generate(TrafficConfig(seed=seed, requests=20)), slots, "static", timeout)
    padding_rows = 0
    for t in range(run.drain):
        step = static_step(run, t)
        padding_rows += step.live.count(False)
        assert step.computed_tokens >= step.useful_tokens
        if step.requests and int(run.start[step.requests[0]]) == t:  # the batch's first step: prompts, left-padded
            prompts = [prompt_length(run.requests[i].prompt_tokens) for i in step.requests]
            assert step.width == max(prompts) and step.useful_tokens == sum(prompts)
    assert padding_rows == int((run.timeline == PADDING).sum())


def test_the_worked_example_at_step_5():
    """Hand-checked: static runs A-D with B finished (a padding row); continuous has run B out and admitted E."""
    static = simulate(worked_example(), SLOTS, "static", BATCH_TIMEOUT)
    s = static_step(static, 5)
    assert [static.requests[i].id for i in s.requests] == ["A", "B", "C", "D"]
    assert s.live == (True, False, True, True) and s.useful_tokens == 3 and s.computed_tokens == 4
    continuous = simulate(worked_example(), SLOTS, "continuous")
    c = ContinuousBatches(continuous).at(4)
    assert [continuous.requests[i].id for i in c.requests] == ["A", "E", "C", "D"]
    assert c.prefill == (False, True, False, False)
    assert c.batch.cu_seqlens.tolist() == [0, 1, 6, 7, 8]  # E's five prompt tokens between three decodes


def test_the_wrong_policy_is_refused():
    """Each walker takes only its own policy's run."""
    run = _continuous(4, 4)
    with pytest.raises(ValueError, match="needs a run of batches"):
        static_step(run, 0)
    with pytest.raises(ValueError, match="needs a run admitted between passes"):
        ContinuousBatches(simulate(worked_example(), 4, "static"))
