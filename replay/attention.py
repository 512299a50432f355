"""Attention for the replay: a paged KV cache for the ragged batch, a dense padded cache for static, a reference."""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from core.ragged import RaggedBatch

from .model import ModelConfig


class PagedKVCache:
    """K and V for every layer in fixed-size blocks, head-major: (layers, H, num_blocks * block_size, D) each."""

    def __init__(self, config: ModelConfig, num_blocks: int, block_size: int, device, dtype):
        # Head-major, so gathering a context gives each head's keys contiguous, ready for one batched matmul.
        shape = (config.n_layers, config.n_heads, num_blocks * block_size, config.head_dim)
        self.k = torch.zeros(shape, device=device, dtype=dtype)  # (L, H, S, D)
        self.v = torch.zeros(shape, device=device, dtype=dtype)  # (L, H, S, D)
        self.block_size = block_size


FLAT_LIMIT = 1 << 22  # query x key pairs in one batched matmul; past this, attend sequence by sequence


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
    need no gather. The others (decodes) gather only their live cache rows, flattened, and share two batched matmuls
    under a block-diagonal causal mask: no padding to the longest context, and no prefill query scored against
    another sequence's keys.
    """

    def __init__(self, cache: PagedKVCache, batch: RaggedBatch, device):
        self.cache = cache
        self.scale = cache.k.shape[-1] ** -0.5
        self.slot_mapping = torch.as_tensor(batch.slot_mapping, device=device)  # (T,)
        cu, new = batch.cu_seqlens, np.diff(batch.cu_seqlens)
        fresh = new == batch.context_lens
        self.fresh = [(int(cu[i]), int(cu[i + 1])) for i in np.flatnonzero(fresh)]
        rows = np.flatnonzero(~fresh)
        self.cached = None
        self.per_seq = []
        if len(rows) == 0:
            return
        slots, owner, key_pos = flat_context(batch, cache.block_size, rows)
        queries = np.concatenate([np.arange(cu[i], cu[i + 1]) for i in rows])  # (Tc,) token indices
        self.queries = torch.as_tensor(queries, device=device)
        self.all_cached = len(queries) == len(batch.token_ids)
        query_owner = np.repeat(np.arange(len(rows)), new[rows])  # (Tc,)
        q_pos = batch.positions[queries]  # (Tc,)
        if len(queries) * len(slots) <= FLAT_LIMIT:
            seen = (query_owner[:, None] == owner[None, :]) & (key_pos[None, :] <= q_pos[:, None])  # (Tc, K)
            blocked = torch.as_tensor(~seen, device=device)
            bias = torch.zeros(blocked.shape, device=device, dtype=cache.k.dtype).masked_fill_(blocked, -torch.inf)
            self.cached = (torch.as_tensor(slots, device=device), bias)
        else:
            for j in range(len(rows)):
                keys, mine = owner == j, query_owner == j
                mask = torch.as_tensor(key_pos[keys][None, :] <= q_pos[mine][:, None], device=device)  # (n_new, n)
                self.per_seq.append((int(mine.sum()), torch.as_tensor(slots[keys], device=device), mask))

    def __call__(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Store k, v (T, H, D) in the cache; return attention outputs (T, H, D)."""
        kc, vc = self.cache.k[layer], self.cache.v[layer]  # (H, S, D)
        kc.index_copy_(1, self.slot_mapping, k.transpose(0, 1))
        vc.index_copy_(1, self.slot_mapping, v.transpose(0, 1))
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)  # (H, T, D)
        if self.cached is not None and self.all_cached:
            return self._attend_cached(kc, vc, q).transpose(0, 1)  # (T, H, D)
        out = torch.empty_like(q)  # (H, T, D)
        for a, b in self.fresh:
            out[:, a:b] = F.scaled_dot_product_attention(q[:, a:b], k[:, a:b], v[:, a:b], is_causal=True)
        if self.cached is not None or self.per_seq:
            out.index_copy_(1, self.queries, self._attend_cached(kc, vc, q.index_select(1, self.queries)))
        return out.transpose(0, 1)  # (T, H, D)

    def _attend_cached(self, kc: torch.Tensor, vc: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """Return attention outputs (H, Tc, D) for the queries q (H, Tc, D) of sequences reading the cache."""
        if self.cached is not None:
            slots, bias = self.cached
            keys, values = kc.index_select(1, slots), vc.index_select(1, slots)  # (H, K, D) each
            scores = torch.baddbmm(bias, q, keys.transpose(1, 2), alpha=self.scale)  # (H, Tc, K)
            return torch.bmm(scores.softmax(-1), values)  # (H, Tc, D)
        outs, start = [], 0
        for n_new, slots, mask in self.per_seq:
            qi = q[:, start : start + n_new]  # (H, n_new, D)
            ki, vi = kc.index_select(1, slots), vc.index_select(1, slots)  # (H, n, D)
            outs.append(F.scaled_dot_product_attention(qi, ki, vi, attn_mask=mask))  # (H, n_new, D)
            start += n_new
        return torch.cat(outs, dim=1)  # (H, Tc, D)


class DenseKVCache:
    """A static batch's rectangular cache: (layers, B, H, capacity, D), one row per member, never reshuffled."""

    def __init__(self, config: ModelConfig, rows: int, capacity: int, device, dtype):
        shape = (config.n_layers, rows, config.n_heads, capacity, config.head_dim)
        self.k = torch.zeros(shape, device=device, dtype=dtype)  # (L, B, H, C, D)
        self.v = torch.zeros(shape, device=device, dtype=dtype)  # (L, B, H, C, D)


class DensePaddedAttention:
    """One step of a padded rectangular batch: columns [col, col + width) of every row, left-padded prompts."""

    def __init__(self, cache: DenseKVCache, rows: int, col: int, width: int, pad: torch.Tensor):
        device = cache.k.device
        self.cache, self.rows, self.col, self.width = cache, rows, col, width
        keys = torch.arange(col + width, device=device)  # (C',)
        queries = torch.arange(col, col + width, device=device)  # (W,)
        causal = keys[None, :] <= queries[:, None]  # (W, C')
        real = keys[None, :] >= pad[:, None]  # (B, C') left padding is never attended to
        # A padding query attends to itself only, so it stays finite (0 * NaN would poison real rows).
        self.mask = (causal[None] & real[:, None, :]) | (keys[None, None, :] == queries[None, :, None])  # (B, W, C')
        self.mask = self.mask[:, None]  # (B, 1, W, C')

    def __call__(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Store k, v (B * W, H, D) at this step's columns; return outputs (B * W, H, D)."""
        B, W, end = self.rows, self.width, self.col + self.width
        as_rows = lambda x: x.view(B, W, *x.shape[1:]).transpose(1, 2)  # noqa: E731  (B, H, W, D)
        self.cache.k[layer, :, :, self.col : end] = as_rows(k)
        self.cache.v[layer, :, :, self.col : end] = as_rows(v)
        keys, values = self.cache.k[layer, :, :, :end], self.cache.v[layer, :, :, :end]  # (B, H, C', D)
        out = F.scaled_dot_product_attention(as_rows(q), keys, values, attn_mask=self.mask)  # (B, H, W, D)
        return out.transpose(1, 2).reshape(B * W, *q.shape[1:])  # (B * W, H, D)


class ReferenceAttention:
    """Plain causal attention over one whole sequence, no cache: the yardstick the other paths are checked against."""

    def __call__(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Return causal attention outputs (T, H, D) for one sequence's q, k, v (T, H, D)."""
        out = F.scaled_dot_product_attention(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), is_causal=True)
        return out.transpose(0, 1)  # (T, H, D)
