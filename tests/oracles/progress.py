"""Per-step text for playback in Python: the oracle app/web/playback_texts.js is tested against (no page uses it)."""

from __future__ import annotations

import html
from functools import lru_cache

import numpy as np

from app.page.words import plural
from core import GENERATING, IDLE, PADDING, Run
from core.measure.metrics import latency_so_far
from core.sched.timed import TimedRun
from core.states import RECOMPUTE


def _cumulative_cells(grid: np.ndarray, state: int) -> np.ndarray:
    """Return, for t = 0..width, how many cells of `state` lie in steps [0, t)."""
    return np.concatenate([[0], np.cumsum((grid == state).sum(axis=0))])


def stats_html(completed: int, total: int, useful: int, utilisation: float, avg_latency: float | None) -> str:
    """Return the live-stats block; each number carries a data-stat attribute for tests and assistive tech."""
    latency = "–" if avg_latency is None else f"{avg_latency:.1f}"
    items = [
        ("completed", "Completed", f"{completed}/{total}"),
        ("useful_tokens", "Useful tokens", f"{useful}"),
        ("utilisation", "GPU utilisation", f"{utilisation:.0%}"),
        ("avg_latency", "Avg latency so far, every request (steps)", latency),
    ]
    cells = "".join(
        f'<div class="bv-stat"><div class="bv-stat-label">{label}</div>'
        f'<div class="bv-stat-value" data-stat="{key}">{value}</div></div>'
        for key, label, value in items
    )
    return f'<div class="bv-stats">{cells}</div>'


def kv_html(run: Run, t: int, pool: int | None, held: int, peak: int, preemptions: int) -> str:
    """Return the KV line at step t: blocks held (static: reserved) of the pool, the peak so far, preemptions."""
    reserves = run.rules.reserves_whole_life(run.schedule.memory.allocation)  # room for the longest
    verb = "reserved" if reserves else "held"
    of, size = (f" of {pool}" if pool else ""), run.schedule.memory.block_size
    tail = f'; <b data-kv="preemptions">{preemptions}</b> {"preemption" if preemptions == 1 else "preemptions"} so far'
    return (
        f'<span class="bv-kv">KV cache at step {t}: <b data-kv="held">{held}</b>{of} blocks of {size} tokens {verb}, '
        f'peak so far <b data-kv="peak">{peak}</b>' + (tail if pool else " (unlimited pool)") + "</span>"
    )



def _after(run, t: float) -> str:
    """Return the idle time after the run's last token, said apart ("" before it)."""
    after = max(t - float(run.drain_ms), 0.0)
    return f" ({after:,.1f} of them after its last token, at {float(run.drain_ms):,.1f} ms)" if after > 0 else ""


def progress_table(run: Run, window: int, pool: int | None = None) -> dict[str, list[str]]:
    """Return, for each step t = 0..window-1, the readout, live stats, waste meter, KV and decision-log texts.

    Step t is the pass at the cursor: the stats and the waste meter count steps 0..t, the log says what was decided
    before step t ran (what the lit loop shows), and the readout states that meaning once. A run from the memory
    engine also says what its KV cache holds at t, of `pool` blocks (None: unlimited).
    """
    grid = run.grid(window)
    useful, padding, idle, recompute = (
        _cumulative_cells(grid, state) for state in (GENERATING, PADDING, IDLE, RECOMPUTE)
    )
    useful = useful + recompute  # a readmission pass recomputes the KV and emits the next token: a useful token
    kv = run.schedule.blocks_by_step() if run.schedule is not None else None
    preempt_steps = np.array(sorted(d.step for d in run.log if d.kind == "preempt"), dtype=np.int64)
    finish_sorted = np.sort(run.finish)
    table: dict[str, list[str]] = {"readout": [], "stats": [], "waste": [], "kv": [], "log": []}
    peak = 0
    for t in range(window):
        ran = t + 1  # steps 0..t have run
        done = int(np.searchsorted(finish_sorted, ran, side="right"))
        avg = latency_so_far(run.arrival, run.finish, ran)  # every request arrived, not the completed only
        util = useful[ran] / (ran * run.slots)
        table["readout"].append(
            f'<span class="bv-step" data-step="{t}">step {t}</span>'
            f'<span class="bv-step-note"> of 0–{window - 1}: the cards count steps 0–{t}'
            f"{f', the head to head all {window} steps' if t < window - 1 else ''}</span>"
        )
        table["stats"].append(stats_html(done, len(run.requests), int(useful[ran]), util, avg))
        after = max(ran - run.drain, 0) * run.slots  # idle only because everything is done
        done_note = f" ({after} of them after the last request finished at step {run.drain})" if after else ""
        table["waste"].append(
            f'<span class="bv-waste">Waste so far: <b data-waste="padding">{padding[ran]}</b> padding + '
            f'<b data-waste="idle">{idle[ran]}</b> idle slot-steps{done_note}</span>'
        )
        if kv is not None:
            held = int(kv[t]) if t < len(kv) else 0
            peak = max(peak, held)
            preempted = int(np.searchsorted(preempt_steps, t, side="right"))
            table["kv"].append(kv_html(run, t, pool, held, peak, preempted))
        table["log"].append(html.escape(run.describe_step(t)))
    return table


@lru_cache(maxsize=256)
def playback_texts(run: Run, window: int, pool: int | None = None) -> tuple[str, ...]:
    """Return the per-step HTML blocks of a run over a window; runs are shared between sessions, so are these."""
    return tuple(playback_panel(progress_table(run, window, pool)))


def playback_panel(table: dict[str, list[str]]) -> list[str]:
    """Return, per step, the readout, stats, waste meter and decision log as one HTML block.

    app/web/playback_texts.js's playbackHtml writes the same block at each step (tests/browser/test_renderer.py).
    """
    kv = table.get("kv") or [""] * len(table["log"])
    return [
        f'<div class="bv-readout">{r}</div>{s}<div class="bv-waste-row">{w}</div>'
        + (f'<div class="bv-kv-row">{k}</div>' if k else "")
        + f'<div class="bv-log">{g}</div>'
        for r, s, w, k, g in zip(table["readout"], table["stats"], table["waste"], kv, table["log"])
    ]


def clock_times(end_ms: float, frames: int) -> list[float]:
    """Return the time cursor of each playback frame on a clock: `frames` even steps ending at `end_ms`."""
    return [end_ms * (k + 1) / frames for k in range(frames)]


def clock_stats_html(completed: int, total: int, tokens: int, tokens_per_s: float, avg_ms: float | None) -> str:
    """Return the live stats on a clock: every figure counted by the time cursor, latencies in ms."""
    items = [
        ("completed", "Completed", f"{completed}/{total}"),
        ("useful_tokens", "Tokens out", f"{tokens}"),
        ("tokens_per_s", "Tokens/s so far (to its last token)", f"{tokens_per_s:,.0f}"),
        ("avg_latency_ms", "Avg latency so far, every request (ms)", "–" if avg_ms is None else f"{avg_ms:,.1f}"),
    ]
    cells = "".join(
        f'<div class="bv-stat"><div class="bv-stat-label">{label}</div>'
        f'<div class="bv-stat-value" data-stat="{key}">{value}</div></div>'
        for key, label, value in items
    )
    return f'<div class="bv-stats">{cells}</div>'


def _tokens_by_pass(run: TimedRun) -> np.ndarray:
    """Return, for p = 0..passes, the tokens out of passes 0..p-1 (every running request emits one per pass)."""
    diff = np.zeros(run.passes + 1, dtype=np.int64)
    np.add.at(diff, run.start_pass, 1)
    np.add.at(diff, run.finish_pass, -1)
    return np.concatenate([[0], np.cumsum(np.cumsum(diff)[: run.passes])])


def describe_pass(run: TimedRun, p: int) -> str:
    """Return what pass p computed, e.g. 'pass 17, 812.0-826.3 ms: 4 rows, 64 prompt tokens prefilled'."""
    prefill = int(run.pass_prefill[p])
    work = plural(int(run.pass_rows[p]), "row") + (f", {prefill:,} prompt tokens prefilled" if prefill else "")
    return f"pass {p + 1}, {run.pass_start_ms[p]:,.1f}-{run.pass_end_ms[p]:,.1f} ms: {work}"


def clock_progress_table(run: TimedRun, times: list[float]) -> dict[str, list[str]]:
    """Return, per time cursor, the readout, stats, pass meter and the pass under the cursor, all in ms."""
    tokens_out = _tokens_by_pass(run)
    end = times[-1] if times else 0.0
    table: dict[str, list[str]] = {"readout": [], "stats": [], "waste": [], "log": []}
    for k, t in enumerate(times):
        done_passes = int(np.searchsorted(run.pass_end_ms, t, side="right"))  # passes finished by t
        done = run.finish_ms <= t
        avg = latency_so_far(run.arrival_ms, run.finish_ms, t) if t > 0 else None
        tokens = int(tokens_out[done_passes])
        table["readout"].append(
            f'<span class="bv-step" data-step="{k}" data-ms="{t:.3f}">t = {t:,.1f} ms</span>'
            f'<span class="bv-step-note"> of {end:,.1f} ms: the figures below count what came out by then</span>'
        )
        # Over its own time so far: once a run has drained, its idle tail after the last token does not count, so
        # at the end the card equals the head-to-head's tokens/s (tokens over the run's own drain).
        ran = min(t, float(run.drain_ms)) or t
        table["stats"].append(clock_stats_html(int(done.sum()), len(run.requests), tokens, tokens / ran * 1e3, avg))
        busy = float((np.minimum(run.pass_end_ms, t) - np.minimum(run.pass_start_ms, t)).sum())  # pass time by t
        table["waste"].append(
            f'<span class="bv-waste">Forward passes done: <b data-waste="passes">{done_passes}</b>; the GPU '
            f'sat idle <b data-waste="idle_ms">{max(t - busy, 0.0):,.1f}</b> ms{_after(run, t)}</span>'
        )
        p = int(np.searchsorted(run.pass_start_ms, t, side="left")) - 1  # the last pass begun before t
        if p >= 0 and t <= run.pass_end_ms[p]:
            table["log"].append(html.escape(describe_pass(run, p)))
        else:
            table["log"].append(f"{t:,.1f} ms: no pass is running" + (": all done" if t >= run.drain_ms else ""))
    return table


@lru_cache(maxsize=256)
def clock_playback_texts(run: TimedRun, end_ms: float, frames: int) -> tuple[str, ...]:
    """Return the per-frame HTML blocks of a timed run, its time cursor moving in `frames` steps to `end_ms`."""
    return tuple(playback_panel(clock_progress_table(run, clock_times(end_ms, frames))))
