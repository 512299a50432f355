"""The KV block manager the scheduler asks: a pool of fixed-size blocks, paged or contiguous; it decides nothing.

Paged: a request's blocks come one at a time from anywhere in the pool. Contiguous: a request reserves one run of
consecutive blocks at admission (first fit), and leaves a hole of that size when it retires. The scheduler
(`core.sched.engine`) asks `can_allocate` / `can_append` and then calls `allocate` / `append` / `free`.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections import deque
from dataclasses import dataclass
from operator import itemgetter

from core.limits import check_range

ALLOCATIONS = ("paged", "contiguous")
_length = itemgetter(1)  # of a free run (start, length)
MAX_KV_BLOCKS = 100_000_000
MAX_BLOCK_SIZE = 65_536
ENGINE_BLOCK_SIZE = 16  # tokens a KV block holds by default in vLLM (and here, where nothing asks for another)


@dataclass(frozen=True)
class MemoryConfig:
    """The KV pool: `kv_blocks` blocks (None: unlimited) of `block_size` tokens, and how requests take them.

    `reserve_tokens` is what a contiguous reservation (and a static batch's row) holds past the prompt; None means
    the longest output in the traffic, the cap a server that knows its traffic would reserve.
    """

    kv_blocks: int | None = None
    block_size: int = ENGINE_BLOCK_SIZE
    allocation: str = "paged"
    reserve_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in ("kv_blocks", "block_size", "reserve_tokens"):
            value = getattr(self, name)
            if value is not None and type(value) is not int:
                raise ValueError(f"{name} must be an integer, got {value!r}")
        if self.kv_blocks is not None:
            check_range("kv_blocks", self.kv_blocks, 1, MAX_KV_BLOCKS)
        check_range("block_size", self.block_size, 1, MAX_BLOCK_SIZE)
        if self.allocation not in ALLOCATIONS:
            raise ValueError(f"allocation must be one of {', '.join(ALLOCATIONS)}, got {self.allocation!r}")
        if self.reserve_tokens is not None:
            check_range("reserve_tokens", self.reserve_tokens, 1, 1_000_000)

    @property
    def unlimited(self) -> bool:
        """Return whether the pool never runs out (today's schedules, bit for bit)."""
        return self.kv_blocks is None

    def blocks_for(self, tokens: int) -> int:
        """Return how many blocks hold `tokens` tokens."""
        return -(-tokens // self.block_size)


UNLIMITED = MemoryConfig()


def pool_for(memory_gb: float, weights_gb: float, kv_mb_per_token: float, block_size: int = 16) -> int:
    """Return how many blocks of `block_size` tokens fit in what the weights leave of an accelerator's memory.

    An 80 GB H100 holding Llama-2 7B (13.5 GB of weights, 0.5 MB of KV per token) leaves 66.5 GB: about 8,300
    blocks of 16 tokens (133,000 tokens).
    """
    if not memory_gb > weights_gb > 0 or not kv_mb_per_token > 0:
        raise ValueError("need memory_gb > weights_gb > 0 and kv_mb_per_token > 0")
    tokens = (memory_gb - weights_gb) * 1024 / kv_mb_per_token
    return int(tokens // block_size)


def longest_free_run(owners) -> int:
    """Return the longest run of consecutive free blocks (owner < 0) in a block map: what one reservation can use."""
    best = here = 0
    for owner in owners:
        if owner < 0:
            here += 1
            if here > best:
                best = here
        else:
            here = 0
    return best


class KVPool:
    """The pool's bookkeeping: who owns which blocks. Unlimited pools only count.

    `track_blocks` False keeps a paged pool to counts (no block ids, no `owners()`): what the scheduler asks needs
    only counts, and block ids cost a heap operation per block.
    """

    def __init__(self, config: MemoryConfig, track_blocks: bool = True, reuse: str = "lowest"):
        self.config = config
        self.block_size = config.block_size
        self.size = config.kv_blocks  # None: unlimited
        self.contiguous = config.allocation == "contiguous"
        self.held: dict[int, int] = {}  # request -> blocks it holds
        self.used = 0
        # Contiguous: where each request's run starts, and the free runs as sorted (start, length) pairs.
        self.run_start: dict[int, int] = {}
        self.free_runs: list[tuple[int, int]] = [(0, self.size)] if self.size is not None else []
        # Contiguous: the longest free run, kept current (the loop reads it at every boundary, so a lazy one would be
        # found again as often).
        self.longest_run = self.size or 0
        # Paged: which blocks each request holds, taken lowest-numbered first from a heap of free block ids.
        self.track = track_blocks and self.size is not None and not self.contiguous
        self.blocks: dict[int, list[int]] = {}
        # Free block ids: a heap, the lowest taken first; or with reuse="fifo" a queue, blocks taken in the order they
        # were freed (nano-vllm's free list, which the replay's and the batch view's block tables follow).
        if reuse not in ("lowest", "fifo"):
            raise ValueError(f"reuse must be lowest or fifo, got {reuse!r}")
        self.fifo = reuse == "fifo"
        ids = range(self.size) if self.track else ()
        self.free_ids = deque(ids) if self.fifo else list(ids)

    @property
    def free(self) -> int | None:
        """Return how many blocks are free (None: unlimited)."""
        return None if self.size is None else self.size - self.used

    def can_allocate(self, request: int, tokens: int) -> bool:
        """Return whether a request not holding blocks can be given the blocks for `tokens` tokens."""
        if self.size is None:
            return True
        need = -(-tokens // self.block_size)  # blocks_for, inlined: it runs once per admission
        if self.contiguous:
            return need <= self.longest_run
        return need <= self.size - self.used

    def allocate(self, request: int, tokens: int) -> None:
        """Give a request that holds nothing the blocks for `tokens` tokens (contiguous: one run, first fit)."""
        if request in self.held or not self.take(request, tokens):
            raise RuntimeError(f"cannot allocate {-(-tokens // self.block_size)} blocks for request {request}")

    def take(self, request: int, tokens: int) -> bool:
        """Give a request that holds nothing the blocks for `tokens` tokens if they fit; return whether they did.

        `can_allocate` then `allocate` in one question, for the scheduling loop's admission.
        """
        need, size = -(-tokens // self.block_size), self.size
        if self.contiguous and size is not None:
            if need > self.longest_run:
                return False
            runs = self.free_runs
            k = 0
            while runs[k][1] < need:  # first fit
                k += 1
            start, length = runs[k]
            if length == need:
                del runs[k]
            else:
                runs[k] = (start + need, length - need)
            self.run_start[request] = start
            if length == self.longest_run:  # only cutting a longest run can shorten the longest run
                self.longest_run = max(map(_length, runs), default=0)  # the runs are few (one per hole)
        elif size is not None and need > size - self.used:
            return False
        elif self.track:
            self.blocks[request] = [self._take() for _ in range(need)]
        self.held[request] = need
        self.used += need
        return True

    def can_append(self, request: int, tokens: int) -> bool:
        """Return whether a request's blocks can grow to hold `tokens` tokens (paged only: a run cannot grow)."""
        extra = -(-tokens // self.block_size) - self.held[request]  # blocks_for, inlined: it runs once per block
        if extra <= 0 or self.size is None:
            return True
        return not self.contiguous and extra <= self.size - self.used

    def append(self, request: int, tokens: int) -> None:
        """Grow a request's blocks to hold `tokens` tokens."""
        extra = -(-tokens // self.block_size) - self.held[request]
        if extra <= 0:
            return
        if self.size is not None and (self.contiguous or extra > self.size - self.used):
            raise RuntimeError(f"no free block for request {request}")
        self.held[request] += extra
        self.used += extra
        if self.track:
            self.blocks[request] += [self._take() for _ in range(extra)]

    def can_grow(self, count: int) -> bool:
        """Return whether `count` running requests can each take one more block (paged)."""
        return self.size is None or (not self.contiguous and count <= self.size - self.used)

    def try_grow(self, requests) -> bool:
        """Give each of `requests` one more block if enough are free; return whether they did (paged).

        `can_grow` then `grow` in one question, for the scheduling loop's growth at a boundary.
        """
        count = len(requests)
        if self.size is not None and (self.contiguous or count > self.size - self.used):
            return False
        if self.track:
            self.grow(requests)
            return True
        held = self.held
        for request in requests:
            held[request] += 1
        self.used += count
        return True

    def grow(self, requests) -> None:
        """Give each of `requests` one more block, in the order given (paged; block ids lowest first)."""
        if self.size is not None and (self.contiguous or len(requests) > self.size - self.used):
            raise RuntimeError(f"no {len(requests)} free blocks to grow by")
        held = self.held
        for request in requests:
            held[request] += 1
        self.used += len(requests)
        if self.track:
            for request in requests:
                self.blocks[request].append(self._take())

    def release(self, request: int) -> None:
        """Return every block a request holds (contiguous: its run becomes a hole, merged with free neighbours)."""
        blocks = self.held.pop(request)
        self.used -= blocks
        if self.contiguous and self.size is not None:
            runs, start = self.free_runs, self.run_start.pop(request)
            k = bisect_left(runs, (start, 0))
            end = start + blocks
            if k < len(runs) and runs[k][0] == end:  # merge with the run after
                end += runs.pop(k)[1]
            if k:  # and with the run before
                before, length = runs[k - 1]
                if before + length == start:
                    start = before
                    del runs[k - 1]
                    k -= 1
            runs.insert(k, (start, end - start))  # where the hole was: the runs stay sorted by start
            if end - start > self.longest_run:
                self.longest_run = end - start  # a merged hole can only lengthen the longest run
        elif self.track:
            free_ids = self.free_ids
            if self.fifo:
                free_ids.extend(self.blocks.pop(request))
            else:
                for block in self.blocks.pop(request):
                    heapq.heappush(free_ids, block)

    def _take(self) -> int:
        """Return a free block id, taken from the free list (tracked paged pools)."""
        return self.free_ids.popleft() if self.fifo else heapq.heappop(self.free_ids)

    def reset(self, free_order=None) -> None:
        """Free every block of a tracked paged pool, the free list in `free_order` (default 0, 1, ...)."""
        if not self.track:
            raise ValueError("reset applies to a paged pool that tracks block ids")
        order = list(range(self.size) if free_order is None else free_order)
        if sorted(order) != list(range(self.size)):
            raise ValueError(f"free_order must hold each of the {self.size} blocks once")
        self.held.clear()
        self.blocks.clear()
        self.used = 0
        self.free_ids = deque(order) if self.fifo else sorted(order)

    def largest_free_run(self) -> int:
        """Return the longest run of consecutive free blocks (paged: every free block counts)."""
        if self.size is None:
            return 0
        if not self.contiguous:
            return self.size - self.used
        return self.longest_run

    def owners(self) -> list[int]:
        """Return the owner of every block, -1 when free: the pool as it lies, holes and all."""
        if self.size is None:
            raise ValueError("an unlimited pool has no block map")
        if not self.contiguous and not self.track:
            raise ValueError("this paged pool counts blocks only (track_blocks=False): it has no block map")
        out = [-1] * self.size
        if self.contiguous:
            for request, start in self.run_start.items():
                out[start : start + self.held[request]] = [request] * self.held[request]
        else:
            for request, blocks in self.blocks.items():
                for block in blocks:
                    out[block] = request
        return out
