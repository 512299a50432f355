"""The chapter's Try-it traffic: each figure its widget shows, from the core's schedules."""

import statistics

from core import compute_metrics, simulate
from core.chapter.chapter_traffic import BATCH_TIMEOUT, CHAPTER_FIGURES, SLOTS, WINDOW, chapter_traffic
from core.workload.request import request_label


def _runs():
    requests = chapter_traffic()
    return simulate(requests, SLOTS, "static", BATCH_TIMEOUT), simulate(requests, SLOTS, "continuous")


def _metrics():
    static, continuous = _runs()
    return compute_metrics(static, WINDOW), compute_metrics(continuous, WINDOW)


def test_twelve_requests_labelled_like_the_generator_arriving_in_the_first_eighteen_steps():
    """Twelve requests A-L, arrivals in 0..17 in non-decreasing trace order."""
    requests = chapter_traffic()
    arrivals = [r.arrival for r in requests]
    assert len(requests) == CHAPTER_FIGURES.requests == 12
    assert [r.id for r in requests] == [request_label(i) for i in range(12)]
    assert all(0 <= a <= 17 for a in arrivals) and arrivals == sorted(arrivals)


def test_lengths_are_heavy_tailed():
    """Median clearly below the mean, the largest at least 3x the median, and only one or two long answers."""
    lengths = [r.output_tokens for r in chapter_traffic()]
    median, mean = statistics.median(lengths), statistics.mean(lengths)
    assert median < 0.75 * mean
    assert max(lengths) >= 3 * median
    assert 1 <= sum(length > 3 * median for length in lengths) <= 2


def test_continuous_figures():
    """Continuous: 11 of 12 completed, 213 useful tokens, 83% busy, 25.0 steps mean latency of the completed."""
    _, m = _metrics()
    fig = CHAPTER_FIGURES
    assert (m.completed, m.requests) == (fig.continuous_completed, fig.requests)
    assert m.useful_tokens == fig.continuous_useful_tokens
    assert f"{m.utilisation:.0%}" == f"{fig.continuous_utilisation}%"
    assert f"{m.avg_latency:.1f}" == f"{fig.continuous_avg_latency:.1f}"


def test_static_figures():
    """Static (timeout 0): 7 completed, 47% busy, 31.9 steps mean latency of the completed."""
    m, _ = _metrics()
    fig = CHAPTER_FIGURES
    assert m.completed == fig.static_completed
    assert f"{m.utilisation:.0%}" == f"{fig.static_utilisation}%"
    assert f"{m.avg_latency:.1f}" == f"{fig.static_avg_latency:.1f}"


def test_continuous_is_faster_over_all_requests_measured_to_the_drain():
    """Counting every request to its finish, continuous's mean latency is lower, and it completes more."""
    static, continuous = _runs()
    assert (continuous.finish - continuous.arrival).mean() < (static.finish - static.arrival).mean()
    s, c = _metrics()
    assert c.completed > s.completed
