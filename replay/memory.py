"""The replay's memory checks: what a request and the KV pool need, refused before anything is allocated."""

from __future__ import annotations

from collections.abc import Sequence

from core import Request
from core.limits import LimitError

BLOCK_SIZE = 16


def kv_bytes_per_token(n_layers: int, d_model: int, dtype_bits: int) -> int:
    """Return the bytes one token's cache takes: a K and a V vector of d_model values in every layer."""
    return 2 * n_layers * d_model * dtype_bits // 8


def request_tokens(r: Request) -> int:
    """Return the positions a request fills: its prompt (at least one token, the replay's first input) and output."""
    return max(1, r.prompt_tokens) + r.output_tokens


def pool_blocks(tokens: Sequence[int], slots: int, block_size: int) -> int:
    """Return the paged pool's size: the longest request's blocks for each slot that can be full at once.

    Never more rows than requests: 2 requests on 64 slots need 2 rows of blocks, not 64.
    """
    longest = max((-(-n // block_size) for n in tokens), default=1)
    return min(slots, max(len(tokens), 1)) * longest


def check_context(requests: Sequence[Request], context: int) -> None:
    """Raise LimitError if a request's prompt and output need more positions than the model has."""
    for r in requests:
        if request_tokens(r) > context:
            raise LimitError(
                f"request {r.id}: prompt {r.prompt_tokens:,} + output {r.output_tokens:,} tokens is over the "
                f"model's context of {context:,} positions"
            )


def check_cache(
    requests: Sequence[Request], slots: int, block_size: int, per_token: int, budget: int, device: str
) -> None:
    """Raise LimitError if the KV pool for these requests on `slots` slots would take more than `budget` bytes."""
    blocks = pool_blocks([request_tokens(r) for r in requests], slots, block_size)
    cache_bytes = blocks * block_size * per_token
    if cache_bytes > budget:
        longest = blocks // min(slots, max(len(requests), 1)) * block_size
        raise LimitError(
            f"the KV cache for {slots} slots of up to {longest:,} tokens would take "
            f"{cache_bytes / 2**20:,.0f} MiB, over the {budget / 2**20:,.0f} MiB this replay may use on "
            f"{device}; use fewer slots or shorter requests"
        )
