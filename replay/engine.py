"""Replay a schedule through a real model: every forward pass the core scheduled, timed on the device.

Static and unlimited continuous batching replay the core's `Run`. Chunked prefill and limited pools replay the core
engine's `Schedule` pass by pass (`replay.plan`): its admissions, preemptions and prompt chunks, never re-decided.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from core import Request, simulate
from core.batch.kv_blocks import BlockAllocator
from core.batch.ragged import build_batch
from core.batch.sampling import SamplingParams
from core.batch.sequence import Sequence as Seq
from core.kv.memory import UNLIMITED, MemoryConfig
from core.limits import LimitError, check_steps
from core.sched.engine import as_run, schedule
from core.sched.policies import get_policy
from core.sched.schedule_record import Schedule

from . import synthetic
from .attention import DenseKVCache, DensePaddedAttention, PagedKVCache, ragged_attention, steady_sdpa
from .memory import BLOCK_SIZE, check_cache, check_context, kv_bytes_per_token, pool_blocks
from .model import PRESETS, Transformer
from .sampling import make_generator, sample_rows
from .steps import ReplayResult, plan_steps, replay_continuous, replay_static

GREEDY = SamplingParams()
MAX_CPU_CACHE_BYTES = 2 * 1024**3  # KV cache on the CPU: the server's other sessions need memory too
GPU_CACHE_SHARE = 0.8  # of the device memory free when the replay starts


def resolve_device(name: str | None) -> torch.device:
    """Return CUDA when present (or asked for), else the CPU; a request for a missing device is a ValueError."""
    if name in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name not in ("cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, got {name!r}")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device cuda: no CUDA device is available here (use --device cpu or auto)")
    return torch.device(name)


def prompt_ids(request: Request, vocab: int, seed: int) -> list[int]:
    """Return a request's synthetic prompt: its length from the trace, its tokens from (seed, request id)."""
    rng = np.random.default_rng([seed, zlib.crc32(request.id.encode())])  # the same prompt in any batch
    return rng.integers(0, vocab, size=max(1, request.prompt_tokens)).tolist()


def _core_plan(
    requests: Sequence[Request],
    slots: int,
    policy: str,
    memory: MemoryConfig,
    batch_timeout: int,
    token_budget: int | None,
) -> Schedule | None:
    """Return the core engine's Schedule where the replay follows one pass by pass; None where the Run will do."""
    pol = get_policy(policy)
    if token_budget is not None and not pol.has_token_budget:
        raise ValueError(f"token_budget applies to a policy with a token budget, not {policy}")
    if not memory.unlimited and (pol.forms_batches or memory.block_size != BLOCK_SIZE):
        raise ValueError(
            "the replay follows a limited pool under continuous or chunked batching on a paged cache of "
            f"{BLOCK_SIZE}-token blocks; got {policy}, {memory.block_size}-token blocks"
        )
    if not (pol.has_token_budget or pol.pauses_decoders or not memory.unlimited):
        return None  # the Run will do: the plain loop never pauses a decoder
    return schedule(list(requests), slots, policy, memory, batch_timeout=batch_timeout, token_budget=token_budget)


class Engine:
    """A model on a device, ready to replay schedules: `Engine("tiny").replay(requests, slots, policy)`."""

    def __init__(self, model: str = "tiny", device: str | None = None, seed: int = 0, threads: int = 1):
        if model not in PRESETS:
            raise ValueError(f"model must be one of {', '.join(PRESETS)}, got {model!r}")
        self.device = resolve_device(device)
        if self.device.type == "cpu":
            torch.set_num_threads(threads)  # more threads on a small shared CPU made steps slower and erratic
        self.dtype = torch.bfloat16 if self.device.type == "cuda" else torch.float32
        self.model_name, self.seed = model, seed
        self.block_size = BLOCK_SIZE
        self.model = Transformer(PRESETS[model], seed=seed, device=self.device, dtype=self.dtype).eval()

    def check_fits(self, requests: Sequence[Request], slots: int, memory: MemoryConfig = UNLIMITED) -> None:
        """Raise LimitError, before anything is allocated, if a request or the KV caches exceed what this can hold."""
        cfg = self.model.config
        check_context(requests, cfg.max_positions)
        per_token = kv_bytes_per_token(cfg.n_layers, cfg.d_model, torch.finfo(self.dtype).bits)
        budget = self._cache_budget()
        check_cache(requests, slots, BLOCK_SIZE, per_token, budget, str(self.device))
        if not memory.unlimited and memory.kv_blocks * BLOCK_SIZE * per_token > budget:
            # A limited pool is replayed on a cache of exactly its blocks, however few the requests.
            raise LimitError(
                f"a pool of {memory.kv_blocks:,} blocks of {BLOCK_SIZE} tokens would take "
                f"{memory.kv_blocks * BLOCK_SIZE * per_token / 2**20:,.0f} MiB, over the {budget / 2**20:,.0f} MiB "
                f"this replay may use on {self.device}; give a smaller pool"
            )

    def _cache_budget(self) -> int:
        if self.device.type == "cuda":
            free, _total = torch.cuda.mem_get_info(self.device)
            return int(free * GPU_CACHE_SHARE)
        return MAX_CPU_CACHE_BYTES

    def replay(
        self,
        requests: Sequence[Request],
        slots: int,
        policy: str,
        batch_timeout: int = 0,
        sampling: Callable[[int, Request], SamplingParams] | None = None,
        on_step: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None,
        memory: MemoryConfig | None = None,
        token_budget: int | None = None,
    ) -> ReplayResult:
        """Schedule with the core, then run every scheduled forward pass; `on_step(t, drain)` after each step.

        `policy="chunked"` with `token_budget` T runs the core's chunked schedule: each pass one ragged batch of
        every decoding row and the prompt chunks the core chose, a chunk's KV kept for the next; a request's first
        token comes in its last chunk's pass. With a limited `memory` (continuous or chunked; paged or contiguous),
        the core's engine decides who runs on that pool, and the replay follows it on a cache of exactly that many
        blocks: admitting, preempting (freeing the victim's blocks and its KV) and readmitting with a prefill over
        its prompt and the tokens it had generated; contiguous reservations take the run of blocks the core's pool
        gives them.
        """
        memory = UNLIMITED if memory is None else memory
        pol = get_policy(policy)
        # Scheduled before check_fits: the core refuses a bad budget before the model is touched.
        plan = _core_plan(requests, slots, policy, memory, batch_timeout, token_budget)
        self.check_fits(requests, slots, memory)
        run = as_run(plan) if plan is not None else simulate(list(requests), slots, policy, batch_timeout)
        check_steps(run.drain, "the replay")
        seqs, generators = self.sequences(run.requests, sampling)
        result = ReplayResult.empty(run, str(self.device), self.model_name)
        if plan is not None:
            steps = plan_steps(self, plan, run, seqs, generators, result)
        elif pol.forms_batches:
            steps = replay_static(self, run, seqs, generators, result)
        else:
            steps = replay_continuous(self, run, seqs, generators, result)
        for t in steps:
            if on_step:
                on_step(t, run.drain)
            if cancel is not None and cancel.is_set() and t + 1 < run.drain:
                result.cancelled = True
                break
        for i, s in enumerate(seqs):
            result.outputs[i] = s.token_ids[s.num_prompt_tokens :]
        return result

    def sequences(self, requests: Sequence[Request], sampling=None) -> tuple[list[Seq], list[torch.Generator]]:
        """Return each request's sequence (its synthetic prompt, output length, sampling) and its own generator."""
        vocab = self.model.config.vocab_size
        seqs = [
            Seq(
                r.id,
                i,
                prompt_ids(r, vocab, self.seed),
                num_prompt_tokens=max(1, r.prompt_tokens),
                max_new_tokens=r.output_tokens,
                params=sampling(i, r) if sampling else GREEDY,
            )
            for i, r in enumerate(requests)
        ]
        return seqs, [make_generator(s.params, self.device) for s in seqs]

    def paged_cache(self, seqs: list[Seq], slots: int) -> tuple[BlockAllocator, PagedKVCache]:
        """Return a block allocator and a paged cache big enough for `slots` of the longest of these sequences."""
        blocks = pool_blocks([s.num_prompt_tokens + s.max_new_tokens for s in seqs], slots, BLOCK_SIZE)  # as checked
        return BlockAllocator(blocks, BLOCK_SIZE), PagedKVCache(
            self.model.config, blocks, BLOCK_SIZE, self.device, self.dtype
        )

    def warm_up(self, policy: str, slots: int) -> None:
        """Run a few untimed passes of the policy's path (a fresh engine's first passes run cold, and slow)."""
        synthetic.warm_up(self, policy, slots)

    def clock(self) -> float:
        """Return the wall clock in seconds, read once the device has finished its queued work."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)  # the clock must not run ahead of the GPU's queued work
        return time.perf_counter()

    def _forward(self, tokens, positions, attention, last) -> tuple[torch.Tensor, float]:
        """Run the model and its output head; return logits (n, V) and the milliseconds they took."""
        t0 = self.clock()
        with steady_sdpa():  # once a pass, not a layer: entering costs ~12 us
            logits = self.model.logits(self.model(tokens, positions, attention)[last])  # (n, V)
        return logits, (self.clock() - t0) * 1e3

    def chunk_pass(
        self, cache: PagedKVCache, blocks, rows: list[tuple[Seq, int]], generators
    ) -> tuple[float, int, int]:
        """Run one ragged pass computing each sequence's tokens up to its `end`; return ms, tokens in, tokens out.

        A row whose `end` is its last token samples the next one; a prompt chunk that stops short only writes its
        KV, which the next chunk reads from the cache. `blocks` is the pass's block manager (`steps._PagedBlocks` or
        `steps._ContiguousBlocks`).
        """
        for s, _ in rows:
            blocks.append(s)  # a decode step may spill into a fresh block
        views = [
            s if end == s.num_tokens else _Upto(s.token_ids[:end], s.num_computed_tokens, s.block_table)
            for s, end in rows
        ]
        batch = build_batch(views, BLOCK_SIZE)
        attention = ragged_attention(cache, batch, self.device)
        tokens = torch.as_tensor(batch.token_ids, device=self.device)  # (T,)
        positions = torch.as_tensor(batch.positions, device=self.device)  # (T,)
        emitting = [k for k, (s, end) in enumerate(rows) if end == s.num_tokens]
        last = torch.as_tensor(batch.last_token_index[emitting], device=self.device)  # (n,) rows that sample
        logits, model_ms = self._forward(tokens, positions, attention, last)  # (n, V)
        sampled = [rows[k][0] for k in emitting]
        picked = sample_rows(logits, [s.params for s in sampled], [generators[s.seq_index] for s in sampled])
        for s, end in rows:
            s.num_computed_tokens = end
        for s, token in zip(sampled, picked):
            s.token_ids.append(token)
        return model_ms, len(batch.token_ids), len(sampled)

    def ragged_pass(self, cache: PagedKVCache, allocator: BlockAllocator, running: list[Seq], generators) -> float:
        """Run one ragged pass (prefills and decodes, each reading its own blocks); return the model's ms of it."""
        for s in running:
            allocator.append(s)  # a decode step may spill into a fresh block
        batch = build_batch(running, BLOCK_SIZE)
        attention = ragged_attention(cache, batch, self.device)
        tokens = torch.as_tensor(batch.token_ids, device=self.device)  # (T,)
        positions = torch.as_tensor(batch.positions, device=self.device)  # (T,)
        last = torch.as_tensor(batch.last_token_index, device=self.device)  # (n,)
        logits, model_ms = self._forward(tokens, positions, attention, last)  # (n, V)
        picked = sample_rows(logits, [s.params for s in running], [generators[s.seq_index] for s in running])
        for s, token in zip(running, picked):
            s.num_computed_tokens = s.num_tokens
            s.token_ids.append(token)
        return model_ms

    def new_batch(self, rows: list[Seq], steps: int) -> StaticBatch:
        """Return a static batch of these members (in slot order) with a dense cache for `steps` passes."""
        width = max(s.num_prompt_tokens for s in rows)
        cache = DenseKVCache(self.model.config, len(rows), width + steps, self.device, self.dtype)
        pad = torch.as_tensor([width - s.num_prompt_tokens for s in rows], device=self.device)  # (B,)
        return StaticBatch(rows, cache, pad, width)

    def dense_pass(self, batch: StaticBatch, live: list[bool], generators) -> float:
        """Run one pass of the rectangle (left-padded prompts, then a column a step); return the model's ms of it."""
        rows, B = batch.rows, len(batch.rows)
        if batch.column == 0:
            grid = [[0] * (batch.prompt_width - s.num_prompt_tokens) + s.token_ids for s in rows]
            cols = torch.arange(batch.prompt_width, device=self.device)
            positions = (cols[None, :] - batch.pad[:, None]).clamp(min=0)  # (B, P)
        else:
            grid = [[s.token_ids[-1]] for s in rows]  # padding rows keep feeding their last token
            positions = (batch.column - batch.pad)[:, None]  # (B, 1)
        width = len(grid[0])
        tokens = torch.as_tensor(grid, device=self.device).reshape(-1)  # (B * W,)
        attention = DensePaddedAttention(batch.cache, B, batch.column, width, batch.pad)
        last = torch.arange(width - 1, B * width, width, device=self.device)  # (B,) each row's last column
        logits, model_ms = self._forward(tokens, positions.reshape(-1), attention, last)  # (B, V)
        picked = sample_rows(logits, [s.params for s in rows], [generators[s.seq_index] for s in rows])
        for s, token, alive in zip(rows, picked, live):
            if alive:  # a finished member's output is computed and thrown away
                s.num_computed_tokens = s.num_tokens
                s.token_ids.append(token)
        batch.column += width
        return model_ms


@dataclass
class StaticBatch:
    """A static batch in flight: its members (by slot), their dense cache and left padding, the next column."""

    rows: list[Seq]
    cache: DenseKVCache
    pad: torch.Tensor  # (B,)
    prompt_width: int
    column: int = 0


@dataclass(frozen=True)
class _Upto:
    """A sequence cut at the end of this pass's prompt chunk, as `build_batch` reads it (it shares the blocks)."""

    token_ids: list[int]
    num_computed_tokens: int
    block_table: list[int]

    @property
    def num_tokens(self) -> int:
        """Return the tokens up to the chunk's end."""
        return len(self.token_ids)
