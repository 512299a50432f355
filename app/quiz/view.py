"""Check yourself: the six questions as data, asked one at a time by app/web/tabs/quiz.js on both pages."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import param
from panel.custom import JSComponent

from app.web.bundle import bundle
from app.web.style import CSS

log = logging.getLogger("batchviz.server")


@dataclass(frozen=True)
class Question:
    """One question: its options, the right one, why, and the view (a deep link) that shows it."""

    key: str
    text: str
    options: tuple[str, ...]
    answer: int
    why: str
    link: str  # a query string of this app
    link_text: str


QUESTIONS = (
    Question(
        "spread",
        "Which property of real traffic makes continuous batching worth 2-4x, rather than nearly nothing?",
        (
            "Requests arrive in bursts, so each static batch fills up faster than with evenly spaced arrivals.",
            "Output lengths vary widely: most answers are short and a few are many times longer.",
            "Prompts are much longer than answers, so prefill dominates the work of every batch.",
            "A GPU runs each step of a bigger batch faster, so fuller batches always finish sooner.",
        ),
        1,
        "Static batching wastes the gap between each member's length and the longest in its batch. With equal "
        "lengths there is no gap, and once requests queue continuous batching has almost nothing to reclaim.",
        "?lengths=fixed&arrival_window=1",
        "Fixed lengths, all queued at once: the two timelines agree",
    ),
    Question(
        "padding",
        "Under static batching, what is padding, and who waits?",
        (
            "A finished member keeps its slot, computed for nothing, until the longest member ends; a new "
            "arrival waits for the whole batch.",
            "Padding is the prompt being read at the first step; nobody waits once the batch has started, "
            "because new requests join it as they arrive.",
            "The longest request waits for the short ones to finish first, and padding fills its unused "
            "slots; a newcomer takes a free slot.",
            "Padding is an idle slot while the batch forms; a new request joins the running batch at once, "
            "so only the first batch waits.",
        ),
        0,
        "In the worked example, B finishes at step 5 but holds its slot as padding until step 15, and E and F wait "
        "12 and 11 steps for the first batch to end.",
        "?preset=worked&mode=static&step=15",
        "The worked example under static batching",
    ),
    Question(
        "paged",
        "What does continuous batching need from the KV cache to be cheap?",
        (
            "One contiguous buffer per request, sized for the longest possible answer, so it never has to grow.",
            "Compacting the cache whenever a request leaves, so the free space stays in one piece for newcomers.",
            "Fixed-size blocks in each request's block table, so joining and leaving move no one else's memory.",
            "No cache at all: recompute every earlier token at each step, so there is never anything to move.",
        ),
        2,
        "A newcomer takes whichever blocks are free and a finished request returns its blocks to the pool; the "
        "others' block tables only ever grow. Joining and leaving cost no copies.",
        "?preset=worked&step=5",
        "The block tables at step 5 of the worked example",
    ),
    Question(
        "ragged",
        "Why is the continuous batch ragged, and what does cu_seqlens hold?",
        (
            "Rows are padded to the longest prompt in the batch, and cu_seqlens holds how many padding tokens "
            "each row carries.",
            "Requests are sorted by length before each step, and cu_seqlens holds each request's total length "
            "so far, in order.",
            "Each request attends over a context of its own length, and cu_seqlens holds those context lengths, "
            "one per batch row.",
            "Each request adds only its new tokens (a prompt on joining, else one), end to end; cu_seqlens "
            "marks where each starts.",
        ),
        3,
        "At step 4 of the worked example E joins with its 5-token prompt between three one-token decodes: "
        "cu_seqlens is 0 1 6 7 8, with no padding anywhere.",
        "?preset=worked&step=4",
        "The ragged batch at step 4 of the worked example",
    ),
    Question(
        "latency",
        "Why does batching not make a single request faster?",
        (
            "It does: a bigger batch finishes every request sooner, because the GPU's work is shared among "
            "all of them.",
            "A request still needs one pass per token, and every extra row adds to what each pass reads and computes.",
            "The scheduler spends time between passes deciding who joins, and that time grows with the batch.",
            "Padding: without padding rows, every request in a batch would finish faster than it would alone.",
        ),
        1,
        "Batching shares each pass among more requests: throughput rises, but a request alone on the GPU is as fast "
        "as it gets. Each row adds its KV cache to read and its compute to every step, so more rows make every step, "
        "and so every request, slower.",
        "?tab=knee",
        "Exercise 1: past the knee, every step slows",
    ),
    Question(
        "one_slot",
        "With slots = 1, what do the two timelines show, and why?",
        (
            "Continuous batching is still faster, because it admits each request the very moment that it arrives.",
            "Static batching is faster, because it spends no time at all scheduling between passes.",
            "They are identical: one request at a time leaves no padding for continuous batching to remove.",
            "Nothing runs: a batch needs at least two slots, so both of the timelines stay idle.",
        ),
        2,
        "One request at a time, in arrival order, under both policies: the same schedule, step for step.",
        "?slots=1",
        "Slots = 1: both timelines, the same",
    ),
)


INTRO = (
    "<h3>Check yourself</h3><p>Six questions on the chapter, one at a time. Answer before you look: each "
    "answer is explained, with a link that opens the view that shows it (your answers stay here).</p>"
)


# The quiz's own controls, on the served page (in its shadow root) and the exported one: one look in both themes.
QUIZ_CSS = """
.bv-quiz { max-width: 760px; padding: 0 10px; box-sizing: border-box; }
.bv-quiz button { font: inherit; font-size: 0.9rem; padding: 5px 12px; border: 1px solid #888; border-radius: 4px;
  background: rgba(128, 128, 128, 0.14); color: inherit; cursor: pointer; min-height: 32px; }
.bv-quiz button.bv-primary { background: #0072B2; border-color: #0072B2; color: #fff; }
.bv-quiz button.bv-quiz-link { border: none; background: transparent; color: var(--bv-link, #0072B2);
  text-decoration: underline; padding-left: 0; text-align: left; }
.bv-quiz button:focus-visible, .bv-quiz input:focus-visible, .bv-quiz [tabindex]:focus-visible {
  outline: 3px solid var(--bv-focus, #0072B2); outline-offset: 2px; }
.bv-quiz-options { display: flex; flex-direction: column; gap: 0.35rem; margin: 0.3rem 0 0.6rem; }
.bv-quiz-options label { display: flex; align-items: flex-start; gap: 0.5rem; line-height: 1.35;
  overflow-wrap: anywhere; cursor: pointer; }
.bv-quiz-options input { flex: none; margin-top: 0.2rem; accent-color: #0072B2; }
.bv-quiz-options input:checked + span { font-weight: 600; }  /* the chosen option reads as chosen, locked or not */
.bv-quiz-nav { display: flex; flex-wrap: wrap; gap: 8px; margin-top: 8px; }
"""


def questions_data() -> list[dict]:
    """Return the questions as JSON-able dicts: the text, options, answer, why, and the view link with its words."""
    return [
        {
            "key": q.key,
            "text": q.text,
            "options": list(q.options),
            "answer": q.answer,
            "why": q.why,
            "link": q.link,
            "link_text": q.link_text,
        }
        for q in QUESTIONS
    ]


def quiz_data() -> dict:
    """Return what app/web/tabs/quiz.js mounts: the intro and the questions (the same for both pages)."""
    return {"intro": INTRO, "questions": questions_data()}


LINKS = frozenset(q.link for q in QUESTIONS)


class Quiz(JSComponent):
    """The served Quiz tab: app/web/tabs/quiz.js, the exported page's quiz, run on Panel's model.

    The browser asks, scores and explains; the learner's place and answers come back here as `current`, `checked`
    and `chosen`, so a view drawn again (the tab left and opened) resumes where it was. A "Show me" link sends its
    query string; `goto` is the last one followed, which the app watches to open that view in place.
    """

    data = param.Dict(default={}, constant=True, doc="The intro and the questions (quiz_data)")
    current = param.Integer(default=0, bounds=(0, len(QUESTIONS)), doc="The question shown (len: the result)")
    checked = param.List(default=[None] * len(QUESTIONS), doc="The scored option per question (None: not checked)")
    chosen = param.List(default=[None] * len(QUESTIONS), doc="The option chosen per question, checked or not")
    goto = param.String(default="", doc="Query string of the view link the learner followed last")

    _esm = bundle("tabs/quiz.js", "tabs/quiz_host.js")
    _stylesheets = [CSS, QUIZ_CSS]
    _rename = {"goto": None}  # server-side only: the app watches it, the browser never needs it

    def __init__(self, **params):
        params.setdefault("data", quiz_data())
        params.setdefault("sizing_mode", "stretch_width")
        super().__init__(**params)

    def answers(self) -> list[int | None]:
        """Return the checked option index per question (None where not yet checked)."""
        return list(self.checked)

    def follow(self, link: str) -> None:
        """Ask the app to open the view `link` points to (the same link twice opens it twice)."""
        if self.goto == link:
            self.param.trigger("goto")
        else:
            self.goto = link

    def _handle_msg(self, data) -> None:
        """Follow a question's view link the browser sends (`{follow: link}`); anything else is one log line."""
        link = data.get("follow") if isinstance(data, dict) else None
        if not isinstance(link, str) or link not in LINKS:
            log.info("ignored a quiz message: %.80r", data)
            return
        self.follow(link)
