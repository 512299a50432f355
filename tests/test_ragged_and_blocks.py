"""The ragged batch and the paged KV block allocator: the bookkeeping nano-vllm needed two fixes for."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.batch.kv_blocks import BlockAllocator
from core.batch.ragged import build_batch
from core.batch.sequence import Sequence


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


def test_allocator_reset_frees_every_block_in_the_order_given():
    """After reset every block is free and unowned, and the next allocation takes blocks in the order given."""
    alloc = BlockAllocator(4, 4)
    alloc.allocate(_make_seq(0, 9))  # 3 blocks
    alloc.reset([3, 1, 0, 2])
    assert alloc.num_free_blocks == 4 and (alloc.owner == -1).all()
    seq = _make_seq(1, 5)  # 2 blocks
    alloc.allocate(seq)
    assert seq.block_table == [3, 1] and alloc.owner.tolist() == [-1, 1, -1, 1]
    alloc.reset()
    assert list(alloc.free_blocks) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="each of the 4 blocks once"):
        alloc.reset([0, 0, 1, 2])


def test_allocator_sizes_are_refused_below_one_and_one_block_works():
    """One block of one token is a pool; zero blocks or a zero block size is refused, naming both values."""
    alloc = BlockAllocator(1, 1)
    assert alloc.num_free_blocks == 1 and alloc.owner.tolist() == [-1]
    for blocks, size in ((0, 4), (4, 0)):
        with pytest.raises(ValueError, match=rf"^num_blocks and block_size must be >= 1, got {blocks} and {size}$"):
            BlockAllocator(blocks, size)


def test_a_sequence_that_exactly_fills_the_free_blocks_fits():
    """9 tokens in blocks of 4 need 3 blocks: 3 free blocks are enough, to admit and to grow; the 13th token is not."""
    alloc = BlockAllocator(3, 4)
    seq = _make_seq(0, 9)
    assert alloc.can_allocate(seq)
    alloc.allocate(seq)
    assert alloc.num_free_blocks == 0 and seq.block_table == [0, 1, 2]
    other = BlockAllocator(3, 4)
    grown = _make_seq(0, 8)
    other.allocate(grown)  # 2 blocks
    grown.token_ids.append(1)  # the 9th token needs the third, last free block
    assert other.can_append(grown)
    other.append(grown)
    grown.token_ids += [1] * 4  # 13 tokens: a fourth block, and none is free
    assert not other.can_append(grown)
    with pytest.raises(RuntimeError, match=r"^no free block for "):
        other.append(grown)
    with pytest.raises(RuntimeError, match=r"^cannot allocate 3 blocks for "):
        BlockAllocator(2, 4).allocate(_make_seq(1, 9))


def test_freed_blocks_leave_the_sequence_with_an_empty_table_it_can_be_readmitted_with():
    """After free the table is an empty list and the blocks are free again: the same sequence allocates anew."""
    alloc = BlockAllocator(2, 4)
    seq = _make_seq(0, 5)
    alloc.allocate(seq)
    alloc.free(seq)
    assert seq.block_table == [] and alloc.num_free_blocks == 2
    alloc.allocate(seq)
    assert len(seq.block_table) == 2


def test_the_batch_view_s_row_colours_mean_nothing_else_on_the_page():
    """The sentences-true issue, item 8: C was drawn in static's pink, A in generating's blue, D in the prefill blue."""
    import re

    from app.memory import view as memory_view
    from app.page import palette
    from app.page.policy_words import FALLBACK_COLOUR, words
    from core.sched.policies import REGISTRY
    from tests.oracles.batch_view import ROW_COLORS

    meanings = {c for _words, c in palette.LEGEND.values()}
    meanings |= {palette.RECOMPUTE_COLOR, palette.MEMORY_COLOR, palette.PADDING_HATCH, palette.STATIC_COLOR}
    meanings |= {palette.CONTINUOUS_COLOR, FALLBACK_COLOUR, *(words(p).colour for p in REGISTRY.values())}
    meanings |= set(re.findall(r"#[0-9A-Fa-f]{6}", memory_view.MEMORY_CSS))  # the Memory tab's prefill sky blue, ...
    assert not {c.upper() for c in ROW_COLORS} & {c.upper() for c in meanings}
    for colour in ROW_COLORS:  # white letters on each: WCAG contrast at least 4.5
        r, g, b = (int(colour[k : k + 2], 16) / 255 for k in (1, 3, 5))
        lum = sum(
            w * (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4)
            for w, c in zip((0.2126, 0.7152, 0.0722), (r, g, b))
        )
        assert 1.05 / (lum + 0.05) >= 4.5, colour
