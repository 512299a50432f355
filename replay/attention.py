"""Attention for the replay: a paged KV cache for the ragged batch, a dense padded cache for static, a reference."""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from core.ragged import RaggedBatch

from .model import ModelConfig


class PagedKVCache:
    """K and V for every layer in fixed-size blocks: (layers, num_blocks * block_size, H, D) each."""

    def __init__(self, config: ModelConfig, num_blocks: int, block_size: int, device, dtype):
        shape = (config.n_layers, num_blocks * block_size, config.n_heads, config.head_dim)
        self.k = torch.zeros(shape, device=device, dtype=dtype)  # (L, S, H, D)
        self.v = torch.zeros(shape, device=device, dtype=dtype)  # (L, S, H, D)
        self.block_size = block_size

    def context_slots(self, block_table: np.ndarray, length: int) -> np.ndarray:
        """Return the cache slots holding positions 0..length-1 of a sequence with this block table."""
        pos = np.arange(length)
        return block_table[pos // self.block_size] * self.block_size + pos % self.block_size  # (length,)


class RaggedPagedAttention:
    """One step of the ragged batch: write new K/V through slot_mapping, attend over each sequence's blocks."""

    def __init__(self, cache: PagedKVCache, batch: RaggedBatch, device):
        self.cache = cache
        self.slot_mapping = torch.as_tensor(batch.slot_mapping, device=device)  # (T,)
        self.cu = batch.cu_seqlens.tolist()
        lens = batch.context_lens
        self.decode_only = bool((np.diff(batch.cu_seqlens) == 1).all())
        if self.decode_only:
            # Decode: one padded (n, Lmax) gather and a length mask, one SDPA call for the whole batch.
            width = int(lens.max())
            slots = np.zeros((len(lens), width), dtype=np.int64)
            for i, n in enumerate(lens):
                slots[i, :n] = cache.context_slots(batch.block_tables[i], int(n))
            self.slots = torch.as_tensor(slots, device=device)  # (n, Lmax)
            valid = torch.arange(width, device=device)[None, :] < torch.as_tensor(lens, device=device)[:, None]
            self.mask = valid[:, None, None, :]  # (n, 1, 1, Lmax)
        else:
            # Mixed prefill and decode: each sequence's queries against its own context, causally.
            self.per_seq = []
            for i, n in enumerate(lens):
                q_pos = torch.as_tensor(batch.positions[self.cu[i] : self.cu[i + 1]], device=device)  # (n_new,)
                slots = torch.as_tensor(cache.context_slots(batch.block_tables[i], int(n)), device=device)  # (n,)
                mask = torch.arange(int(n), device=device)[None, :] <= q_pos[:, None]  # (n_new, n)
                self.per_seq.append((slots, mask))

    def __call__(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Store k, v (T, H, D) in the cache; return attention outputs (T, H, D)."""
        kc, vc = self.cache.k[layer], self.cache.v[layer]  # (S, H, D)
        kc.index_copy_(0, self.slot_mapping, k)
        vc.index_copy_(0, self.slot_mapping, v)
        if self.decode_only:
            keys = kc[self.slots].transpose(1, 2)  # (n, H, Lmax, D)
            values = vc[self.slots].transpose(1, 2)  # (n, H, Lmax, D)
            out = F.scaled_dot_product_attention(q[:, :, None, :], keys, values, attn_mask=self.mask)  # (n, H, 1, D)
            return out[:, :, 0, :]  # (n, H, D)
        outs = []
        for i, (slots, mask) in enumerate(self.per_seq):
            qi = q[self.cu[i] : self.cu[i + 1]].transpose(0, 1)  # (H, n_new, D)
            ki, vi = kc[slots].transpose(0, 1), vc[slots].transpose(0, 1)  # (H, n, D)
            outs.append(F.scaled_dot_product_attention(qi, ki, vi, attn_mask=mask).transpose(0, 1))  # (n_new, H, D)
        return torch.cat(outs)  # (T, H, D)


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
