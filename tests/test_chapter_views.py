"""The chapter's views as data: the lit scheduling loop, the batch view's HTML, and the quiz's answers and links."""

import re
from urllib.parse import parse_qs

import pytest

from app.batch_view import MAX_ROWS, BatchView, continuous_html
from app.quiz import QUESTIONS, feedback_html, score
from app.simulator import App
from app.state import SimState
from app.story import loop_texts
from core import Request, simulate
from core.step_batch import ContinuousBatches
from core.worked_example import BATCH_TIMEOUT, SLOTS, worked_example


def _lit(text: str) -> list[str]:
    return re.findall(r'bv-code-line bv-lit" data-line="(\w+)"', text)


def test_the_loop_lights_what_each_step_did():
    """Continuous: 2 only runs, 4 retires B and admits E, nothing runs past the drain; static 15 swaps batches."""
    continuous = loop_texts(simulate(worked_example(), SLOTS, "continuous"), 64)
    assert _lit(continuous[2]) == ["head", "build", "forward"]
    assert _lit(continuous[4]) == ["head", "retire", "admit", "build", "forward"]
    assert "B leaves" in continuous[4] and "E joins" in continuous[4]
    assert _lit(continuous[20]) == ["head"] and "nothing to run" in continuous[20]
    static = loop_texts(simulate(worked_example(), SLOTS, "static", BATCH_TIMEOUT), 64)
    assert _lit(static[15]) == ["head", "retire", "admit", "build", "forward"]
    assert "A, B, C, D leave" in static[15] and "E, F join" in static[15]
    assert "4 rows, 1 of them padding" in static[5]  # B finished at 5 and pads until 15
    assert static[64] == static[63]  # the window's end shows its last step


def test_the_quiz_scores_and_explains_every_question():
    """All right scores 6; one wrong scores 5 and names it; unanswered counts as not right."""
    right = [q.answer for q in QUESTIONS]
    assert score(right) == len(QUESTIONS) == 6
    wrong = [*right[:-1], (right[-1] + 1) % len(QUESTIONS[-1].options)]
    assert score(wrong) == 5
    html = feedback_html([None] * len(QUESTIONS))
    assert 'data-score="0"' in html and html.count('data-verdict="unanswered"') == 6
    assert all(0 <= q.answer < len(q.options) for q in QUESTIONS)


@pytest.mark.parametrize("question", QUESTIONS, ids=lambda q: q.key)
def test_every_quiz_link_is_a_deep_link_the_app_accepts(question):
    """Each explanation's link opens the app with no message: every key and value in it is allowed."""
    query = {k: v for k, v in parse_qs(question.link.lstrip("?")).items()}
    app = App(query=query)
    assert app.messages.text == ""


def test_the_quiz_figures_are_the_cores():
    """The explanations quote the worked example: B pads from 5 to 15, E and F wait 12 and 11, cu_seqlens 0 1 6 7 8."""
    static = simulate(worked_example(), SLOTS, "static", BATCH_TIMEOUT)
    ids = [r.id for r in static.requests]
    b, e, f = (ids.index(x) for x in "BEF")
    assert (static.finish[b], static.release[b]) == (5, 15)
    assert (static.start[e] - static.arrival[e], static.start[f] - static.arrival[f]) == (12, 11)
    step4 = ContinuousBatches(simulate(worked_example(), SLOTS, "continuous")).at(4)
    assert step4.batch.cu_seqlens.tolist() == [0, 1, 6, 7, 8]
    text = " ".join(q.why for q in QUESTIONS)
    assert "step 5 but holds its slot as padding until step 15" in text and "0 1 6 7 8" in text


def test_the_batch_view_escapes_ids_and_caps_rows():
    """A hostile request id is escaped everywhere; a 64-row batch draws MAX_ROWS rows and says how many more."""
    evil = [Request('"><img src=x onerror=alert(1)>', 0, 3, 2)]
    run = simulate(evil, 1, "continuous")
    html = continuous_html(run, ContinuousBatches(run).at(0))
    assert "<img" not in html and "&quot;&gt;&lt;img" in html
    wide = simulate([Request(f"r{i}", 0, 5, 1) for i in range(64)], 64, "continuous")
    html = continuous_html(wide, ContinuousBatches(wide).at(1))
    assert html.count('class="bv-seg ') == MAX_ROWS and f"{64 - MAX_ROWS} more rows" in html


def test_the_batch_view_follows_the_cursor_and_the_runs():
    """Moving the step or changing the traffic redraws the batch for the step and runs shown."""
    state = SimState(step=10)
    view = BatchView(state=state)
    assert 'data-batch-step="10"' in view.div.text
    state.step = 3
    assert 'data-batch-step="3"' in view.div.text
    state.step = 64  # the window's end: its last step
    assert 'data-batch-step="63"' in view.div.text
    before = view.div.text
    state.seed = 5
    assert view.div.text != before
