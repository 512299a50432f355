"""The chapter's worked example: each figure it quotes, from the core's schedules."""

from core import compute_metrics, simulate
from core.chapter.worked_example import BATCH_TIMEOUT, SLOTS, worked_example


def _runs():
    requests = worked_example()
    return simulate(requests, SLOTS, "static", BATCH_TIMEOUT), simulate(requests, SLOTS, "continuous")


def test_static_pads_30_slot_steps_and_e_f_wait_12_and_11():
    """Static: 30 slot-steps of padding; E and F wait 12 and 11 steps; everything done at step 22."""
    static, _ = _runs()
    m = compute_metrics(static)
    assert round(m.padding_share * m.window * SLOTS) == 30
    assert (static.start - static.arrival)[4:].tolist() == [12, 11]
    assert static.drain == 22


def test_continuous_idles_16_slot_steps_and_starts_e_f_earlier():
    """Continuous: 16 idle slot-steps; E and F start 11 and 10 steps earlier than under static; done at step 14."""
    static, continuous = _runs()
    m = compute_metrics(continuous)
    assert round(m.idle_share * m.window * SLOTS) == 16 and m.padding_share == 0
    assert (static.start - continuous.start)[4:].tolist() == [11, 10]
    assert continuous.drain == 14
    assert [r.id for r in worked_example()] == list("ABCDEF")


def test_the_figures_the_page_states_are_the_chapters():
    """worked_figures (what the page prints beside the timelines) gives the chapter's eight caption figures."""
    from core.chapter.worked_example import worked_figures

    assert worked_figures(*_runs()) == {
        "static_padding": 30,
        "static_wait_e": 12,
        "static_wait_f": 11,
        "static_drain": 22,
        "continuous_idle": 16,
        "continuous_earlier_e": 11,
        "continuous_earlier_f": 10,
        "continuous_drain": 14,
    }
