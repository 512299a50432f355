"""The scheduling loop's text at the cursor, written plainly in Python: the oracle of app/web/loop_texts.js.

The page writes these lines in the browser; tests compare the renderer's output (in node and in Chromium) with
these, character for character.
"""

from __future__ import annotations

import html
from functools import lru_cache

import numpy as np

from app.page.runs import loop_lines
from app.page.words import plural
from core import Run
from core.sched.timed import TimedRun


def _verb(subjects: list, verb: str) -> str:
    return verb + "s" if len(subjects) == 1 else verb


def _names(run: Run, indices: list[int]) -> str:
    names = [run.requests[i].id for i in indices]
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return html.escape(shown)


def _loop_html(
    run, start, finish, release, t: int, index: int, title: str, who=None, last=None, lines=None, waiting=()
) -> str:
    """Return the loop at step (or pass) t: start/finish/release are per-stay indices on the same axis as t.

    A stay is a request's time in a slot (`who` names its request; None: one stay per request, in order); a stay
    that is not its request's `last` ended in a preemption, and the loop says so when it has a preempt line;
    `waiting` names the requests that waited for memory at t (the admit line says so).
    """
    lines = loop_lines(run.policy) if lines is None else lines
    who = np.arange(len(start)) if who is None else who
    last = np.ones(len(start), dtype=bool) if last is None else last
    leaving = release == t
    retired, admitted = who[leaving & last].tolist(), who[start == t].tolist()
    preempted = who[leaving & ~last].tolist()
    running = int(((start <= t) & (t < release)).sum())
    padding = int(((finish <= t) & (t < release)).sum())
    notes = {
        "retire": f"← {_names(run, retired)} {_verb(retired, 'leave')}" if retired else "",
        "admit": "; ".join(
            ([f"← {_names(run, admitted)} {_verb(admitted, 'join')}"] if admitted else [])
            + ([f"← {_names(run, list(waiting))} {_verb(list(waiting), 'wait')} for memory"] if waiting else [])
        ),
        "preempt": f"← {_names(run, preempted)} preempted" if preempted else "",
        "build": f"← {plural(running, 'row')}" + (f", {padding} of them padding" if padding else "") if running else "",
        "forward": "← nothing to run: the slots are idle" if not running else "",
    }
    lit = {
        "head": True,
        "retire": bool(retired),
        "preempt": bool(preempted),
        "admit": bool(admitted) or bool(waiting),
        "build": running > 0,
        "forward": running > 0,
    }
    lines = "".join(
        f'<div class="bv-code-line{" bv-lit" if lit[key] else ""}" data-line="{key}">'
        f'<span class="bv-code">{html.escape(code)}</span><span class="bv-note">{notes.get(key, "")}</span></div>'
        for key, code in lines
    )
    return (
        f'<div class="bv-loop" data-loop-step="{index}"><div class="bv-loop-title">{title} ({run.policy})</div>'
        f"{lines}</div>"
    )


@lru_cache(maxsize=256)
def loop_texts(run: Run, window: int, limited: bool = False) -> tuple[str, ...]:
    """Return, for each step t = 0..window-1 at the cursor, the scheduling loop with the lines step t executed lit.

    The retire and admit lines light only when that step retired or admitted someone, the batch lines whenever
    anything runs. On a `limited` KV pool the loop has memory's lines: admission while the KV fits, preemption.
    """
    stays = run.stays  # a preempted request leaves at its preemption and joins again when readmitted
    who, start, finish, release = stays[:, 0], stays[:, 2], stays[:, 3], stays[:, 4]
    last = np.append(who[1:] != who[:-1], True) if len(who) else np.ones(0, dtype=bool)  # stays run by request
    if not limited:
        lines, waits = loop_lines(run.policy), {}
    else:
        lines, waits = loop_lines(run.policy, run.schedule.memory.allocation), {}
        for d in run.log:
            if d.kind == "wait":
                waits.setdefault(d.step, []).append(d.request)
    return tuple(
        _loop_html(
            run, start, finish, release, t, t, f"The scheduling loop, step {t}", who, last, lines, waits.get(t, ())
        )
        for t in range(window)
    )


def clock_loop_texts(run: TimedRun, times: list[float]) -> tuple[str, ...]:
    """Return, per time cursor on a clock, the loop at the last pass begun by then (lit as that pass ran)."""
    texts = []
    for k, t in enumerate(times):
        p = int(np.searchsorted(run.pass_start_ms, t, side="left")) - 1
        if p < 0 or t > run.pass_end_ms[p]:  # between passes, or past this mode's drain: nothing runs at t
            title, p = f"The scheduling loop at {t:,.1f} ms, between passes", -1
        else:
            title = f"The scheduling loop, pass {p + 1} ({run.pass_start_ms[p]:,.1f}-{run.pass_end_ms[p]:,.1f} ms)"
        texts.append(_loop_html(run, run.start_pass, run.finish_pass, run.release_pass, p, k, title))
    return tuple(texts)
