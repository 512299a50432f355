"""The replay's memory checks (replay/memory.py), with sizes computed by hand."""

from __future__ import annotations

import pytest

from core import Request
from core.limits import LimitError
from replay.memory import check_cache, check_context, kv_bytes_per_token, pool_blocks, request_tokens

MIB = 2**20


def test_kv_bytes_per_token_is_a_k_and_a_v_per_layer():
    """The tiny model in fp32: 2 x 2 layers x 64 values x 4 bytes = 1,024; gpt2 in bf16: 2 x 12 x 768 x 2 = 36,864."""
    assert kv_bytes_per_token(2, 64, 32) == 1024
    assert kv_bytes_per_token(12, 768, 16) == 36_864
    assert isinstance(kv_bytes_per_token(12, 768, 16), int)  # whole bytes: the pool's size is counted in them


def test_a_request_fills_its_prompt_and_output_and_at_least_one_prompt_token():
    """10 + 5 positions; an empty prompt still feeds one token first, so 1 + 5."""
    assert request_tokens(Request("A", 0, 5, 10)) == 15
    assert request_tokens(Request("A", 0, 5, 0)) == 6


def test_the_pool_holds_the_longest_request_once_per_slot_that_can_fill():
    """Blocks of 16: 17 tokens need 2 blocks; 2 requests on 4 slots fill 2 rows: 4 blocks, never one per idle slot."""
    assert pool_blocks([17, 5], 4, 16) == 2 * 2
    assert pool_blocks([16], 8, 16) == 1  # exactly one block, one row
    assert pool_blocks([33] * 10, 3, 16) == 3 * 3  # 3 blocks each, 3 slots busy at once
    assert pool_blocks([], 4, 16) == 1  # nothing to hold: one block, so an allocator can exist


def test_the_context_check_names_the_request_and_both_sizes():
    """8 + 12 = 20 positions fit a context of 20; 9 + 12 do not; an empty prompt counts as one token."""
    check_context([Request("A", 0, 12, 8)], 20)
    with pytest.raises(LimitError, match=r"^request B: prompt 9 \+ output 12 tokens is over the model's context of 20"):
        check_context([Request("A", 0, 12, 8), Request("B", 0, 12, 9)], 20)
    with pytest.raises(LimitError, match="request C: prompt 0 "):
        check_context([Request("C", 0, 20, 0)], 20)


def test_the_cache_check_refuses_one_byte_over_the_budget():
    """2 requests of 20 + 12 tokens on 8 slots: 2 rows of 2 blocks of 16 = 64 tokens; at 1 MiB a token, 64 MiB."""
    two = [Request("A", 0, 12, 20), Request("B", 0, 12, 20)]
    check_cache(two, 8, 16, MIB, 64 * MIB, "cpu")  # exactly the budget fits
    message = r"for 8 slots of up to 32 tokens would take 64 MiB, over the 63 MiB this replay may use on cpu"
    with pytest.raises(LimitError, match=message):
        check_cache(two, 8, 16, MIB, 63 * MIB, "cpu")
    # One request on 8 slots is one row: its 32 tokens, 32 MiB, named as such.
    with pytest.raises(LimitError, match="for 8 slots of up to 32 tokens would take 32 MiB, over the 31 MiB"):
        check_cache(two[:1], 8, 16, MIB, 31 * MIB, "cpu")


def test_the_engine_checks_its_own_model_against_the_2_gib_cpu_budget():
    """The tiny model takes 1,024 bytes a token: 250 rows of 8,000 tokens (500 blocks) fit 2 GiB, 300 rows do not."""
    torch = pytest.importorskip("torch", reason="the replay needs torch (CI installs it)")
    torch.set_num_threads(1)
    from replay import Engine

    engine = Engine("tiny", "cpu")
    rows = lambda n: [Request(str(i), 0, 100, 7_900) for i in range(n)]  # noqa: E731
    engine.check_fits(rows(250), 250)  # 250 x 500 x 16 x 1,024 = 2,048,000,000 bytes, under 2,147,483,648
    with pytest.raises(LimitError, match="would take 2,344 MiB, over the 2,048 MiB this replay may use on cpu"):
        engine.check_fits(rows(300), 300)  # 300 x 500 x 16 x 1,024 = 2,457,600,000 bytes
    seqs, _ = engine.sequences([Request("A", 0, 12, 20), Request("B", 0, 12, 20)])
    allocator, _cache = engine.paged_cache(seqs, 8)
    assert allocator.num_free_blocks == 4  # the pool the check measured: 2 rows of 2 blocks
