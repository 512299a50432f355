"""The chapter's Try-it traffic: twelve heavy-tailed requests on four slots, with every figure its widget shows."""

from __future__ import annotations

from dataclasses import dataclass

from core.workload.request import Request

SLOTS = 4
WINDOW = 64
BATCH_TIMEOUT = 0  # the app's default: static starts a batch as soon as anything waits
# (id, arrival step, output tokens, prompt tokens), labelled A-L like core.workload.traffic.generate. Found by simulated
# annealing over arrivals (0-17) and output lengths under docs/design.md's "Simulator semantics", scored by the
# distance to the widget's figures: over the 64-step window continuous completes 11 of 12, generates 213 tokens (83%
# busy) at a mean latency of 25.0 over its 11 completed; static completes 7, generates 120 tokens (47% busy) at 31.9
# over its 7.
# Measured to the drain, continuous's mean latency over all twelve (28.4) is lower than static's (61.2).
# The lengths are heavy-tailed (median 11, mean 18.7, two long answers of 45 and 59: the 59 runs past the window);
# the prompt lengths (mean 32) change no schedule.
_ROWS = (
    ("A", 0, 11, 18),
    ("B", 2, 4, 41),
    ("C", 3, 27, 9),
    ("D", 4, 45, 27),
    ("E", 5, 11, 64),
    ("F", 9, 24, 12),
    ("G", 10, 59, 30),
    ("H", 10, 4, 22),
    ("I", 13, 2, 115),
    ("J", 15, 7, 15),
    ("K", 16, 20, 8),
    ("L", 17, 11, 23),
)


@dataclass(frozen=True)
class ChapterFigures:
    """The Try-it widget's figures as the chapter prints them; utilisations in whole percent."""

    requests: int = 12
    continuous_completed: int = 11
    continuous_useful_tokens: int = 213
    continuous_utilisation: int = 83
    continuous_avg_latency: float = 25.0  # over the completed requests only, one decimal
    static_completed: int = 7
    static_utilisation: int = 47
    static_avg_latency: float = 31.9  # over the completed requests only, one decimal


CHAPTER_FIGURES = ChapterFigures()


def chapter_traffic() -> list[Request]:
    """Return the Try-it traffic's requests A-L, in arrival order."""
    return [Request(rid, arrival, tokens, prompt) for rid, arrival, tokens, prompt in _ROWS]
