"""The schedulers' lineup on the page: its settings, its runs (shared by every session) and the renderer's JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import numpy as np

from app.page.runs import MIN_LABEL_CELLS, arrival_step_ms, policy_fields
from app.schedulers.words import column_label
from app.server.byte_cache import byte_cache
from app.simulator.state import requests_of
from core.clock.hardware import DEFAULT_ACCELERATOR, DEFAULT_MODEL_SHAPE, cost_model
from core.kv.memory import MemoryConfig
from core.limits import LimitError
from core.measure.lineup import Entry, Line, entry_budget, lineup
from core.states import GENERATING, PAUSED, PREFILL
from core.workload.request import Request
from core.workload.traffic import TrafficConfig, generate

BLOCK_SIZE = 16  # tokens a KV block holds (vLLM's default)
# The tab's traffic: chat-like, heavy-tailed answers and prompts, Poisson arrivals; one arrival step is 1 ms.
MEAN_OUTPUT, MAX_OUTPUT, MEAN_PROMPT = 128, 1024, 512
MIN_BUDGET, MAX_BUDGET = 64, 8192  # the tab's token budget, besides 0 (each engine's own default)


@dataclass(frozen=True)
class LineupKey:
    """Everything a lineup depends on; equal keys give equal runs, so every session shares them."""

    entries: tuple[Entry, ...]
    seed: int = 4
    requests: int = 64
    rate_per_s: float = 40.0
    priority_share: int = 0  # percent in the high class (priority 0)
    slots: int = 8
    kv_blocks: int = 0  # 0: unlimited
    # vLLM's max_num_batched_tokens and SGLang's chunked_prefill_size; 0: each engine's own default on `accelerator`
    # (core.measure.lineup.entry_budget), as `batchviz compare` runs without --token-budget.
    token_budget: int = 0
    ttft_ms: float = 500.0
    itl_ms: float = 50.0
    accelerator: str = DEFAULT_ACCELERATOR
    model: str = DEFAULT_MODEL_SHAPE
    # The simulator's traffic instead of the chat traffic (the chapter's, generated, or an upload): its first
    # `requests`, arrivals in steps turned to ms as the clock view turns them; None: the chat traffic.
    page_traffic: TrafficConfig | tuple[Request, ...] | None = None

    def arrivals(self) -> list[Request]:
        """Return the requests the lineup runs, arrivals in ms."""
        if self.page_traffic is None:
            return generate(self.traffic())
        step = arrival_step_ms(self.accelerator, self.model)
        return [replace(r, arrival=round(r.arrival * step)) for r in requests_of(self.page_traffic)[: self.requests]]

    def traffic(self) -> TrafficConfig:
        """Return the generator's settings: arrivals in ms (a Poisson rate per ms), chat-like lengths."""
        return TrafficConfig(
            seed=self.seed,
            requests=self.requests,
            arrivals="poisson",
            rate=self.rate_per_s / 1000.0,
            lengths="heavy",
            mean_tokens=MEAN_OUTPUT,
            max_tokens=MAX_OUTPUT,
            prompt_lengths="heavy",
            mean_prompt_tokens=MEAN_PROMPT,
            high_priority_share=self.priority_share / 100,
        )

    def memory(self) -> MemoryConfig:
        """Return the KV pool: unlimited, or `kv_blocks` blocks of 16 tokens."""
        return MemoryConfig(kv_blocks=self.kv_blocks, block_size=BLOCK_SIZE) if self.kv_blocks else MemoryConfig()


def budget_of(key: LineupKey) -> tuple[dict[str, int], bool]:
    """Return each budgeted entry's tokens a pass (by its link text) and whether the pool is unlimited.

    Each entry's is what it runs at (core.measure.lineup's `entry_budget`): its own setting, the tab's budget, or its
    engine's default on the accelerator.
    """
    requests = key.arrivals()
    budgets = {}
    for entry in key.entries:
        budget = entry_budget(entry.policy(), requests, key.slots, key.token_budget or None, key.accelerator)
        if budget is not None:
            budgets[entry.text()] = budget
    return budgets, not key.kv_blocks


@byte_cache(share=0.05)  # a lineup of 64 requests holds about 0.5 MB, 256 requests on 64 slots about 1.3 MB
def shared_lineup(key: LineupKey) -> tuple[Line, ...]:
    """Return every entry's run and figures for `key`; computed once per process for all sessions."""
    if 0 < key.token_budget < MIN_BUDGET:
        raise LimitError(
            f"the token budget is 0 (each engine's default) or at least {MIN_BUDGET}, got {key.token_budget}"
        )
    requests = key.arrivals()
    cost = cost_model(key.accelerator, key.model)
    budget = key.token_budget or None  # None: each engine's default on the accelerator
    for entry in key.entries:
        pol = entry.policy()
        if pol.has_token_budget and entry_budget(pol, requests, key.slots, budget, key.accelerator) is None:
            raise LimitError(
                f"{pol.label} has no engine's default token budget: set the token budget ({MIN_BUDGET:,} to "
                f"{MAX_BUDGET:,}), as the command line needs --token-budget for it"
            )
    return tuple(
        lineup(requests, key.slots, key.entries, cost, key.ttft_ms, key.itl_ms, key.memory(), budget, key.accelerator)
    )


def run_json(line: Line, allocation: str) -> dict:
    """Return one entry's run as the renderer draws it on a clock: per-request times, and its cells in ms."""
    run = line.run
    out = {
        **policy_fields(line.run.rules, allocation),
        "title": column_label(line),  # an engine without a request cap says so: it ran every request that fit
        "slots": run.slots,  # an engine without a request cap: the rows it used (core.measure.lineup.rows_used)
        "slot": run.slot.tolist(),
        "start_ms": run.start_ms.tolist(),
        "finish_ms": run.finish_ms.tolist(),
        "release_ms": run.release_ms.tolist(),
    }
    if run.schedule is not None and len(run.schedule.cells):
        starts, ends = run.pass_start_ms, run.pass_end_ms
        out["cells_ms"] = [
            x
            for i, slot, lo, hi, state in drawn_cells(run.schedule.cells).tolist()
            for x in (i, slot, round(float(starts[lo]), 3), round(float(ends[hi - 1]), 3), state)
        ]
    return out


def drawn_cells(cells: np.ndarray) -> np.ndarray:
    """Return the cells a clock draws: generating bars with the paused slivers on top.

    A request's generating, prefill and paused cells in one slot, back to back, merge into one generating bar (a pass
    is a sliver on a clock, and each cell's white edge would hide it); its paused cells follow, drawn over the bar;
    recompute and padding cells stay as they are.
    """
    order = np.lexsort((cells[:, 2], cells[:, 1], cells[:, 0]))
    out, bar = [], None
    for i, slot, lo, hi, state in cells[order].tolist():
        if state in (GENERATING, PREFILL, PAUSED):
            if bar is not None and bar[0] == i and bar[1] == slot and bar[3] == lo:
                bar[3] = hi
            else:
                if bar is not None:
                    out.append(bar)
                bar = [i, slot, lo, hi, GENERATING]
            if state == PAUSED:
                out.append([i, slot, lo, hi, PAUSED])
            continue
        if bar is not None:
            out.append(bar)
            bar = None
        out.append([i, slot, lo, hi, state])
    if bar is not None:
        out.append(bar)
    drawn = np.array(out, dtype=np.int64).reshape(-1, 5)
    return drawn[np.argsort(drawn[:, 4] == PAUSED, kind="stable")]  # bars first, the paused slivers over them


@byte_cache(share=0.02)
def lineup_json(key: LineupKey) -> str:
    """Return the lineup's view as JSON: ids, every entry's run on one time axis (the latest drain)."""
    lines = shared_lineup(key)
    requests = lines[0].run.requests
    allocation = key.memory().allocation
    view = {
        "clock": "ms",
        "window": 0,
        "min_label_cells": MIN_LABEL_CELLS,
        "ids": [r.id for r in requests],
        "end_ms": max(float(line.run.drain_ms) for line in lines),
        "order": [line.entry.text() for line in lines],
        "runs": {line.entry.text(): run_json(line, allocation) for line in lines},
    }
    return json.dumps(view, separators=(",", ":"))
