"""What the browser's renderer draws: both runs of a setting as flat arrays (JSON), cached and shared by sessions."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from app.page import palette, policy_words
from app.page.runs import MIN_LABEL_CELLS, policy_fields
from app.server.byte_cache import byte_cache
from app.simulator.batch_data import batch_config
from app.simulator.pool_at import owners_by_step
from app.simulator.state import MODE_ORDER, shared_runs, shared_timed_runs
from core import Request, Run, TrafficConfig, compute_metrics
from core.measure.losses import losses
from core.measure.metrics import latency_by_class
from core.sched.policies import CHAPTER_PAIR, REGISTRY, get_policy
from core.sched.timed import TimedRun, timed_metrics

# Playback's paces, slowest last: one step a frame, a learner's pace (the default), slow enough to follow one request.
SPEEDS = (("1 step/frame", 16), ("120 ms/step", 120), ("400 ms/step", 400))
AHEAD_MAX_REQUESTS = 64  # neighbours are sent ahead only for traffic this small (each costs two runs)


@dataclass(frozen=True)
class ViewKey:
    """Everything a view depends on; equal keys give equal views, so every session shares them."""

    traffic: TrafficConfig | tuple[Request, ...]
    slots: int
    timeout: int
    window: int
    clock: str
    accelerator: str
    model: str
    both: bool
    generator: bool  # whether the seed slider applies (generated traffic, or the chapter's, which it replaces)
    slots_end: int  # the slots slider's top: 16, or 64 once a URL asked beyond
    kv_blocks: int = 0  # the KV pool asked for, in blocks (0: unlimited)
    allocation: str = "paged"
    traffic_label: str = ""  # which traffic, in words (SimState.traffic_label)

    def label(self) -> str:
        """Return a short fingerprint the browser compares (drawn ahead vs confirmed), the same in every process.

        Python's own hash of a string changes between processes; the exported page is built in one and checked
        against views made in another.
        """
        return hashlib.blake2b(repr(self).encode(), digest_size=6).hexdigest()


LOG_KINDS = ("finish", "release", "preempt", "admit", "wait")  # the log's kind numbers (app/web/playback_texts.js)


def run_arrays(run: Run, limited: bool = False, window: int | None = None) -> dict:
    """Return a run as the renderer reads it: per-request start, finish, slot, release (it derives the log).

    A run from the memory engine adds the blocks held at each step and their peak over the whole run (the KV strip's
    scale); one whose requests were preempted adds its drawn cells and stays; on a `limited` pool, memory's decisions
    (as numbers: the renderer writes the words) and each slot-step a request waited for memory. Per-step facts go
    only as far as the `window` shown (the cursor never passes it), so a long drain sends no more than a short one.
    """
    allocation = run.schedule.memory.allocation if run.schedule is not None else "paged"
    # The drain step itself reports the last finish and release: its facts are sent too.
    shown = run.drain + 1 if window is None else min(window, run.drain + 1)
    out = {
        **policy_fields(run.rules, allocation),
        "slots": run.slots,
        "drain": run.drain,
        "start": run.start.tolist(),
        "finish": run.finish.tolist(),
        "slot": run.slot.tolist(),
        "release": run.release.tolist(),
    }
    if run.schedule is not None:
        blocks = run.schedule.blocks_by_step()
        out["kv"] = blocks[:shown].tolist()
        out["kv_peak"] = int(blocks.max()) if len(blocks) else 0
    if run.cells is not None:
        out["cells"] = run.cells[:, :5].ravel().tolist()
        out["stays"] = run.stays.ravel().tolist()
    if limited:
        kinds = {k: n for n, k in enumerate(LOG_KINDS)}
        out["pool"] = run.schedule.memory.kv_blocks
        out["log"] = [
            x
            for d in run.log
            if d.step < shown
            for x in (d.step, kinds[d.kind], d.request, d.slot, d.tokens, d.other, d.free, d.longest)
        ]
        out["waits"] = [x for w in run.memory_waits if w.step < shown for x in (w.step, w.slot)]
        owners = owners_by_step(run)  # each block's owner at each step, for the pool at the cursor
        out["pool_at"] = None if owners is None else [o for at in owners[:shown] for o in at]
    return out


def _timed_arrays(run: TimedRun) -> dict:
    """Return a timed run's per-request times and pass indices, and per pass its times, rows and prefill."""
    return {
        "start_ms": run.start_ms.tolist(),
        "finish_ms": run.finish_ms.tolist(),
        "release_ms": run.release_ms.tolist(),
        "drain_ms": float(run.drain_ms),
        "start_pass": run.start_pass.tolist(),
        "finish_pass": run.finish_pass.tolist(),
        "release_pass": run.release_pass.tolist(),
        "pass_start_ms": run.pass_start_ms.tolist(),
        "pass_end_ms": run.pass_end_ms.tolist(),
        "pass_rows": run.pass_rows.tolist(),
        "pass_prefill": run.pass_prefill.tolist(),
    }


def compact_pair(runs: dict, mode: str) -> tuple[str, str]:
    """Return the two policies the first screen's head-to-head shows for `mode`: it and the one it is compared with.

    A batch policy first (static, continuous: the chapter's order), else the one it is compared with first.
    """
    versus = runs[mode].rules.versus
    return (mode, versus) if runs[mode].rules.forms_batches else (versus, mode)


def h2h_compact(first: Run, second: Run, window: int, timed: tuple[TimedRun, TimedRun] | None) -> str:
    """Return the first screen's head-to-head table (three rows) of two runs, as simulator/views.py builds its table."""
    from app.simulator.views import (
        COMPACT,
        COMPACT_GROUPS,
        COMPACT_TIMED,
        _h2h_table,
        _latency,
        _short,
        compact_caption,
        h2h_rows,
        h2h_timed_rows,
    )

    names = (first.policy, second.policy)
    if timed is not None:
        rows = h2h_timed_rows(*(timed_metrics(run) for run in timed), len(first.requests))
        return _h2h_table(_short(rows, COMPACT_TIMED), compact_caption(None), names)
    m1, m2 = compute_metrics(first, window), compute_metrics(second, window)
    rows = h2h_rows(m1, m2, losses(first, window), losses(second, window), names)
    rows.append(("avg_latency_completed", "", _latency(m1.avg_latency), _latency(m2.avg_latency)))  # the chapter's
    table = _short(rows, COMPACT) + class_rows(first, second)
    return _h2h_table(table, compact_caption(window), names, COMPACT_GROUPS)


def class_rows(first: Run, second: Run) -> list[tuple]:
    """Return a latency row per priority class when a policy ordered by priority is shown on classed traffic."""
    if not (first.rules.orders_by_class or second.rules.orders_by_class):
        return []
    return [
        (f"latency_class{c}", f"Avg latency, priority {c} ({n}), to finish (steps)", *(f"{m:.1f}" for m in means))
        for c, (n, means) in latency_by_class([first, second]).items()
    ]


@byte_cache(share=0.2)
def view_json(key: ViewKey) -> str:
    """Return the view of `key` as JSON: ids, arrivals, both runs, the compact head-to-head, and on a clock frames."""
    shown = shared_runs(key.traffic, key.slots, key.timeout, key.kv_blocks, key.allocation)
    static, continuous = shown["static"], shown["continuous"]
    pool = continuous.schedule.memory.kv_blocks if key.kv_blocks else None
    runs = {policy: run_arrays(run, pool is not None, key.window) for policy, run in shown.items()}
    view = {
        "key": key.label(),
        "window": key.window,
        "clock": key.clock,
        "both": key.both,
        "generator": key.generator,
        "slots": key.slots,
        "timeout": key.timeout,  # a batch policy's batch timeout, in steps (its caption says what it does)
        "slots_end": key.slots_end,
        "min_label_cells": MIN_LABEL_CELLS,
        "ids": [r.id for r in static.requests],
        "arrival": static.arrival.tolist(),
        "prompt": [r.prompt_tokens for r in static.requests],
        "output": [r.output_tokens for r in static.requests],
        "priority": [r.priority for r in static.requests],
        "runs": runs,
        "pool": pool,
        "pool_asked": key.kv_blocks or None,
        "block_size": continuous.schedule.memory.block_size,
        "allocation": key.allocation,
        "traffic_label": key.traffic_label + drawn_classes(key.traffic, static.requests),
    }
    timed = None
    if key.clock == "ms":
        timed = shared_timed_runs(key.traffic, key.slots, key.timeout, key.accelerator, key.model)
        view["end_ms"] = float(max(t.drain_ms for t in timed.values()))  # the latest drain of all
        # Each mode's time axis: the later drain of the two runs it shows (it, and the one it is compared with).
        view["end_ms_by"] = {
            mode: float(max(timed[mode].drain_ms, timed[get_policy(mode).versus].drain_ms)) for mode in timed
        }
        view["arrival_ms"] = timed["continuous"].arrival_ms.tolist()
        for policy, run in timed.items():
            runs[policy].update(_timed_arrays(run))
    if timed is not None:  # on steps the renderer builds the compact table itself (tested against h2h_compact)
        pairs = {mode: compact_pair(shown, mode) for mode in shown}
        view["h2h_compact"] = {
            mode: h2h_compact(shown[a], shown[b], key.window, (timed[a], timed[b])) for mode, (a, b) in pairs.items()
        }
    view.update(story_fields(key, shown, timed))
    return json.dumps(view, separators=(",", ":"))


def drawn_classes(traffic, requests) -> str:
    """Return how many requests the draw made high priority, where the generator draws classes by chance."""
    if not isinstance(traffic, TrafficConfig) or not traffic.high_priority_share:
        return ""
    high = sum(r.priority == 0 for r in requests)
    return f" ({high} of {len(requests)} drawn so here)"


def story_fields(key: ViewKey, shown: dict, timed: dict | None) -> dict:
    """Return what the story around the widget shows for a view: the full head-to-head, what holds, the worked example.

    The full head-to-head of static and continuous (`h2h`), and of each other mode with the one it is compared with
    (`h2h_by`: the two runs on screen in that mode). The worked example's figures show on its own traffic and
    settings only. Computed once per view and shared by every session, like the runs.
    """
    from app.simulator.story import here_html, worked_html
    from app.simulator.views import h2h_full
    from core.chapter import worked_example as worked

    static, continuous = shown["static"], shown["continuous"]
    pair = None if timed is None else (timed["static"], timed["continuous"])
    others = {mode: compact_pair(shown, mode) for mode in shown if mode not in CHAPTER_PAIR}
    by_mode = {
        mode: h2h_full(shown[a], shown[b], key.window, None if timed is None else (timed[a], timed[b]))
        for mode, (a, b) in others.items()
    }
    is_worked = (
        isinstance(key.traffic, tuple)
        and key.slots == worked.SLOTS
        and key.timeout == worked.BATCH_TIMEOUT
        and key.traffic == tuple(worked.worked_example())
    )
    return {
        "h2h": h2h_full(static, continuous, key.window, pair),
        "h2h_by": by_mode,
        "here": here_html(static, continuous, key.window, pair, limited=bool(key.kv_blocks)),
        "worked": worked_html(worked.worked_figures(static, continuous)) if is_worked else None,
    }


def renderer_config(theme: palette.Theme, interval_ms: int) -> dict:
    """Return the renderer's constants: colours, each policy's loop lines, captions, the legend, the play interval."""
    return {
        "colours": {
            "background": theme.background,
            "text": theme.text,
            "idle": palette.IDLE_COLOR,
            "generating": palette.GENERATING_COLOR,
            "padding": palette.PADDING_COLOR,
            "hatch": palette.PADDING_HATCH,
            "label": palette.LABEL_COLOR,
            "highlight": theme.text,
            "recompute": palette.RECOMPUTE_COLOR,
            "paused": palette.PAUSED_COLOR,
            "memory": palette.MEMORY_COLOR,  # on the idle grey strip, in both themes
        },
        "modes": [[mode, get_policy(mode).label] for mode in MODE_ORDER],  # the mode buttons, in the page's order
        "captions": {name: policy_words.words(p).caption for name, p in REGISTRY.items()},  # each policy's own words
        "captions_memory": {name: policy_words.words(p).caption_memory for name, p in REGISTRY.items()},
        "legend": palette.legend_html(),
        "legend_memory": palette.memory_legend_html(),
        "interval_ms": interval_ms,
        "speeds": [
            [label, ms] for label, ms in SPEEDS
        ],  # the playback speeds offered, the first pages' pace among them
        "batch": batch_config(),
    }
