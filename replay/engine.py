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

from core import Request, Run, simulate
from core.batch.kv_blocks import BlockAllocator
from core.batch.ragged import build_batch
from core.batch.sampling import SamplingParams
from core.batch.sequence import Sequence as Seq
from core.kv.memory import UNLIMITED, KVPool, MemoryConfig
from core.limits import LimitError, check_steps
from core.sched.engine import as_run, schedule
from core.sched.policies import get_policy
from core.sched.schedule_record import Schedule

from . import synthetic
from .attention import DenseKVCache, DensePaddedAttention, PagedKVCache, ragged_attention, steady_sdpa
from .memory import check_cache, check_context, kv_bytes_per_token, pool_blocks
from .model import PRESETS, Transformer
from .plan import pass_plans
from .sampling import make_generator, sample_rows

BLOCK_SIZE = 16
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


@dataclass
class ReplayResult:
    """What a replay measured. Arrays are per step (length drain) or per request (the Run's order)."""

    run: Run
    device: str
    model: str
    step_ms: np.ndarray  # wall-clock per step, the whole iteration (admit, build, forward, sample, retire); 0 idle
    model_ms: np.ndarray  # of which the model's forward and output head, per step
    rows_per_step: np.ndarray  # sequences computed per step (static: padding rows included)
    tokens_per_step: np.ndarray  # useful tokens generated per step
    outputs: list[list[int]]  # generated token ids per request
    cancelled: bool = False
    preemptions: int = 0  # under a limited pool: requests thrown out and later recomputed
    recomputed_tokens: int = 0  # generated tokens whose KV a readmission recomputed
    decode_rows_per_step: np.ndarray | None = None  # rows decoding one token (static: padding rows included)
    prefill_per_step: np.ndarray | None = None  # prompt tokens computed (chunks and recomputes included)

    @property
    def step_start_ms(self) -> np.ndarray:
        """Return the wall-clock time at which each step t = 0..drain begins (drain + 1 values)."""
        return np.concatenate([[0.0], np.cumsum(self.step_ms)])

    @property
    def total_s(self) -> float:
        """Return the replay's wall-clock time in seconds."""
        return float(self.step_ms.sum()) / 1e3

    @property
    def throughput(self) -> float:
        """Return generated tokens per second of wall-clock time."""
        return float(self.tokens_per_step.sum()) / self.total_s if self.total_s else 0.0

    @property
    def overhead_share(self) -> float:
        """Return the share of the steps' time spent outside the model: batch building, sampling, bookkeeping."""
        total = float(self.step_ms.sum())
        return 1.0 - float(self.model_ms.sum()) / total if total else 0.0

    def latencies_ms(self) -> dict[str, np.ndarray]:
        """Return per-request time to first token, mean inter-token latency and end-to-end latency (ms)."""
        clock, run = self.step_start_ms, self.run
        emits = run.start  # the first token comes in the admission pass, unless its prompt was cut into chunks
        if isinstance(run.schedule, Schedule) and len(run.requests):
            emits = run.schedule.pass_start[run.schedule.first_pass].astype(np.int64)
        first = clock[emits + 1] - clock[run.arrival]
        e2e = clock[run.finish] - clock[run.arrival]
        tokens = np.array([r.output_tokens for r in run.requests], dtype=np.int64)  # a preempted run has gaps
        itl = np.where(tokens > 1, (clock[run.finish] - clock[emits + 1]) / np.maximum(tokens - 1, 1), np.nan)
        return {"ttft": first, "itl": itl, "e2e": e2e}


def prompt_ids(request: Request, vocab: int, seed: int) -> list[int]:
    """Return a request's synthetic prompt: its length from the trace, its tokens from (seed, request id)."""
    rng = np.random.default_rng([seed, zlib.crc32(request.id.encode())])  # the same prompt in any batch
    return rng.integers(0, vocab, size=max(1, request.prompt_tokens)).tolist()


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
        if token_budget is not None and not pol.has_token_budget:
            raise ValueError(f"token_budget applies to a policy with a token budget, not {policy}")
        if not memory.unlimited and (pol.forms_batches or memory.block_size != BLOCK_SIZE):
            raise ValueError(
                "the replay follows a limited pool under continuous or chunked batching on a paged cache of "
                f"{BLOCK_SIZE}-token blocks; got {policy}, {memory.block_size}-token blocks"
            )
        planned = pol.has_token_budget or pol.pauses_decoders or not memory.unlimited  # the plain loop cannot pause
        if planned:  # the core refuses a bad budget before the model is touched
            plan = schedule(
                list(requests), slots, policy, memory, batch_timeout=batch_timeout, token_budget=token_budget
            )
        self.check_fits(requests, slots, memory)
        run = as_run(plan) if planned else simulate(list(requests), slots, policy, batch_timeout)
        check_steps(run.drain, "the replay")
        seqs, generators = self.sequences(run.requests, sampling)
        if planned:
            step = lambda run, seqs, generators, result: self._plan_steps(plan, run, seqs, generators, result)  # noqa: E731
        else:
            step = self._static_steps if pol.forms_batches else self._continuous_steps
        drain = run.drain
        result = ReplayResult(
            run=run,
            device=str(self.device),
            model=self.model_name,
            step_ms=np.zeros(drain),
            model_ms=np.zeros(drain),
            rows_per_step=np.zeros(drain, dtype=np.int64),
            tokens_per_step=np.zeros(drain, dtype=np.int64),
            outputs=[[] for _ in seqs],
            decode_rows_per_step=np.zeros(drain, dtype=np.int64),
            prefill_per_step=np.zeros(drain, dtype=np.int64),
        )
        for t in step(run, seqs, generators, result):
            if on_step:
                on_step(t, drain)
            if cancel is not None and cancel.is_set() and t + 1 < drain:
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

    def _continuous_steps(self, run: Run, seqs: list[Seq], generators, result: ReplayResult):
        """Yield after each step: admit and retire between passes; one ragged, paged, unpadded batch per pass."""
        allocator, cache = self.paged_cache(seqs, run.slots)
        starting = _by_step(run.start)
        active: list[int] = []
        for t in range(run.drain):
            t0 = self.clock()
            for i in starting.get(t, []):
                allocator.allocate(seqs[i])
                active.append(i)
            if not active:
                yield t
                continue
            active.sort(key=lambda i: run.slot[i])
            running = [seqs[i] for i in active]
            decoding = sum(1 for s in running if s.num_computed_tokens)  # unpreempted: only a prefill starts at 0
            result.prefill_per_step[t] = sum(s.num_new_tokens for s in running) - decoding
            result.decode_rows_per_step[t] = decoding
            result.model_ms[t] = self.ragged_pass(cache, allocator, running, generators)
            result.rows_per_step[t] = result.tokens_per_step[t] = len(running)
            for i in [i for i in active if seqs[i].is_finished]:
                if run.finish[i] != t + 1:
                    raise RuntimeError(f"replay diverged from the schedule: {seqs[i].seq_id} at step {t}")
                allocator.free(seqs[i])  # its blocks are free for the next admission, nobody moves
                active.remove(i)
            result.step_ms[t] = (self.clock() - t0) * 1e3
            yield t

    def _plan_steps(self, plan: Schedule, run: Run, seqs: list[Seq], generators, result: ReplayResult):
        """Yield after each step of a core engine Schedule: its admissions, preemptions, decoders and prompt chunks.

        A limited pool is replayed on a cache of exactly its blocks. A preempted request's blocks are freed and its
        KV forgotten (num_computed_tokens = 0), so its readmission prefills its prompt and every token it had
        generated, in chunks when the policy is chunked. Any step where the model's state disagrees with the plan
        (a chunk not starting where the cache ends, a request finishing early or late, a contiguous pool holding
        other than the core's blocks) stops the replay: it follows the core or it fails.
        """
        memory = plan.memory
        if memory.unlimited:
            tokens = [s.num_prompt_tokens + s.max_new_tokens for s in seqs]
            blocks = _PagedBlocks(pool_blocks(tokens, run.slots, BLOCK_SIZE))  # as check_fits sized it
        elif memory.allocation == "contiguous":  # the core's reservation: the longest output unless one is given
            blocks = _ContiguousBlocks(
                memory, memory.reserve_tokens or max((s.max_new_tokens for s in seqs), default=1)
            )
        else:
            blocks = _PagedBlocks(memory.kv_blocks)
        cache = PagedKVCache(self.model.config, blocks.size, BLOCK_SIZE, self.device, self.dtype)
        passes = {pp.step: pp for pp in pass_plans(plan)}
        slot_of: dict[int, int] = {}  # running request -> its slot: rows go into the batch in slot order
        for t in range(run.drain):
            t0 = self.clock()
            pp = passes.get(t)
            if pp is None:  # nothing runs until the next arrival
                yield t
                continue
            for i in pp.preempt:
                blocks.free(seqs[i])
                seqs[i].num_computed_tokens = 0  # its KV is gone: recomputed when it returns
                del slot_of[i]
                result.preemptions += 1
            for i, slot in pp.admit:
                result.recomputed_tokens += seqs[i].num_generated
                blocks.admit(seqs[i])  # raises if the core admitted what this pool cannot hold
                slot_of[i] = slot
            if not memory.unlimited and not blocks.agrees(plan, pp.index):
                raise RuntimeError(
                    f"replay diverged from the schedule: {blocks.used} blocks held at step {t}, the core holds "
                    f"{int(plan.pass_blocks[pp.index])} (longest free run {int(plan.pass_largest_free[pp.index])})"
                )
            rows = []
            for i in pp.decode:
                if seqs[i].num_new_tokens != 1:
                    raise RuntimeError(f"replay diverged from the schedule: {seqs[i].seq_id} is not decoding at {t}")
                rows.append((seqs[i], seqs[i].num_tokens))
            for c in pp.chunks:
                s = seqs[c.request]
                if c.start != s.num_computed_tokens or c.emits != (c.end == s.num_tokens) or c.end > s.num_tokens:
                    raise RuntimeError(
                        f"replay diverged from the schedule: {s.seq_id}'s chunk {c.start}..{c.end} at step {t}, "
                        f"its cache holds {s.num_computed_tokens} of {s.num_tokens} tokens"
                    )
                rows.append((s, c.end))
            rows.sort(key=lambda row: slot_of[row[0].seq_index])
            result.model_ms[t], computed, sampled = self.chunk_pass(cache, blocks, rows, generators)
            result.rows_per_step[t] = len(rows)
            result.tokens_per_step[t] = sampled
            result.decode_rows_per_step[t] = len(pp.decode)
            result.prefill_per_step[t] = computed - len(pp.decode)
            for i in [i for i in slot_of if seqs[i].is_finished]:
                if run.finish[i] != t + 1:
                    raise RuntimeError(f"replay diverged from the schedule: {seqs[i].seq_id} at step {t}")
                blocks.free(seqs[i])  # its blocks are free for the next admission, nobody moves
                del slot_of[i]
            result.step_ms[t] = (self.clock() - t0) * 1e3
            yield t

    def chunk_pass(
        self, cache: PagedKVCache, blocks, rows: list[tuple[Seq, int]], generators
    ) -> tuple[float, int, int]:
        """Run one ragged pass computing each sequence's tokens up to its `end`; return ms, tokens in, tokens out.

        A row whose `end` is its last token samples the next one; a prompt chunk that stops short only writes its
        KV, which the next chunk reads from the cache. `blocks` is the pass's block manager (`_PagedBlocks` or
        `_ContiguousBlocks`).
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

    def _static_steps(self, run: Run, seqs: list[Seq], generators, result: ReplayResult):
        """Yield after each step: a padded rectangular batch; finished members are computed as padding to the end."""
        batches = _by_step(run.start)
        batch: StaticBatch | None = None
        for t in range(run.drain):
            t0 = self.clock()
            if t in batches:
                members = sorted(batches[t], key=lambda i: run.slot[i])
                batch = self.new_batch([seqs[i] for i in members], int(run.release[members[0]]) - t)
            if batch is not None:
                live = [t < run.finish[s.seq_index] for s in batch.rows]
                if batch.column == 0:  # the rectangle's prefill: every row's width, padding included
                    result.prefill_per_step[t] = len(batch.rows) * batch.prompt_width
                else:
                    result.decode_rows_per_step[t] = len(batch.rows)
                result.model_ms[t] = self.dense_pass(batch, live, generators)
                result.rows_per_step[t] = len(batch.rows)
                result.tokens_per_step[t] = sum(live)
                if t + 1 == run.release[batch.rows[0].seq_index]:
                    batch = None
                result.step_ms[t] = (self.clock() - t0) * 1e3
            yield t

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


def _by_step(steps: np.ndarray) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for i, s in enumerate(steps.tolist()):
        out.setdefault(s, []).append(i)
    return out


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


class _PagedBlocks:
    """A paged pool for the planned replay: blocks from anywhere, taken as a sequence grows."""

    def __init__(self, size: int):
        self.size = size
        self.allocator = BlockAllocator(size, BLOCK_SIZE)

    @property
    def used(self) -> int:
        """Return the blocks held."""
        return self.size - self.allocator.num_free_blocks

    def agrees(self, plan: Schedule, index: int) -> bool:
        """Return whether this pool holds no more than the core's during pass `index` (it takes blocks lazily)."""
        return self.used <= plan.pass_blocks[index]

    def admit(self, seq: Seq) -> None:
        """Give a (re)admitted sequence the blocks for its tokens."""
        self.allocator.allocate(seq)

    def append(self, seq: Seq) -> None:
        """Take a block if the sequence's tokens outgrew its last one."""
        self.allocator.append(seq)

    def free(self, seq: Seq) -> None:
        """Return the sequence's blocks."""
        self.allocator.free(seq)


class _ContiguousBlocks:
    """A contiguous pool for the planned replay: the core's own `KVPool`, so each reservation is the core's run.

    Admissions and releases come in the core's order (releases, then admissions in slot order, at each boundary),
    so first fit puts every reservation on the same consecutive blocks (checked each pass by the blocks held and
    the longest free run); the block table is that run.
    """

    def __init__(self, memory: MemoryConfig, reserve: int):
        self.size = memory.kv_blocks
        self.pool = KVPool(memory)
        self.reserve = reserve

    @property
    def used(self) -> int:
        """Return the blocks reserved."""
        return self.pool.used

    def agrees(self, plan: Schedule, index: int) -> bool:
        """Return whether this pool reserves the core's blocks during pass `index`, holes where the core has them."""
        return self.used == plan.pass_blocks[index] and self.pool.largest_free_run() == plan.pass_largest_free[index]

    def admit(self, seq: Seq) -> None:
        """Reserve one run for the prompt and the reservation, first fit, and point the block table at it."""
        i = seq.seq_index
        self.pool.allocate(i, seq.num_prompt_tokens + self.reserve)
        start = self.pool.run_start[i]
        seq.block_table = list(range(start, start + self.pool.held[i]))

    def append(self, seq: Seq) -> None:
        """Check that the sequence still fits its run (a reservation never grows)."""
        if -(-seq.num_tokens // BLOCK_SIZE) > len(seq.block_table):
            raise RuntimeError(f"{seq.seq_id} outgrew its contiguous reservation of {len(seq.block_table)} blocks")

    def free(self, seq: Seq) -> None:
        """Return the run: a hole until first fit hands it out again."""
        self.pool.release(seq.seq_index)
        seq.block_table = []
