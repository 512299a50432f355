"""The batch an engine runs at one step of a Run: continuous's ragged, paged batch, or static's padded rectangle."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from core.batch.kv_blocks import BlockAllocator
from core.batch.ragged import RaggedBatch, build_batch
from core.batch.sequence import Sequence
from core.sched.run import Run

# Small, so that a learner sees blocks fill and a request spill into a new one while playback runs; engines use 16.
BLOCK_SIZE = 8
VOCAB = 32_000


def prompt_length(prompt_tokens: int) -> int:
    """Return the tokens a request's first step computes: its prompt, or one start token when it has none."""
    return max(1, prompt_tokens)


def token_id(request: int, position: int) -> int:
    """Return a made-up but fixed token id for a request's token at a position (the simulator has no text)."""
    return (request * 7919 + position * 104_729 + 17) % VOCAB


@dataclass(frozen=True)
class ContinuousStep:
    """The ragged batch of one continuous step: who runs (in slot order), who is in prefill, and the KV block pool."""

    step: int
    requests: tuple[int, ...]  # indices into run.requests, in slot order: batch row i is requests[i]
    prefill: tuple[bool, ...]  # row i computes its whole prompt this step (it was admitted now)
    batch: RaggedBatch
    block_owner: np.ndarray  # (num_blocks,) the request index owning each block of the pool, -1 when free


@dataclass(frozen=True)
class StaticStep:
    """The padded rectangle of one static step: every member of the batch is a row, finished ones as padding."""

    step: int
    requests: tuple[int, ...]  # the batch's members in slot order (empty: no batch is running)
    live: tuple[bool, ...]  # the member still generates (False: a padding row, computed and thrown away)
    width: int  # tokens per row this step: the longest prompt at the batch's first step, else 1
    new_tokens: tuple[int, ...]  # real (not left-padding) tokens in each row

    @property
    def computed_tokens(self) -> int:
        """Return the cells of the rectangle: rows times width."""
        return len(self.requests) * self.width

    @property
    def useful_tokens(self) -> int:
        """Return the cells that do real work: live rows' real tokens."""
        return sum(n for n, alive in zip(self.new_tokens, self.live) if alive)


def pool_size(run: Run, block_size: int = BLOCK_SIZE) -> int:
    """Return a KV pool that holds any `slots` requests at their longest: slots x the largest request's blocks."""
    need = max((-(-(prompt_length(r.prompt_tokens) + r.output_tokens) // block_size) for r in run.requests), default=1)
    return min(run.slots, max(len(run.requests), 1)) * need


class ContinuousBatches:
    """Drive `BlockAllocator` and `build_batch` through a continuous Run, step by step, as the replay engine does.

    Moving forward costs one step's work per step, so playback is cheap; moving back replays from step 0.
    """

    def __init__(self, run: Run, block_size: int = BLOCK_SIZE):
        if run.rules.forms_batches or run.cells is not None:
            raise ValueError(f"ContinuousBatches needs a run admitted between passes, one stay each: {run.policy!r}")
        self.run, self.block_size = run, block_size
        self._starting: dict[int, list[int]] = defaultdict(list)
        for i, t in enumerate(run.start.tolist()):
            self._starting[t].append(i)
        self._reset()

    def _reset(self) -> None:
        self.allocator = BlockAllocator(pool_size(self.run, self.block_size), self.block_size)
        self._seqs: dict[int, Sequence] = {}
        self._active: list[int] = []
        self._step = -1  # the step whose batch is built and not yet run
        self._current: ContinuousStep | None = None

    def at(self, step: int) -> ContinuousStep:
        """Return the batch built for `step`: admissions done, blocks grown, the forward pass not yet run."""
        if step < 0:
            raise ValueError(f"step must be >= 0, got {step}")
        if step < self._step:
            self._reset()
        while self._step < step:
            if self._step >= 0:
                self._run_pass(self._step)
            self._step += 1
            self._admit(self._step)
            self._current = None
        if self._current is None:
            self._current = self._snapshot(step)
        return self._current

    def _admit(self, t: int) -> None:
        run = self.run
        for i in self._starting.get(t, []):
            p = prompt_length(run.requests[i].prompt_tokens)
            seq = Sequence(run.requests[i].id, i, [token_id(i, k) for k in range(p)], p, run.requests[i].output_tokens)
            self.allocator.allocate(seq)
            self._seqs[i] = seq
            self._active.append(i)
        self._active.sort(key=lambda i: run.slot[i])
        for i in self._active:
            self.allocator.append(self._seqs[i])  # a decode step may spill into a fresh block

    def _snapshot(self, t: int) -> ContinuousStep:
        return ContinuousStep(
            step=t,
            requests=tuple(self._active),
            prefill=tuple(int(self.run.start[i]) == t for i in self._active),
            batch=build_batch([self._seqs[i] for i in self._active], self.block_size),
            block_owner=self.allocator.owner.copy(),
        )

    def _run_pass(self, t: int) -> None:
        """Run step t's pass in bookkeeping only: every row's tokens are computed and one token is appended."""
        for i in self._active:
            seq = self._seqs[i]
            seq.num_computed_tokens = seq.num_tokens
            seq.token_ids.append(token_id(i, seq.num_tokens))
        for i in [i for i in self._active if int(self.run.finish[i]) == t + 1]:
            self.allocator.free(self._seqs.pop(i))  # its blocks go back to the pool; nobody else's move
            self._active.remove(i)


def static_step(run: Run, step: int) -> StaticStep:
    """Return the padded rectangle static batching computes at `step` (empty when no batch is running)."""
    if not run.rules.forms_batches:
        raise ValueError(f"static_step needs a run of batches, got {run.policy!r}")
    members = np.flatnonzero((run.start <= step) & (step < run.release))
    members = members[np.argsort(run.slot[members], kind="stable")].tolist()
    if not members:
        return StaticStep(step, (), (), 0, ())
    first = int(run.start[members[0]]) == step
    prompts = [prompt_length(run.requests[i].prompt_tokens) for i in members]
    return StaticStep(
        step=step,
        requests=tuple(members),
        live=tuple(step < int(run.finish[i]) for i in members),
        width=max(prompts) if first else 1,
        new_tokens=tuple(prompts) if first else (1,) * len(members),
    )
