"""The real replay under a limited pool: it follows the core's preemptions on its paged cache, tokens unchanged."""

import pytest
import torch

from core import Request, TrafficConfig, generate
from core.kv.memory import MemoryConfig
from core.sched.engine import schedule
from replay import Engine
from replay.engine import BLOCK_SIZE

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def engine():
    """The tiny model on the CPU in fp32."""
    return Engine("tiny", device="cpu", seed=0)


def _tight_pool(requests, slots: int) -> MemoryConfig:
    """A pool that holds the largest request with little to spare, so the core must preempt."""
    need = max(-(-(max(1, r.prompt_tokens) + r.output_tokens) // BLOCK_SIZE) for r in requests)
    return MemoryConfig(kv_blocks=need + 1, block_size=BLOCK_SIZE)


@pytest.mark.parametrize("seed", [1, 10])
def test_preempted_requests_generate_the_same_greedy_tokens(engine, seed):
    """Greedy in fp32: under a pool that forces preemptions, each request's tokens equal the unlimited run's."""
    requests = generate(
        TrafficConfig(seed=seed, requests=8, arrival_window=2, mean_prompt_tokens=20, mean_tokens=24, max_tokens=40)
    )
    memory = _tight_pool(requests, 4)
    plan = schedule(requests, 4, "continuous", memory)
    assert plan.preemptions > 0  # the pool is tight enough that the core throws requests out
    limited = engine.replay(requests, 4, "continuous", memory=memory)
    free = engine.replay(requests, 4, "continuous")
    assert limited.outputs == free.outputs
    assert [len(o) for o in limited.outputs] == [r.output_tokens for r in requests]
    # It followed the core: the same preemptions, the same recomputed tokens, the same drain.
    assert limited.preemptions == plan.preemptions
    assert limited.recomputed_tokens == plan.recomputed_tokens > 0
    assert len(limited.step_ms) == limited.run.drain > free.run.drain


def test_a_pool_the_replay_cannot_follow_is_refused(engine):
    """Static batching or another block size: one message naming what it follows (contiguous is followed)."""
    requests = [Request("A", 0, 4, 8)]
    for kwargs, policy in (
        (dict(kv_blocks=8, block_size=BLOCK_SIZE, allocation="contiguous"), "static"),
        (dict(kv_blocks=8, block_size=BLOCK_SIZE), "static"),
        (dict(kv_blocks=8, block_size=4), "continuous"),
    ):
        with pytest.raises(ValueError, match="paged cache of 16-token blocks"):
            engine.replay(requests, 2, policy, memory=MemoryConfig(**kwargs))
