"""The chapter's views as data: the lit scheduling loop, the batch view's HTML, and the quiz's answers and links."""

import json
import re
import shutil
import subprocess
from html import escape
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from app.export.page import MODULES
from app.quiz.view import INTRO, QUESTIONS, Quiz, quiz_data
from app.shell import App
from app.simulator.state import SimState
from core import Request, simulate
from core.batch.step_batch import ContinuousBatches
from core.chapter.worked_example import BATCH_TIMEOUT, SLOTS, worked_example
from tests.oracles.batch_view import MAX_ROWS, BatchView, continuous_html
from tests.oracles.loop_view import loop_texts
from tests.oracles.quiz_view import explanation_html, progress_html, score, summary_html

QUIZ_JS = Path(__file__).resolve().parent.parent / "app" / "web" / "tabs" / "quiz.js"
# Runs tabs/quiz.js's text builders in node on calls read from stdin: [name, *args], a question given by its index.
QUIZ_NODE = """import * as quiz from %s;
import { readFileSync } from "node:fs";
const { questions, calls } = JSON.parse(readFileSync(0, "utf-8"));
const run = ([name, ...a]) => name === "score" ? quiz.quizScore(questions, a[0])
  : name === "progress" ? quiz.progressHtml(questions, a[0], a[1])
  : name === "verdict" ? quiz.verdictHtml(questions[a[0]], a[1]) : quiz.summaryHtml(questions, a[0]);
process.stdout.write(JSON.stringify(calls.map(run)));"""


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
    assert len(static) == 64  # one text per step at the cursor, 0..63: no position past the last pass


def _quiz_js(calls: list[list]) -> list:
    """Return what app/web/tabs/quiz.js's text builders give for `calls`, run in node (no browser)."""
    node = shutil.which("node")
    assert node, "node is needed for the quiz's module: ./dev test installs it (apt-get install nodejs)"
    script = QUIZ_NODE % json.dumps(QUIZ_JS.as_uri())
    stdin = json.dumps({"questions": quiz_data()["questions"], "calls": calls})
    proc = subprocess.run([node, "--input-type=module", "-e", script], input=stdin, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_the_quiz_scores_and_explains_every_question():
    """All right scores 6; one wrong scores 5 and names it; unanswered counts as not right; numbered once.

    The quiz's module (app/web/tabs/quiz.js, both pages') in node, its every text equal to tests/oracles/quiz_view.py's.
    """
    right = [q.answer for q in QUESTIONS]
    wrong = [*right[:-1], (right[-1] + 1) % len(QUESTIONS[-1].options)]
    none = [None] * len(QUESTIONS)
    some = [right[0], wrong[-1], None, None, None, None]
    sets = [right, wrong, none, some, [(a + 1) % 4 for a in right]]
    calls = [["score", a] for a in sets] + [["summary", a] for a in sets]
    calls += [["progress", n, a] for a in sets for n in range(len(QUESTIONS) + 1)]
    calls += [["verdict", k, o] for k, q in enumerate(QUESTIONS) for o in range(len(q.options))]
    want = [score(a) for a in sets] + [summary_html(a) for a in sets]
    want += [progress_html(n, a) for a in sets for n in range(len(QUESTIONS) + 1)]
    want += [explanation_html(q, o) for q in QUESTIONS for o in range(len(q.options))]
    got = _quiz_js(calls)
    assert got == want
    assert got[:2] == [len(QUESTIONS), 5] == [6, 5]
    html = got[len(sets) + 2]  # the summary with nothing answered
    assert 'data-final-score="0"' in html and html.count('data-verdict="unanswered"') == 6
    assert "1." not in html  # the list numbers itself: no "1. 1. Right."
    assert all(0 <= q.answer < len(q.options) for q in QUESTIONS)
    explained = got[calls.index(["verdict", 0, 0])]
    assert 'data-verdict="wrong"' in explained and escape(QUESTIONS[0].why) in explained
    assert 'data-score="1" data-answered="2"' in got[calls.index(["progress", 2, some])]


def test_the_right_option_is_not_the_tell():
    """The right option is the longest in at most 2 of the 6 questions; within a question lengths stay within 1.5x."""
    longest = [len(q.options[q.answer]) == max(map(len, q.options)) for q in QUESTIONS]
    assert sum(longest) <= 2
    for q in QUESTIONS:
        lengths = [len(o) for o in q.options]
        assert max(lengths) / min(lengths) <= 1.5, q.key
    assert len({q.answer for q in QUESTIONS}) >= 3  # the right option's place varies too


def test_the_served_quiz_runs_the_exported_pages_module_on_the_questions():
    """The served tab is tabs/quiz.js (the exported page's own) on the questions as data; the answers come back."""
    quiz = Quiz()
    assert quiz.data == quiz_data() and quiz.data["intro"] == INTRO
    assert "tabs/quiz.js" in MODULES and "// ---- app/web/tabs/quiz.js\n" in quiz._esm
    assert quiz.answers() == [None] * len(QUESTIONS) and quiz.current == 0
    quiz.param.update(checked=[QUESTIONS[0].answer, *[None] * 5], current=1)  # as the browser reports them
    assert quiz.answers()[0] == QUESTIONS[0].answer
    assert "goto" not in quiz._linked_properties  # the followed link stays on the server


def test_a_quiz_link_opens_its_view_in_place():
    """Following a link sets goto; the app applies it from the defaults, shows the simulator, and keeps the answers."""
    app = App(query={"tab": ["quiz"], "preset": ["worked"], "slots": ["6"]})
    app.quiz.checked = [2, *[None] * 5]  # as the browser reports a checked answer
    app.quiz._handle_msg({"follow": QUESTIONS[0].link})  # the browser's "Show me"
    assert app.quiz.goto == QUESTIONS[0].link == "?lengths=fixed&arrival_window=1"
    assert app.tab == "simulator" and app.messages.text == ""
    assert (app.state.lengths, app.state.arrival_window, app.state.slots) == ("fixed", 1, 4)
    app.quiz.follow("?preset=worked&step=5")
    assert app.state.trace_name and app.state.step == 5
    app.knee.param.update(rate_per_s=4.0, itl_target_ms=20.0)  # the learner moved the exercise first
    app.quiz.follow("?tab=knee")
    assert app.tab == "knee" and app.state.trace_name == App().state.trace_name  # the opening traffic again
    # ... and the exercise as a fresh page opens it: at 4 requests/s past the knee is one run, not slower steps
    assert (app.knee.rate_per_s, app.knee.itl_target_ms) == (App().knee.rate_per_s, App().knee.itl_target_ms)
    for bad in ({"follow": "?tab=quiz&slots=1"}, {"follow": ["?slots=1"]}, {"open": "x"}, "x", None):
        app.quiz._handle_msg(bad)  # only a question's own link is followed
    assert app.tab == "knee" and app.quiz.goto == "?tab=knee"
    app.tab = "quiz"
    app.quiz._handle_msg({"follow": "?tab=knee"})  # the same link again opens it again
    assert app.tab == "knee"
    assert app.quiz.answers()[0] == 2


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
    from bokeh.document import Document
    from panel.io.state import set_curdoc

    # A document of its own: a served app's document left current by an earlier test would take the redraws to
    # its event loop's next tick (app/loop.on_document), after these asserts.
    with set_curdoc(Document()):
        _follow_the_cursor()


def _follow_the_cursor() -> None:
    state = SimState(step=10)
    view = BatchView(state=state)
    assert 'data-batch-step="10"' in view.div.text
    state.step = 3
    assert 'data-batch-step="3"' in view.div.text
    state.step = 63  # the window's last pass
    assert 'data-batch-step="63"' in view.div.text
    before = view.div.text
    state.seed = 5
    assert view.div.text != before


def test_build_batch_beside_the_batch_says_what_each_line_produced():
    """The batch view's build_batch lines carry the cursor step's own token count, positions and cu_seqlens."""
    import re

    from core.batch.step_batch import ContinuousBatches
    from tests.oracles.batch_view import BatchView

    state = SimState(seed=4, step=9)
    text = BatchView(state=state).div.text
    batch = ContinuousBatches(state.runs["continuous"]).at(9).batch
    notes = dict(re.findall(r'data-note="(\w+)">([^<]*)<', text))
    assert f"{len(batch.token_ids)} new tokens" in notes["token_ids"]
    assert str(batch.cu_seqlens.tolist()[:12])[1:-1] in notes["cu_seqlens"]
    assert str(batch.positions.tolist()[:12])[1:-1] in notes["positions"]
    assert "as it ran at step 9" in text
    # Past the drain nothing runs, and the code's title does not say it ran (a learner's read, 2026-12-04).
    state = SimState(seed=11, slots=16, step=63)
    assert state.runs["continuous"].drain <= 63
    text = BatchView(state=state).div.text
    assert "not run at step 63: nobody is running" in text and "as it ran" not in text


def test_the_full_head_to_head_tells_its_three_counts_of_lost_time_apart():
    """Item 8: slot-steps against request-steps, and a finished slot's padding against a prompt's pad tokens."""
    from app.simulator.state import SimState
    from app.simulator.views import LOSS_NOTE
    from app.simulator.widget import ChapterWidget
    from app.simulator.widget_data import view_json
    from tests.oracles.batch_view import BatchView

    def h2h(state):  # the full head-to-head the page draws, from the view the server sends
        return json.loads(view_json(ChapterWidget(state)._key()))["h2h"]

    state = SimState()
    assert h2h(state)["note"].startswith(LOSS_NOTE) and "bv-averages" in h2h(state)["note"]
    for words in ("count slot-steps, a slot's time", "counts request-steps, a waiting request's time",
                  "the pad tokens that line up a static batch's prompts"):  # fmt: skip
        assert words in LOSS_NOTE
    state.clock = "ms"  # on a clock the table has no step counts, and no note about them
    assert h2h(state)["note"] == "" and "padding" not in [row[0] for row in h2h(state)["rows"]]
    state.clock = "steps"
    state.step = 10  # a batch runs at step 10 under continuous batching on the default traffic
    batch = BatchView(state=state).html()
    assert "This view's own KV block pool:" in batch and "the simulator's pool above is the KV strip's" in batch
    assert "left-padded" not in batch
