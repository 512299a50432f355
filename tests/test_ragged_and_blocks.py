"""The ragged batch and the paged KV block allocator: the bookkeeping nano-vllm needed two fixes for."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.kv_blocks import BlockAllocator
from core.ragged import build_batch
from core.sequence import Sequence


def _make_seq(index: int, prompt: int, computed: int = 0, generated: int = 0) -> Sequence:
    tokens = list(range(100 * index, 100 * index + prompt + generated))
    return Sequence(f"s{index}", index, tokens, prompt, max_new_tokens=1000, num_computed_tokens=computed)


def _assert_no_block_owned_twice(allocator: BlockAllocator, seqs: list[Sequence]) -> None:
    held = [b for s in seqs for b in s.block_table]
    assert len(held) == len(set(held))
    assert set(held).isdisjoint(allocator.free_blocks)
    assert len(held) + allocator.num_free_blocks == len(allocator.owner)


def test_prefill_and_decode_in_one_batch():
    """A prefilling sequence contributes its prompt, a decoding one its last token; no padding."""
    alloc = BlockAllocator(16, 4)
    prefill, decode = _make_seq(0, 5), _make_seq(1, 3, computed=6, generated=4)
    for s in (prefill, decode):
        alloc.allocate(s)
    batch = build_batch([prefill, decode], 4)
    assert batch.token_ids.tolist() == [0, 1, 2, 3, 4, 106]
    assert batch.positions.tolist() == [0, 1, 2, 3, 4, 6]
    assert batch.cu_seqlens.tolist() == [0, 5, 6]
    assert batch.context_lens.tolist() == [5, 7]
    assert batch.last_token_index.tolist() == [4, 5]
    assert batch.block_tables.tolist() == [[0, 1], [2, 3]]
    assert batch.slot_mapping.tolist() == [0, 1, 2, 3, 4, 3 * 4 + 2]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 30), st.booleans()), min_size=0, max_size=12),
    st.integers(1, 8),
)
def test_batch_invariants(shapes, block_size):
    """cu_seqlens starts at 0 and ends at len(token_ids); positions continue from each computed count."""
    seqs = []
    alloc = BlockAllocator(4096, block_size)
    for i, (prompt, generated, decoding) in enumerate(shapes):
        total = prompt + generated
        if total == 0:
            continue
        seq = _make_seq(i, prompt, computed=total - 1 if decoding else 0, generated=generated)
        alloc.allocate(seq)
        seqs.append(seq)
    batch = build_batch(seqs, block_size)
    assert batch.cu_seqlens[0] == 0 and batch.cu_seqlens[-1] == len(batch.token_ids) == len(batch.positions)
    for i, seq in enumerate(seqs):
        lo, hi = batch.cu_seqlens[i], batch.cu_seqlens[i + 1]
        assert batch.positions[lo:hi].tolist() == list(range(seq.num_computed_tokens, seq.num_tokens))
        assert batch.positions[hi - 1] == batch.context_lens[i] - 1
    assert len(set(batch.slot_mapping.tolist())) == len(batch.slot_mapping)  # no two tokens share a KV slot


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["admit", "step", "retire"]), st.integers(1, 20)), max_size=60))
def test_allocator_random_operations(ops):
    """Under random admits, decode steps and retirements: no block owned twice, others' blocks never move."""
    alloc = BlockAllocator(24, 4)
    running: list[Sequence] = []
    for n, (op, size) in enumerate(ops):
        before = {s.seq_id: list(s.block_table) for s in running}
        if op == "admit":
            seq = _make_seq(n, size)
            if alloc.can_allocate(seq):
                alloc.allocate(seq)
                running.append(seq)
        elif op == "step" and running:
            seq = running[size % len(running)]
            seq.token_ids.append(7)
            if alloc.can_append(seq):
                alloc.append(seq)
            else:
                seq.token_ids.pop()
        elif op == "retire" and running:
            seq = running.pop(size % len(running))
            freed = len(seq.block_table)
            free_before = alloc.num_free_blocks
            alloc.free(seq)
            assert alloc.num_free_blocks == free_before + freed  # freed at once
        for s in running:
            assert s.block_table[: len(before.get(s.seq_id, []))] == before.get(s.seq_id, [])
            assert len(s.block_table) * alloc.block_size >= s.num_tokens
        _assert_no_block_owned_twice(alloc, running)
    for s in running:
        alloc.free(s)
    assert alloc.num_free_blocks == 24 and (alloc.owner == -1).all()


def test_allocator_refuses_when_full():
    """can_allocate is False when the blocks do not fit, and allocate then raises."""
    alloc = BlockAllocator(2, 4)
    assert not alloc.can_allocate(_make_seq(0, 9))
    with pytest.raises(RuntimeError):
        alloc.allocate(_make_seq(0, 9))
    assert alloc.num_free_blocks == 2 and np.all(alloc.owner == -1)
