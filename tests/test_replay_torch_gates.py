"""The varlen paths gated on this torch's own varlen_attn signature (issue 46), on the CPU through a bound stand-in."""

import re
import sys

import numpy as np
import pytest
import torch

from core.batch.kv_blocks import BlockAllocator
from core.batch.ragged import build_batch
from core.batch.sequence import Sequence
from replay import PRESETS, Engine
from replay import attention as attn

from .varlen_stand_in import stand_in, varlen_2_11

varlen = pytest.importorskip("torch.nn.attention.varlen", reason="this torch has no varlen_attn to stand in for")
torch.set_num_threads(1)
CONFIG = PRESETS["tiny"]


def _forget() -> None:
    """Let the gate read varlen_attn's signature again (it is read once per process)."""
    cached = getattr(attn, "varlen_parameters", None)
    if cached is not None:
        cached.cache_clear()


@pytest.fixture
def torch_like(monkeypatch):
    """Return a function that makes this torch's varlen_attn a CPU stand-in bound to the given signature."""

    def use(signature_of) -> None:
        monkeypatch.setattr(varlen, "varlen_attn", stand_in(signature_of))
        _forget()

    yield use
    _forget()  # monkeypatch puts the real function back after this; the gate reads it afresh


@pytest.fixture(scope="module")
def engine():
    """The tiny model on the CPU in fp32."""
    return Engine("tiny", device="cpu", seed=0)


def _ragged_logits_match_the_reference(engine, attention_for) -> None:
    """Run a decode, then two prefills beside it, through `attention_for(cache, batch)`; assert reference logits."""
    model = engine.model
    rng = np.random.default_rng(3)
    seqs = [Sequence(str(i), i, rng.integers(0, CONFIG.vocab_size, n).tolist(), n, 8) for i, n in enumerate((7, 3, 12))]
    allocator = BlockAllocator(32, 4)
    cache = attn.PagedKVCache(CONFIG, 32, 4, "cpu", torch.float32, token_major=True)
    allocator.allocate(seqs[0])
    for step in range(3):
        if step == 1:
            for s in seqs[1:]:
                allocator.allocate(s)
        live = seqs[:1] if step == 0 else seqs
        for s in live:
            allocator.append(s)
        batch = build_batch(live, 4)
        hidden = model(torch.as_tensor(batch.token_ids), torch.as_tensor(batch.positions), attention_for(cache, batch))
        logits = model.logits(hidden[torch.as_tensor(batch.last_token_index)])
        for s, row in zip(live, logits):
            ids = torch.tensor(s.token_ids)
            want = model.logits(model(ids, torch.arange(len(ids)), attn.ReferenceAttention()))[-1]
            torch.testing.assert_close(row, want, rtol=1e-4, atol=1e-4)
            s.num_computed_tokens = s.num_tokens
            s.token_ids.append(int(rng.integers(0, CONFIG.vocab_size)))


def test_torch_2_11_runs_the_packed_path_where_block_tables_were_asked_for(engine, torch_like, monkeypatch):
    """On torch 2.11 (no seqused_k, block_table) a pass set to read block tables runs packed, and says so.

    Its logits are the reference's; before the gate it raised TypeError there, as on the H200.
    """
    torch_like(varlen_2_11)
    monkeypatch.setattr(attn, "VARLEN_PAGED", True)
    with pytest.warns(RuntimeWarning, match=r"block tables needs torch 2\.12\+ .*runs varlen packed instead"):
        _ragged_logits_match_the_reference(engine, lambda cache, batch: attn.ragged_attention(cache, batch, "cpu"))


def test_torch_2_11_refuses_the_block_table_path_by_name(torch_like):
    """Asked for by name, the block-table path is refused before any call, with the torch it needs and this one's."""
    torch_like(varlen_2_11)
    seq = Sequence("a", 0, [1, 2, 3], 3, 4)
    BlockAllocator(4, 4).allocate(seq)
    batch = build_batch([seq], 4)
    cache = attn.PagedKVCache(CONFIG, 4, 4, "cpu", torch.float32, token_major=True)
    with pytest.raises(ValueError, match=re.escape(f"block tables needs torch 2.12+ (this is {torch.__version__})")):
        attn.VarlenPagedAttention(cache, batch, "cpu", paged=True)
    assert attn.varlen_missing("block tables") == f"needs torch 2.12+ (this is {torch.__version__})"
    assert attn.varlen_missing("packed") is None


def test_this_torch_runs_both_varlen_paths(engine, torch_like):
    """The torch the tests pin (2.13) has every keyword the two paths pass: both run, bound to its signature."""
    real = varlen.varlen_attn
    torch_like(real)
    assert attn.varlen_missing("packed") is None and attn.varlen_missing("block tables") is None
    for paged in (False, True):
        _ragged_logits_match_the_reference(
            engine, lambda cache, batch, paged=paged: attn.VarlenPagedAttention(cache, batch, "cpu", paged=paged)
        )


def test_a_torch_without_varlen_keeps_the_cuda_cache_on_our_own_path(monkeypatch):
    """Before torch 2.9 there is no torch.nn.attention.varlen: a CUDA cache is laid out for our own attention."""
    monkeypatch.setitem(sys.modules, "torch.nn.attention.varlen", None)  # import fails, as on an old torch
    _forget()
    try:
        assert attn.varlen_missing("packed") == f"needs torch 2.10+ (this is {torch.__version__})"
        with pytest.warns(RuntimeWarning, match=r"varlen packed needs torch 2\.10\+"):
            assert not attn.token_major_for(torch.device("cuda"))
    finally:
        monkeypatch.undo()
        _forget()
    assert attn.token_major_for(torch.device("cuda")) and not attn.token_major_for(torch.device("cpu"))
