"""The replay's step loops (static, continuous, planned): each step the core scheduled, run on the engine and timed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core import Run
from core.batch.kv_blocks import BlockAllocator
from core.batch.sequence import Sequence as Seq
from core.kv.memory import KVPool, MemoryConfig
from core.sched.schedule_record import Schedule

from .attention import PagedKVCache
from .memory import BLOCK_SIZE, pool_blocks
from .plan import PassPlan, pass_plans

# replay.engine.Engine, handed in: the engine imports this module, so this one never imports the engine.
Engine = object


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

    @classmethod
    def empty(cls, run: Run, device: str, model: str) -> ReplayResult:
        """Return a result for this Run with every step's figures at zero and no request's output yet."""
        drain = run.drain
        return cls(
            run=run,
            device=device,
            model=model,
            step_ms=np.zeros(drain),
            model_ms=np.zeros(drain),
            rows_per_step=np.zeros(drain, dtype=np.int64),
            tokens_per_step=np.zeros(drain, dtype=np.int64),
            outputs=[[] for _ in run.requests],
            decode_rows_per_step=np.zeros(drain, dtype=np.int64),
            prefill_per_step=np.zeros(drain, dtype=np.int64),
        )

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


def replay_continuous(engine: Engine, run: Run, seqs: list[Seq], generators, result: ReplayResult):
    """Yield after each step: admit and retire between passes; one ragged, paged, unpadded batch per pass."""
    allocator, cache = engine.paged_cache(seqs, run.slots)
    starting = _by_step(run.start)
    active: list[int] = []
    for t in range(run.drain):
        t0 = engine.clock()
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
        result.model_ms[t] = engine.ragged_pass(cache, allocator, running, generators)
        result.rows_per_step[t] = result.tokens_per_step[t] = len(running)
        for i in [i for i in active if seqs[i].is_finished]:
            if run.finish[i] != t + 1:
                raise RuntimeError(f"replay diverged from the schedule: {seqs[i].seq_id} at step {t}")
            allocator.free(seqs[i])  # its blocks are free for the next admission, nobody moves
            active.remove(i)
        result.step_ms[t] = (engine.clock() - t0) * 1e3
        yield t


def plan_steps(engine: Engine, plan: Schedule, run: Run, seqs: list[Seq], generators, result: ReplayResult):
    """Yield after each step of a core engine Schedule: its admissions, preemptions, decoders and prompt chunks.

    A limited pool is replayed on a cache of exactly its blocks. A preempted request's blocks are freed and its
    KV forgotten (num_computed_tokens = 0), so its readmission prefills its prompt and every token it had
    generated, in chunks when the policy is chunked. Any step where the model's state disagrees with the plan
    (a chunk not starting where the cache ends, a request finishing early or late, a contiguous pool holding
    other than the core's blocks) stops the replay: it follows the core or it fails.
    """
    blocks = _plan_blocks(plan.memory, run, seqs)
    cache = PagedKVCache(engine.model.config, blocks.size, BLOCK_SIZE, engine.device, engine.dtype)
    passes = {pp.step: pp for pp in pass_plans(plan)}
    slot_of: dict[int, int] = {}  # running request -> its slot: rows go into the batch in slot order
    for t in range(run.drain):
        t0 = engine.clock()
        pp = passes.get(t)
        if pp is None:  # nothing runs until the next arrival
            yield t
            continue
        _boundary(plan, pp, t, seqs, blocks, slot_of, result)
        rows = _pass_rows(pp, t, seqs, slot_of)
        result.model_ms[t], computed, sampled = engine.chunk_pass(cache, blocks, rows, generators)
        result.rows_per_step[t] = len(rows)
        result.tokens_per_step[t] = sampled
        result.decode_rows_per_step[t] = len(pp.decode)
        result.prefill_per_step[t] = computed - len(pp.decode)
        for i in [i for i in slot_of if seqs[i].is_finished]:
            if run.finish[i] != t + 1:
                raise RuntimeError(f"replay diverged from the schedule: {seqs[i].seq_id} at step {t}")
            blocks.free(seqs[i])  # its blocks are free for the next admission, nobody moves
            del slot_of[i]
        result.step_ms[t] = (engine.clock() - t0) * 1e3
        yield t


def _plan_blocks(memory: MemoryConfig, run: Run, seqs: list[Seq]) -> _PagedBlocks | _ContiguousBlocks:
    """Return the block manager the planned replay runs on, with as many blocks as its cache will have."""
    if memory.unlimited:
        tokens = [s.num_prompt_tokens + s.max_new_tokens for s in seqs]
        return _PagedBlocks(pool_blocks(tokens, run.slots, BLOCK_SIZE))  # as check_fits sized it
    if memory.allocation == "contiguous":  # the core's reservation: the longest output unless one is given
        return _ContiguousBlocks(memory, memory.reserve_tokens or max((s.max_new_tokens for s in seqs), default=1))
    return _PagedBlocks(memory.kv_blocks)


def _boundary(plan: Schedule, pp: PassPlan, t: int, seqs: list[Seq], blocks, slot_of: dict[int, int], result):
    """Preempt and (re)admit at the boundary before pass `pp` as the core did; fail if the pools then disagree."""
    for i in pp.preempt:
        blocks.free(seqs[i])
        seqs[i].num_computed_tokens = 0  # its KV is gone: recomputed when it returns
        del slot_of[i]
        result.preemptions += 1
    for i, slot in pp.admit:
        result.recomputed_tokens += seqs[i].num_generated
        blocks.take(seqs[i])  # raises if the core admitted what this pool cannot hold
        slot_of[i] = slot
    if not plan.memory.unlimited and not blocks.agrees(plan, pp.index):
        raise RuntimeError(
            f"replay diverged from the schedule: {blocks.used} blocks held at step {t}, the core holds "
            f"{int(plan.pass_blocks[pp.index])} (longest free run {int(plan.pass_largest_free[pp.index])})"
        )


def _pass_rows(pp: PassPlan, t: int, seqs: list[Seq], slot_of: dict[int, int]) -> list[tuple[Seq, int]]:
    """Return the pass's rows (a sequence, where its computing stops) in slot order, checked against its cache."""
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
    return rows


def replay_static(engine: Engine, run: Run, seqs: list[Seq], generators, result: ReplayResult):
    """Yield after each step: a padded rectangular batch; finished members are computed as padding to the end."""
    batches = _by_step(run.start)
    batch = None  # a StaticBatch from engine.new_batch (this module never imports the engine)
    for t in range(run.drain):
        t0 = engine.clock()
        if t in batches:
            members = sorted(batches[t], key=lambda i: run.slot[i])
            batch = engine.new_batch([seqs[i] for i in members], int(run.release[members[0]]) - t)
        if batch is not None:
            live = [t < run.finish[s.seq_index] for s in batch.rows]
            if batch.column == 0:  # the rectangle's prefill: every row's width, padding included
                result.prefill_per_step[t] = len(batch.rows) * batch.prompt_width
            else:
                result.decode_rows_per_step[t] = len(batch.rows)
            result.model_ms[t] = engine.dense_pass(batch, live, generators)
            result.rows_per_step[t] = len(batch.rows)
            result.tokens_per_step[t] = sum(live)
            if t + 1 == run.release[batch.rows[0].seq_index]:
                batch = None
            result.step_ms[t] = (engine.clock() - t0) * 1e3
        yield t


def _by_step(steps: np.ndarray) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for i, s in enumerate(steps.tolist()):
        out.setdefault(s, []).append(i)
    return out


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

    def take(self, seq: Seq) -> None:
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

    def take(self, seq: Seq) -> None:
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
