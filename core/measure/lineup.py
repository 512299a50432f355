"""Engines' schedulers side by side: presets (with their own settings) on one traffic, pool and clock, judged alike.

An entry is a registered policy's name with some of its engine settings, written `tgi` or
`tgi:waiting_served_ratio=1.2` (several settings joined by `;`). A lineup runs every entry on the same requests,
slots, KV pool, token budget and roofline, and reads each run's serving figures (`measure.serving`) against the same
TTFT and ITL targets; `best` names the entries that lead each figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.clock.cost import StepCost
from core.kv.memory import UNLIMITED, MemoryConfig
from core.limits import LimitError, plain_float, plain_int
from core.measure.serving import Serving, serving_metrics
from core.sched.policies import REGISTRY, Policy, get_policy
from core.sched.timed import TimedRun, simulate_timed
from core.workload.request import Request

MIN_ENTRIES, MAX_ENTRIES = 2, 4
# Each figure's better direction: lower latencies and waits; higher rates, attainment and fairness.
LOWER = ("ttft_p50", "ttft_p99", "itl_p50", "itl_p99", "latency_p50", "latency_p99", "wait_mean", "preemptions")
HIGHER = ("throughput", "met", "slo_attainment", "goodput", "fairness")


@dataclass(frozen=True)
class Entry:
    """A registered policy with some of its engine settings changed (by the engine's own names)."""

    name: str
    knobs: tuple[tuple[str, object], ...] = ()

    def policy(self) -> Policy:
        """Return the policy object: the registered one, with these settings."""
        base = get_policy(self.name)
        return base.with_knobs(**dict(self.knobs)) if self.knobs else base

    def text(self) -> str:
        """Return the entry as written in a link: `tgi:waiting_served_ratio=1.2`."""
        settings = ";".join(f"{k}={_shown(v)}" for k, v in self.knobs)
        return f"{self.name}:{settings}" if settings else self.name

    def label(self) -> str:
        """Return the entry in words: the policy's label, then its changed settings."""
        base = get_policy(self.name).label
        settings = ", ".join(f"{k} {_shown(v)}" for k, v in self.knobs)
        return f"{base} ({settings})" if settings else base


def _shown(value) -> str:
    """Return a setting's value as a link and a label write it: 1.2, 20, fcfs."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def parse_entry(text: str) -> Entry:
    """Return the entry a link writes (`name` or `name:knob=value;knob=value`), or refuse it naming what is allowed."""
    name, _, rest = text.strip().partition(":")
    pol = get_policy(name)  # refuses an unknown name with the registered ones
    knobs = []
    for part in filter(None, rest.split(";")):
        key, eq, raw = part.partition("=")
        key = key.strip()
        if not eq or key not in pol.knobs:
            have = ", ".join(pol.knobs) or "none"
            raise ValueError(f"{name} has no setting {key!r} (its settings: {have})")
        default = getattr(pol, key)
        if isinstance(default, str):
            value: object = raw.strip()
        elif isinstance(default, int):
            value = plain_int(raw.strip())
        else:
            value = plain_float(raw.strip())
        if value is None:
            raise ValueError(f"{name}: {key}={raw[:40]!r} is not a number")
        knobs.append((key, value))
    entry = Entry(name, tuple(knobs))
    entry.policy()  # refuses a value out of the engine's range, in its own words
    return entry


def parse_entries(text: str) -> tuple[Entry, ...]:
    """Return 2-4 distinct entries from a comma-separated list, or refuse the list naming the count allowed."""
    entries = tuple(parse_entry(part) for part in text.split(",") if part.strip())
    if not MIN_ENTRIES <= len(entries) <= MAX_ENTRIES:
        raise ValueError(f"pick {MIN_ENTRIES} to {MAX_ENTRIES} schedulers, got {len(entries)}")
    if len(set(entries)) != len(entries):
        raise ValueError("each scheduler once: the list repeats one")
    return entries


@dataclass(frozen=True)
class Line:
    """One entry's run and its serving figures."""

    entry: Entry
    run: TimedRun
    figures: Serving


def lineup(
    requests: Sequence[Request],
    slots: int,
    entries: Sequence[Entry],
    cost: StepCost,
    ttft_ms: float,
    itl_ms: float,
    memory: MemoryConfig = UNLIMITED,
    token_budget: int = 512,
) -> list[Line]:
    """Return each entry's run on the same requests (arrivals in ms), slots, pool and clock, with its figures.

    `token_budget` is every budgeted preset's tokens a pass (vLLM's max_num_batched_tokens, SGLang's
    chunked_prefill_size); the others take none.
    """
    if not ttft_ms > 0 or not itl_ms > 0:
        raise LimitError(f"the targets must be positive, got TTFT {ttft_ms!r} and ITL {itl_ms!r} ms")
    lines = []
    for entry in entries:
        pol = entry.policy()
        budget = max(token_budget, slots) if pol.has_token_budget else None
        run = simulate_timed(requests, slots, pol, cost, memory=memory, token_budget=budget)
        lines.append(Line(entry, run, serving_metrics(run, cost, ttft_ms, itl_ms)))
    return lines


def best(lines: Sequence[Line], field: str) -> set[int]:
    """Return the indices of the lines that lead `field` (ties all lead); none where every line is equal."""
    values = np.array([getattr(line.figures, field) for line in lines], dtype=float)
    if len(values) == 0 or np.all(values == values[0]):
        return set()
    target = values.min() if field in LOWER else values.max()
    return {i for i, v in enumerate(values) if v == target}


def registered_presets() -> tuple[str, ...]:
    """Return the policies a lineup offers: every registered one, the engines' presets first."""
    names = list(REGISTRY)
    engines = [n for n in names if REGISTRY[n].engine]
    return tuple(engines + [n for n in names if n not in engines])
