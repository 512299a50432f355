"""Engines' schedulers side by side: presets (with their own settings) on one traffic, pool and clock, judged alike.

An entry is a registered policy's name with some of its engine settings, written `tgi` or
`tgi:prefill_chunking=0;waiting_served_ratio=1.2` (settings joined by `;`). A lineup runs every entry on the same
requests, slots, KV pool, token budget and roofline, and reads each run's serving figures (`measure.serving`) against
the same TTFT and ITL (mean TPOT) targets; `best` names the entries leading each figure (ties within THRESHOLD).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from core.clock.cost import StepCost
from core.clock.hardware import DEFAULT_ACCELERATOR
from core.kv.memory import UNLIMITED, MemoryConfig
from core.limits import MAX_SLOTS, LimitError, show_text
from core.measure.serving import Serving, serving_metrics
from core.sched.engine import entry_budget
from core.sched.policies import REGISTRY, Policy, get_policy
from core.sched.timed import TimedRun, simulate_timed
from core.workload.request import Request

MIN_ENTRIES, MAX_ENTRIES = 2, 4
# Each figure's better direction: lower latencies and waits; higher rates, attainment and fairness.
TIMES = (
    "ttft_p50", "ttft_p99", "itl_p50", "itl_p99", "tpot_p50", "tpot_p99", "stall_p99", "stall_max", "latency_p50",
    "latency_p99", "wait_mean",
)  # fmt: skip
LOWER = (*TIMES, "preemptions")
HIGHER = ("throughput", "met", "slo_attainment", "goodput", "fairness")


class Threshold(NamedTuple):
    """The least difference claimed: a share of the larger value, and for a time an amount in ms too."""

    share: float
    ms: float


# Two figures differ only by at least 5% of the larger and, for times, at least 0.5 ms (a per-token figure is a few
# ms: 1 ms would hide an 8% TPOT difference): closer, they tie (both starred)
# and a sentence calls them alike rather than one lower.
THRESHOLD = Threshold(share=0.05, ms=0.5)


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
        """Return the entry as written in a link: `tgi:prefill_chunking=0;waiting_served_ratio=1.2`."""
        settings = ";".join(f"{k}={_shown(v)}" for k, v in self.knobs)
        return f"{self.name}:{settings}" if settings else self.name

    def settings(self) -> tuple:
        """Return what the entry runs: its policy's name and every one of its settings' values, defaults included."""
        pol = self.policy()
        return self.name, tuple(getattr(pol, key) for key in pol.knobs)

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
    if name not in REGISTRY:  # the core's own refusal would repeat a name of any length
        raise ValueError(f"policy must be one of {', '.join(REGISTRY)}, got {show_text(name)}")
    pol, knobs = get_policy(name), {}
    for part in filter(None, rest.split(";")):
        key, value = _knob(name, pol, part)
        if key in knobs:  # run as the last and labelled with both, it would show a setting that did not run
            raise ValueError(f"{name}: {key} is given twice; give each setting once")
        knobs[key] = value
    entry = Entry(name, tuple(knobs.items()))
    _check_range(entry)
    return entry


def _knob(name: str, pol: Policy, part: str) -> tuple[str, object]:
    """Return one `knob=value` of an entry as the setting and its value, parsed as the setting declares, or refuse."""
    key, eq, raw = part.partition("=")
    key = key.strip()
    if not eq or key not in pol.knobs:
        have = ", ".join(pol.knobs) or "none"
        raise ValueError(f"{name} has no setting {show_text(key)} (its settings: {have})")
    setting = next(s for s in pol.settings if s.name == key)
    try:
        return key, setting.parse(raw)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def _check_range(entry: Entry) -> None:
    """Refuse a value out of the engine's range, in its own words, a long choice in them cut short."""
    try:
        entry.policy()
    except ValueError as exc:
        text = str(exc)
        for _key, value in entry.knobs:
            if isinstance(value, str):  # the engine repeats a refused choice whole
                text = text.replace(repr(value), show_text(value))
        raise type(exc)(text) from None


def parse_entries(text: str) -> tuple[Entry, ...]:
    """Return 2-4 distinct entries from a comma-separated list, or refuse the list naming the count allowed."""
    parts = [part for part in text.split(",") if part.strip()]
    if not MIN_ENTRIES <= len(parts) <= MAX_ENTRIES:  # counted before parsing: a long list is refused at once
        raise ValueError(f"pick {MIN_ENTRIES} to {MAX_ENTRIES} schedulers, got {len(parts)}")
    entries = tuple(parse_entry(part) for part in parts)
    refuse_repeats(entries)
    return entries


def refuse_repeats(entries: Sequence[Entry]) -> None:
    """Refuse an entry that runs as an earlier one: the same policy with the same settings, defaults included."""
    seen: dict[tuple, Entry] = {}
    for entry in entries:
        first = seen.setdefault(entry.settings(), entry)
        if first is not entry:
            shown, same = show_text(entry.text()), show_text(first.text())
            how = "is listed twice" if shown == same else f"runs as {same} (the same settings)"
            raise ValueError(f"each scheduler once: {shown} {how}")


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
    token_budget: int | None = None,
    accelerator: str = DEFAULT_ACCELERATOR,
) -> list[Line]:
    """Return each entry's run on the same requests (arrivals in ms), slots, pool and clock, with its figures.

    Each preset runs at its engine's defaults (`entry_budget`, `entry_slots`): `token_budget` (None: each engine's
    own default on `accelerator`) is the tokens a pass of every budgeted preset whose entry does not set its own.
    """
    if not ttft_ms > 0 or not itl_ms > 0:
        raise LimitError(f"the targets must be positive, got TTFT {ttft_ms!r} and ITL {itl_ms!r} ms")
    lines = []
    for entry in entries:
        pol = entry.policy()
        budget = entry_budget(pol, requests, slots, token_budget, accelerator)
        run = rows_used(
            simulate_timed(
                requests, entry_slots(pol, slots, len(requests), budget), pol, cost, memory=memory, token_budget=budget
            )
        )
        lines.append(Line(entry, run, serving_metrics(run, cost, ttft_ms, itl_ms)))
    return lines


def rows_used(run):
    """Return `run` on the slots it used where its policy has no request cap (TGI), else as it is.

    It ran with a slot for every request; the lowest free slot is taken each time, so the rows used are the most it
    ran at once, and the same schedule on that many slots is this one: its occupancy is then read on them.
    """
    if run.rules.has_request_cap or not len(run.slot):
        return run
    return dataclasses.replace(run, slots=int(run.slot.max()) + 1)


def entry_slots(pol: Policy, slots: int, requests: int, budget: int | None) -> int:
    """Return the most requests `pol` runs at once: the slots, or all (an engine without a request cap, TGI)."""
    cap = min(pol.request_cap(slots, requests), MAX_SLOTS)
    return max(1, min(cap, budget) if budget is not None else cap)


def differs(a: float, b: float, time: bool = False) -> bool:
    """Return whether a and b differ past THRESHOLD: by its share of the larger, and for a time by its ms too."""
    gap = abs(a - b)
    return gap > 0 and gap >= THRESHOLD.share * max(abs(a), abs(b)) and (not time or gap >= THRESHOLD.ms)


def best(lines: Sequence[Line], field: str) -> set[int]:
    """Return the lines that lead `field`: the best and all within THRESHOLD of it; none where every line is."""
    values = np.array([getattr(line.figures, field) for line in lines], dtype=float)
    if len(values) == 0:
        return set()
    top = values.min() if field in LOWER else values.max()
    leaders = {i for i, v in enumerate(values) if not differs(float(v), float(top), field in TIMES)}
    return set() if len(leaders) == len(values) else leaders


def registered_presets() -> tuple[str, ...]:
    """Return the policies a lineup offers: every registered one, the engines' presets first."""
    names = list(REGISTRY)
    engines = [n for n in names if REGISTRY[n].engine]
    return tuple(engines + [n for n in names if n not in engines])


def preset_variants() -> tuple[str, ...]:
    """Return the entries a picker offers: each registered preset, then after it each other choice of its settings.

    Derived from the settings' declarations (`Policy.settings`): a preset registered with a choice of its own is
    offered with it at once (`vllm:scheduling_policy=priority`); a number is given in a link (`settings_words`).
    """
    out = []
    for name in registered_presets():
        out.append(name)
        for setting in REGISTRY[name].settings:
            out.extend(f"{name}:{setting.name}={choice}" for choice in setting.choices if choice != setting.default)
    return tuple(out)


def settings_words(name: str) -> str:
    """Return a preset's settings in words, each as declared: name, what it takes, default, help ("" : none)."""
    settings = REGISTRY[name].settings
    return "; ".join(f"{s.name}: {s.describe()}" for s in settings)
