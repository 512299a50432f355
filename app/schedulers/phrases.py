"""What the tab's words share: the table's rows and stars, a comparison's verb, a list of names, the paused passes."""

from __future__ import annotations

from collections.abc import Sequence

from core.measure.lineup import Line, best, differs
from core.states import PAUSED

# (figure, words, format): the table's rows, in the order an engineer reads them.
ROWS = (
    ("ttft_p50", "TTFT p50 (ms)", "{:,.1f}"),
    ("ttft_p99", "TTFT p99 (ms)", "{:,.1f}"),
    ("itl_p50", "ITL p50, all gaps pooled (ms)", "{:,.1f}"),
    ("itl_p99", "ITL p99, all gaps pooled (ms)", "{:,.1f}"),
    ("tpot_p50", "TPOT, each request's mean: p50 (ms)", "{:,.1f}"),
    ("tpot_p99", "TPOT, each request's mean: p99 (ms)", "{:,.1f}"),
    ("stall_p99", "Longest stall, p99 over requests (ms)", "{:,.1f}"),
    ("stall_max", "Longest stall of any request (ms)", "{:,.1f}"),
    ("latency_p50", "End-to-end p50 (ms)", "{:,.0f}"),
    ("latency_p99", "End-to-end p99 (ms)", "{:,.0f}"),
    ("wait_mean", "Queue wait, mean (ms)", "{:,.1f}"),
    ("throughput", "Throughput (tokens/s)", "{:,.0f}"),
    ("preemptions", "Preemptions", "{:,}"),
    ("slo_attainment", "Met both targets", "{:.0%}"),
    ("goodput", "Goodput (requests/s)", "{:,.2f}"),
    ("fairness", "Fairness (Jain, slowdown)", "{:.3f}"),
)


def shown_best(lines: Sequence[Line], field: str, fmt: str) -> set[int]:
    """Return the lines a row stars: the leaders of `field` (ties within THRESHOLD), and any that reads as a leader.

    None where every entry reads the same on the page (a star there would mark a difference nobody can see).
    """
    texts = [fmt.format(getattr(line.figures, field)) for line in lines]
    leaders = best(lines, field)
    if len(set(texts)) == 1 or not leaders:
        return set()
    shown = {texts[i] for i in leaders}
    return {i for i, text in enumerate(texts) if text in shown}


def than(a: float, b: float, lower: str, higher: str, same: str, time: bool = True) -> str:
    """Return the verb a comparison of a with b earns: `same` unless they differ past the lineup's THRESHOLD."""
    return same if not differs(a, b, time) else lower if a < b else higher


def moves(a: float, b: float, time: bool = True) -> str:
    """Return how a figure moves from b to a: falls, rises, or is alike (within the THRESHOLD)."""
    return than(a, b, "falls", "rises", "is alike", time)


def listed(names: Sequence[str]) -> str:
    """Return names as a sentence lists them: "a", "a and b", "a, b and c"."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def share_text(x: float) -> str:
    """Return a small share as it reads: "0.27%", or "under 0.01%" where two decimals would show 0.00%."""
    return f"{x:.2%}" if x >= 0.00005 else "under 0.01%"


def paused_passes(line: Line) -> int:
    """Return how many passes paused the running requests for others' prompts (TGI, SGLang)."""
    s = line.run.schedule
    if s is None or not len(s.cells):
        return 0
    paused = s.cells[s.cells[:, 4] == PAUSED]
    return len({p for lo, hi in paused[:, 2:4].tolist() for p in range(lo, hi)})
