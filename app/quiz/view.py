"""Check yourself: six questions one at a time, each answer scored and explained, with a link to the view it shows."""

from __future__ import annotations

import html
from dataclasses import dataclass

import panel as pn
import param

from app.web.style import CHOICE_CSS, CSS, LINK_BUTTON_CSS


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


def questions_data() -> list[dict]:
    """Return the questions as JSON-able dicts, each with the served quiz's explanation of every option."""
    return [
        {
            "key": q.key,
            "text": q.text,
            "options": list(q.options),
            "answer": q.answer,
            "link": q.link,
            "link_text": q.link_text,
            # Rendered here, so the exported page's quiz (app/web/tabs/quiz.js) says exactly what the served one says.
            "explanations": [explanation_html(q, k) for k in range(len(q.options))],
        }
        for q in QUESTIONS
    ]


def score(answers: list[int | None]) -> int:
    """Return how many of `answers` (an option index per question, None when unanswered) are right."""
    return sum(a == q.answer for q, a in zip(QUESTIONS, answers))


def progress_html(current: int, answers: list[int | None]) -> str:
    """Return where the learner is and the score so far over the questions answered (data-score, data-answered)."""
    done = sum(a is not None for a in answers)
    total = score(answers)
    where = f"Question {current + 1} of {len(QUESTIONS)}" if current < len(QUESTIONS) else "Your result"
    return (
        f'<p class="bv-quiz-progress">{where} &middot; <span class="bv-score" data-score="{total}" '
        f'data-answered="{done}">Score: {total} / {done}</span></p>'
    )


def explanation_html(q: Question, answer: int) -> str:
    """Return the verdict on one checked answer, the right option and why (data-verdict: right or wrong)."""
    verdict = "right" if answer == q.answer else "wrong"
    words = "Right." if verdict == "right" else "Not quite."
    return (
        f'<div class="bv-verdict" data-question="{q.key}" data-verdict="{verdict}"><p><b>{words}</b> '
        f"The answer: {html.escape(q.options[q.answer])}</p><p>{html.escape(q.why)}</p></div>"
    )


def summary_html(answers: list[int | None]) -> str:
    """Return the final score and one line per question, numbered once by the list itself."""
    items = []
    for q, a in zip(QUESTIONS, answers):
        verdict = "unanswered" if a is None else ("right" if a == q.answer else "wrong")
        words = {"right": "Right.", "wrong": "Not quite.", "unanswered": "Not answered."}[verdict]
        items.append(f'<li data-question="{q.key}" data-verdict="{verdict}"><b>{words}</b> {html.escape(q.text)}</li>')
    total = score(answers)
    return (
        f'<div class="bv-quiz-result"><p class="bv-score" data-final-score="{total}">You scored {total} of '
        f'{len(QUESTIONS)}.</p><ol class="bv-quiz-feedback">{"".join(items)}</ol>'
        "<p>Go back to any question to reread its explanation and open the view it points to.</p></div>"
    )


class Quiz(pn.viewable.Viewer):
    """The six questions one at a time: answer, see why and the score, open the view it points to, go on.

    `goto` is the query string of the last view link followed: the app watches it and opens that view in place.
    """

    current = param.Integer(default=0, bounds=(0, len(QUESTIONS)), doc="The question shown (len: the result)")
    goto = param.String(default="", doc="Query string of the view link the learner followed last")

    def __init__(self, **params):
        super().__init__(**params)
        self.checked: list[int | None] = [None] * len(QUESTIONS)
        self.choices = [
            pn.widgets.RadioBoxGroup(
                options=dict(zip(q.options, range(len(q.options)))),
                value=None,
                sizing_mode="stretch_width",
                stylesheets=[CHOICE_CSS],
            )
            for q in QUESTIONS
        ]
        for group in self.choices:
            group.value = None  # a radio group selects its first option unless told otherwise
        self.check = pn.widgets.Button(label="Check my answer", color="primary")
        self.link = pn.widgets.Button(
            label="", color="light", css_classes=["bv-quiz-link"], stylesheets=[LINK_BUTTON_CSS]
        )
        self.back = pn.widgets.Button(label="Previous question")
        self.next = pn.widgets.Button(label="Next question", color="primary")
        self.check.on_click(lambda _e: self.answer(self.choices[self.current].value))
        self.link.on_click(lambda _e: self.follow(QUESTIONS[self.current].link))
        self.back.on_click(lambda _e: setattr(self, "current", max(self.current - 1, 0)))
        self.next.on_click(lambda _e: setattr(self, "current", self.current + 1))
        self.body = pn.Column(sizing_mode="stretch_width")
        self.param.watch(lambda _e: self._show(), "current")
        self._show()

    def answers(self) -> list[int | None]:
        """Return the checked option index per question (None where not yet checked)."""
        return list(self.checked)

    def answer(self, option: int | None) -> None:
        """Check `option` for the question shown: its answer is kept and explained; None asks for a choice."""
        if option is None or self.current >= len(QUESTIONS):
            return
        self.checked[self.current] = option
        self._show()

    def follow(self, link: str) -> None:
        """Ask the app to open the view `link` points to (the same link twice opens it twice)."""
        if self.goto == link:
            self.param.trigger("goto")
        else:
            self.goto = link

    def _show(self) -> None:
        n = self.current
        progress = _pane(progress_html(n, self.checked))
        self.back.visible = n > 0
        if n == len(QUESTIONS):
            self.body.objects = [progress, _pane(summary_html(self.checked)), self.back]
            return
        q, group, answer = QUESTIONS[n], self.choices[n], self.checked[n]
        group.disabled = answer is not None  # the first checked answer is the one scored
        self.next.label = "Next question" if n + 1 < len(QUESTIONS) else "See your result"
        parts = [
            progress,
            _pane(f'<p class="bv-question" data-question="{q.key}"><b>{html.escape(q.text)}</b></p>'),
            group,
        ]
        if answer is None:
            parts.append(self.check)
        else:
            self.link.label = f"Show me: {q.link_text}"
            parts += [_pane(explanation_html(q, answer)), self.link]
        parts.append(pn.Row(self.back, self.next))
        self.body.objects = parts

    def __panel__(self):
        intro = _pane(INTRO)
        return pn.Column(intro, self.body, sizing_mode="stretch_width", css_classes=["bv-quiz"], max_width=760)


def _pane(text: str) -> pn.pane.HTML:
    return pn.pane.HTML(text, sizing_mode="stretch_width", stylesheets=[CSS])
