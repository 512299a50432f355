"""Attention for the replay: a paged KV cache for the ragged batch, a dense padded cache for static, a reference."""

from __future__ import annotations

import functools
import inspect
import warnings

import numpy as np
import torch
from torch.nn import functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from core.batch.ragged import RaggedBatch

from .model import ModelConfig


class PagedKVCache:
    """K and V for every layer in fixed-size blocks of `block_size` token slots.

    Head-major on the CPU, (layers, H, slots, D): gathering a context gives each head's keys contiguous, ready for
    one batched matmul. Token-major on CUDA, (layers, slots, H, D): the layout a variable-length attention kernel
    reads, as a packed gather or as pages of (block_size, H, D) through block tables.
    """

    def __init__(self, config: ModelConfig, num_blocks: int, block_size: int, device, dtype, token_major=None):
        device = torch.device(device)
        self.token_major = token_major_for(device) if token_major is None else token_major
        slots = num_blocks * block_size
        per_layer = (
            (slots, config.n_heads, config.head_dim) if self.token_major else (config.n_heads, slots, config.head_dim)
        )
        self.k = torch.zeros((config.n_layers, *per_layer), device=device, dtype=dtype)
        self.v = torch.zeros((config.n_layers, *per_layer), device=device, dtype=dtype)
        self.block_size = block_size


# SDPA backends the replay's own attention may use: cuDNN is left out. Its plan cache keys on the key length, and
# static's dense decode reads one more key every pass: the likely cause of the ~75 ms a pass that static paid on an
# H200 (torch 2.11) and calibrate's repeated shapes never did (docs/replay.md says how to confirm it on a GPU).
# Flash, memory-efficient and math build nothing per shape.
STEADY_BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def steady_sdpa():
    """Return a context in which SDPA picks only backends that plan nothing per shape (cuDNN excluded)."""
    return sdpa_kernel(STEADY_BACKENDS)


VARLEN_PAGED = False  # read pages through block tables in the kernel; else gather each context, packed, first

# The keywords each varlen call passes beyond the positional seven, and the torch that first took them all: before
# 2.9 there is no torch.nn.attention.varlen, 2.9 has no window_size, 2.10 and 2.11 no seqused_k or block_table.
VARLEN_NEEDS = {
    "packed": (("window_size",), "2.10"),
    "block tables": (("window_size", "seqused_k", "block_table"), "2.12"),
}


@functools.cache
def varlen_parameters() -> frozenset[str] | None:
    """Return the parameter names of this torch's varlen_attn (read once), or None where torch has none."""
    try:
        from torch.nn.attention.varlen import varlen_attn
    except ImportError:
        return None
    return frozenset(inspect.signature(varlen_attn).parameters)


def varlen_missing(path: str) -> str | None:
    """Return why this torch cannot run a varlen path ("packed" or "block tables"), or None where it can."""
    names, since = VARLEN_NEEDS[path]
    have = varlen_parameters()
    if have is not None and set(names) <= have:
        return None
    return f"needs torch {since}+ (this is {torch.__version__})"


def _runs(path: str, instead: str) -> bool:
    """Return whether this torch runs a varlen path; where it cannot, warn (once per place) what runs instead."""
    why = varlen_missing(path)
    if why:
        warnings.warn(f"varlen {path} {why}: the replay runs {instead} instead", RuntimeWarning, stacklevel=3)
    return why is None


def token_major_for(device: torch.device) -> bool:
    """Return whether a paged cache on `device` is laid out for varlen_attn (CUDA, and a torch whose varlen fits)."""
    return device.type == "cuda" and _runs("packed", "its own attention (SDPA)")


def ragged_path(device) -> str:
    """Return the attention the replay's ragged passes run on `device` with this torch, in words."""
    if not token_major_for(torch.device(device)):
        return "ours (SDPA)"
    return "varlen block tables" if VARLEN_PAGED and varlen_missing("block tables") is None else "varlen packed"


def ragged_attention(cache: PagedKVCache, batch: RaggedBatch, device):
    """Return the attention for one ragged pass: a variable-length kernel on a token-major cache, else ours.

    Block tables where VARLEN_PAGED asks for them and this torch's varlen_attn takes them; else the packed path.
    """
    if cache.token_major:
        paged = VARLEN_PAGED and _runs("block tables", "varlen packed")
        return VarlenPagedAttention(cache, batch, device, paged=paged)
    return RaggedPagedAttention(cache, batch, device)


GROUP_ROWS = 8  # sequences sharing one batched matmul: each query is scored against its group's keys, so more wastes
GROUP_PAIRS = 1 << 22  # and at most this many query x key pairs in a group (one long sequence may exceed it alone)


def flat_context(batch: RaggedBatch, block_size: int, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return the contexts of these rows, flattened: cache slots, owner (index into rows) and position, each (K,)."""
    lens = batch.context_lens[rows]
    owner = np.repeat(np.arange(len(rows)), lens)  # (K,)
    pos = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)  # (K,)
    slots = batch.block_tables[rows[owner], pos // block_size] * block_size + pos % block_size  # (K,)
    return slots, owner, pos


class RaggedPagedAttention:
    """One step of the ragged batch: write new K/V through slot_mapping, attend over each sequence's blocks.

    A sequence whose whole context is new this step (a fresh prefill) attends causally over its own new keys, which
    need no gather. The others (decodes) gather only their live cache rows, flattened, and a group of up to
    GROUP_ROWS of them shares two batched matmuls under a block-diagonal causal mask: no padding to the longest
    context, and no query scored against keys outside its group.
    """

    def __init__(self, cache: PagedKVCache, batch: RaggedBatch, device):
        self.cache = cache
        self.scale = cache.k.shape[-1] ** -0.5
        self.slot_mapping = torch.as_tensor(batch.slot_mapping, device=device)  # (T,)
        cu, new = batch.cu_seqlens, np.diff(batch.cu_seqlens)
        fresh = new == batch.context_lens
        self.fresh = [(int(cu[i]), int(cu[i + 1])) for i in np.flatnonzero(fresh)]
        rows = np.flatnonzero(~fresh)
        self.groups: list[tuple[int, int, torch.Tensor, torch.Tensor]] = []  # (first query, end, slots, bias)
        self.all_cached = len(rows) == len(new)
        if len(rows) == 0:
            return
        queries = np.concatenate([np.arange(cu[i], cu[i + 1]) for i in rows])  # (Tc,) token indices
        self.queries = torch.as_tensor(queries, device=device)
        q_start = 0
        for group in _groups(new[rows], batch.context_lens[rows]):
            slots, owner, key_pos = flat_context(batch, cache.block_size, rows[group])
            n_q = int(new[rows[group]].sum())
            query_owner = np.repeat(np.arange(len(group)), new[rows[group]])  # (Tg,)
            q_pos = batch.positions[queries[q_start : q_start + n_q]]  # (Tg,)
            seen = (query_owner[:, None] == owner[None, :]) & (key_pos[None, :] <= q_pos[:, None])  # (Tg, Kg)
            blocked = torch.as_tensor(~seen, device=device)
            bias = torch.zeros(blocked.shape, device=device, dtype=cache.k.dtype).masked_fill_(blocked, -torch.inf)
            self.groups.append((q_start, q_start + n_q, torch.as_tensor(slots, device=device), bias))
            q_start += n_q

    def __call__(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Store k, v (T, H, D) in the cache; return attention outputs (T, H, D)."""
        kc, vc = self.cache.k[layer], self.cache.v[layer]  # (H, S, D)
        kc.index_copy_(1, self.slot_mapping, k.transpose(0, 1))
        vc.index_copy_(1, self.slot_mapping, v.transpose(0, 1))
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)  # (H, T, D)
        if self.all_cached:
            return self._attend_cached(kc, vc, q).transpose(0, 1)  # (T, H, D)
        out = torch.empty_like(q)  # (H, T, D)
        for a, b in self.fresh:
            out[:, a:b] = causal_attention(q[:, a:b], k[:, a:b], v[:, a:b])
        if self.groups:
            out.index_copy_(1, self.queries, self._attend_cached(kc, vc, q.index_select(1, self.queries)))
        return out.transpose(0, 1)  # (T, H, D)

    def _attend_cached(self, kc: torch.Tensor, vc: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """Return attention outputs (H, Tc, D) for the queries q (H, Tc, D) of sequences reading the cache."""
        outs = []
        for a, b, slots, bias in self.groups:
            keys, values = kc.index_select(1, slots), vc.index_select(1, slots)  # (H, Kg, D) each
            scores = torch.baddbmm(bias, q[:, a:b], keys.transpose(1, 2), alpha=self.scale)  # (H, Tg, Kg)
            outs.append(torch.bmm(scores.softmax(-1), values))  # (H, Tg, D)
        return outs[0] if len(outs) == 1 else torch.cat(outs, dim=1)  # (H, Tc, D)


# Queries scored at once in a long prefill: attention's scores are (heads, queries, keys), so a whole 8,000-token
# prompt would hold 8,000 x 8,000 of them per head (1 GB on the tiny model); in chunks, 1,024 x 8,000 at most.
PREFILL_QUERY_CHUNK = 1024


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Return causal attention (H, T, D) of one sequence over its own keys; a long one's queries go in chunks."""
    n = q.shape[1]
    if n <= PREFILL_QUERY_CHUNK:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    out = torch.empty_like(q)
    keys = torch.arange(n, device=q.device)
    for a in range(0, n, PREFILL_QUERY_CHUNK):
        b = min(a + PREFILL_QUERY_CHUNK, n)
        seen = keys[None, :b] <= keys[a:b, None]  # (b - a, b): query a + i sees keys 0..a + i
        out[:, a:b] = F.scaled_dot_product_attention(q[:, a:b], k[:, :b], v[:, :b], attn_mask=seen)
    return out


def _groups(new: np.ndarray, context: np.ndarray) -> list[np.ndarray]:
    """Split sequences (new, context tokens) into consecutive groups of at most GROUP_ROWS and GROUP_PAIRS pairs.

    A sequence whose own pairs exceed GROUP_PAIRS makes a group alone.
    """
    groups, current, queries, keys = [], [], 0, 0
    for i, (n, c) in enumerate(zip(new.tolist(), context.tolist())):
        if current and (len(current) == GROUP_ROWS or (queries + n) * (keys + c) > GROUP_PAIRS):
            groups.append(np.array(current))
            current, queries, keys = [], 0, 0
        current.append(i)
        queries, keys = queries + n, keys + c
    groups.append(np.array(current))
    return groups


class VarlenPagedAttention:
    """One ragged pass through `torch.nn.attention.varlen` (Flash Attention; CUDA): no padding, no mask.

    New tokens are the last of each sequence's context, so causal attention (window (-1, 0)) aligned to the end of
    the keys is exactly what each query may see. With VARLEN_PAGED the kernel reads the cache's pages through the
    block tables; otherwise each context is gathered, packed, and `cu_seq_k` cuts it.
    """

    def __init__(self, cache: PagedKVCache, batch: RaggedBatch, device, paged: bool | None = None):
        if not cache.token_major:
            raise ValueError("variable-length attention reads a token-major cache")
        self.cache = cache
        self.paged = VARLEN_PAGED if paged is None else paged
        path = "block tables" if self.paged else "packed"
        if why := varlen_missing(path):  # refused here, not as a TypeError from inside the first layer's call
            raise ValueError(f"varlen {path} {why}")
        lens = batch.context_lens
        as_int32 = lambda x: torch.as_tensor(np.asarray(x), dtype=torch.int32, device=device)  # noqa: E731
        self.slot_mapping = torch.as_tensor(batch.slot_mapping, device=device)  # (T,)
        self.cu_q = as_int32(batch.cu_seqlens)  # (n+1,)
        self.cu_k = as_int32(np.concatenate([[0], np.cumsum(lens)]))  # (n+1,)
        self.max_q = int(np.diff(batch.cu_seqlens).max())
        self.max_k = int(lens.max())
        if self.paged:
            self.block_table = as_int32(np.maximum(batch.block_tables, 0))  # (n, max_blocks); -1 padding never read
            self.seqused_k = as_int32(lens)  # (n,)
        else:
            slots, _, _ = flat_context(batch, cache.block_size, np.arange(len(lens)))
            self.slots = torch.as_tensor(slots, device=device)  # (K,)

    def __call__(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Store k, v (T, H, D) in the cache; return attention outputs (T, H, D)."""
        from torch.nn.attention.varlen import varlen_attn

        kc, vc = self.cache.k[layer], self.cache.v[layer]  # (S, H, D)
        kc.index_copy_(0, self.slot_mapping, k)
        vc.index_copy_(0, self.slot_mapping, v)
        if self.paged:
            pages = (-1, self.cache.block_size, *kc.shape[1:])  # (blocks, block_size, H, D)
            return varlen_attn(
                q, kc.view(pages), vc.view(pages), self.cu_q, None, self.max_q, self.max_k,
                window_size=(-1, 0), seqused_k=self.seqused_k, block_table=self.block_table,
            )  # fmt: skip
        keys, values = kc.index_select(0, self.slots), vc.index_select(0, self.slots)  # (K, H, D) each
        return varlen_attn(q, keys, values, self.cu_q, self.cu_k, self.max_q, self.max_k, window_size=(-1, 0))


class DenseKVCache:
    """A static batch's rectangular cache: (layers, B, H, capacity, D), one row per member, never reshuffled."""

    def __init__(self, config: ModelConfig, rows: int, capacity: int, device, dtype):
        shape = (config.n_layers, rows, config.n_heads, capacity, config.head_dim)
        self.k = torch.zeros(shape, device=device, dtype=dtype)  # (L, B, H, C, D)
        self.v = torch.zeros(shape, device=device, dtype=dtype)  # (L, B, H, C, D)


class DensePaddedAttention:
    """One step of a padded rectangular batch: columns [col, col + width) of every row, left-padded prompts."""

    def __init__(self, cache: DenseKVCache, rows: int, col: int, width: int, pad: torch.Tensor):
        self.cache, self.rows, self.col, self.width, self.pad = cache, rows, col, width, pad
        # A decode (or a short prefill) is one chunk whose mask every layer reuses; a long prefill's are made per chunk.
        self.mask = self._mask(0, width) if width <= PREFILL_QUERY_CHUNK else None

    def _mask(self, a: int, b: int) -> torch.Tensor:
        """Return the mask (B, 1, b - a, col + b) of this step's query columns a..b-1 over the keys up to them."""
        device = self.pad.device
        keys = torch.arange(self.col + b, device=device)  # (C',)
        queries = torch.arange(self.col + a, self.col + b, device=device)  # (w,)
        causal = keys[None, :] <= queries[:, None]  # (w, C')
        real = keys[None, :] >= self.pad[:, None]  # (B, C') left padding is never attended to
        # A padding query attends to itself only, so it stays finite (0 * NaN would poison real rows).
        return ((causal[None] & real[:, None, :]) | (keys[None, None, :] == queries[None, :, None]))[:, None]

    def __call__(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Store k, v (B * W, H, D) at this step's columns; return outputs (B * W, H, D)."""
        B, W, end = self.rows, self.width, self.col + self.width
        as_rows = lambda x: x.view(B, W, *x.shape[1:]).transpose(1, 2)  # noqa: E731  (B, H, W, D)
        self.cache.k[layer, :, :, self.col : end] = as_rows(k)
        self.cache.v[layer, :, :, self.col : end] = as_rows(v)
        keys, values = self.cache.k[layer, :, :, :end], self.cache.v[layer, :, :, :end]  # (B, H, C', D)
        if self.mask is not None:
            out = F.scaled_dot_product_attention(as_rows(q), keys, values, attn_mask=self.mask)  # (B, H, W, D)
        else:  # a long prefill: queries in chunks, so the scores are never (W, C') at once
            queries = as_rows(q)
            out = torch.empty_like(queries)
            for a in range(0, W, PREFILL_QUERY_CHUNK):
                b = min(a + PREFILL_QUERY_CHUNK, W)
                upto = self.col + b
                out[:, :, a:b] = F.scaled_dot_product_attention(
                    queries[:, :, a:b], keys[:, :, :upto], values[:, :, :upto], attn_mask=self._mask(a, b)
                )
        return out.transpose(1, 2).reshape(B * W, *q.shape[1:])  # (B * W, H, D)


class ReferenceAttention:
    """Plain causal attention over one whole sequence, no cache: the yardstick the other paths are checked against."""

    def __call__(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Return causal attention outputs (T, H, D) for one sequence's q, k, v (T, H, D)."""
        out = F.scaled_dot_product_attention(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), is_causal=True)
        return out.transpose(0, 1)  # (T, H, D)
