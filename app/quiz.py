"""Check yourself: six multiple-choice questions on the chapter, scored, each answer explained with a deep link."""

from __future__ import annotations

import html
from dataclasses import dataclass

import panel as pn

from .style import CSS


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
            "Requests arrive in bursts, so a batch fills up faster than with evenly spaced arrivals.",
            "Output lengths vary widely: most answers are short and a few are many times longer.",
            "Prompts are much longer than answers, so prefill dominates the work of every batch.",
            "A GPU runs each step of a bigger batch faster, so fuller batches finish sooner.",
        ),
        1,
        "Static batching wastes the gap between each member's length and the longest in its batch. With equal "
        "lengths there is no gap, and continuous batching has almost nothing to reclaim.",
        "?lengths=fixed",
        "Fixed lengths: the two timelines nearly agree",
    ),
    Question(
        "padding",
        "Under static batching, what is padding, and who waits?",
        (
            "A finished member keeps its slot, computed for nothing, until the batch's longest member ends; "
            "a request that arrives meanwhile waits for the whole batch.",
            "Padding is the prompt being read at the first step; nobody waits once the batch has started, "
            "because new requests are added to it as they arrive.",
            "The longest request waits for the short ones to finish first, and padding fills the slots it "
            "is not using; a new arrival takes the next free slot.",
            "Padding is an idle slot while the batch forms; a new request joins the running batch at once, "
            "so only the requests of the first batch ever wait.",
        ),
        0,
        "In the worked example, B finishes at step 5 but holds its slot as padding until step 15, and E and F wait "
        "12 and 11 steps for the first batch to end.",
        "?preset=worked&mode=static",
        "The worked example under static batching",
    ),
    Question(
        "paged",
        "What does continuous batching need from the KV cache to be cheap?",
        (
            "One contiguous buffer per request, sized for the longest possible answer, so it never grows.",
            "Compacting the cache whenever a request leaves, so the free space stays in one piece for newcomers.",
            "Fixed-size blocks listed in each request's block table, so joining and leaving move no one else's memory.",
            "No cache at all: recompute every earlier token at each step, so there is nothing to move.",
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
            "Requests are sorted by length before each step, and cu_seqlens holds each request's total length so far.",
            "Each request attends over a context of its own length, and cu_seqlens holds those context lengths, "
            "one per row.",
            "Each request adds only its new tokens (a joining prompt, else one token), end to end, and "
            "cu_seqlens holds where each one's tokens start.",
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
            "It does: a bigger batch finishes every request sooner, because the GPU's work is shared.",
            "A request still needs one pass per token, no pass gets faster, and past the compute-bound point "
            "more rows make every pass slower.",
            "Because the scheduler spends time between passes deciding who joins, and that time grows with the batch.",
            "Because of padding: without padding rows, every request in the batch would finish faster than alone.",
        ),
        1,
        "Batching shares each pass among more requests: throughput rises, but a request alone on the GPU is as fast "
        "as it gets. Past the compute-bound point, more rows make every step, and so every request, slower.",
        "?tab=knee",
        "Exercise 1: past the knee, every step slows",
    ),
    Question(
        "one_slot",
        "With slots = 1, what do the two timelines show, and why?",
        (
            "Continuous batching is still faster, because it admits each request the moment it arrives.",
            "Static batching is faster, because it spends no time scheduling between passes.",
            "They are identical: there is no padding to remove, so continuous batching is an occupancy optimisation.",
            "Nothing runs: a batch needs at least two slots, so both timelines stay idle.",
        ),
        2,
        "One request at a time, in arrival order, under both policies: the same schedule, step for step.",
        "?slots=1",
        "Slots = 1: both timelines, the same",
    ),
)


def score(answers: list[int | None]) -> int:
    """Return how many of `answers` (an option index per question, None when unanswered) are right."""
    return sum(a == q.answer for q, a in zip(QUESTIONS, answers))


def feedback_html(answers: list[int | None]) -> str:
    """Return the score and, per question, right or not, the reason and the deep link to the view that shows it."""
    items = []
    for n, (q, a) in enumerate(zip(QUESTIONS, answers), start=1):
        verdict = "unanswered" if a is None else ("right" if a == q.answer else "wrong")
        words = {"right": "Right.", "wrong": "Not quite.", "unanswered": "Not answered."}[verdict]
        items.append(
            f'<li data-question="{q.key}" data-verdict="{verdict}"><b>{n}. {words}</b> '
            f"The answer: {html.escape(q.options[q.answer])} {html.escape(q.why)} "
            f'<a href="{html.escape(q.link, quote=True)}">{html.escape(q.link_text)}</a></li>'
        )
    total = score(answers)
    return (
        f'<div class="bv-quiz-result"><p class="bv-score" data-score="{total}">Score: {total} / {len(QUESTIONS)}</p>'
        f'<ol class="bv-quiz-feedback">{"".join(items)}</ol></div>'
    )


class Quiz(pn.viewable.Viewer):
    """The six questions, a Check button, and the score with every answer explained."""

    def __init__(self, **params):
        super().__init__(**params)
        self.choices = [
            pn.widgets.RadioBoxGroup(options=dict(zip(q.options, range(len(q.options)))), value=None) for q in QUESTIONS
        ]
        for group in self.choices:
            group.value = None  # a radio group selects its first option unless told otherwise
        self.check = pn.widgets.Button(label="Check my answers", color="primary")
        self.result = pn.pane.HTML("", sizing_mode="stretch_width", stylesheets=[CSS])
        self.check.on_click(lambda _e: self.show())

    def answers(self) -> list[int | None]:
        """Return the chosen option index per question (None where none is chosen)."""
        return [group.value for group in self.choices]

    def show(self) -> None:
        """Score the answers and explain each one."""
        self.result.object = feedback_html(self.answers())

    def __panel__(self):
        parts = [
            pn.pane.HTML(
                "<h3>Check yourself</h3><p>Six questions on the chapter. Choose an answer for each, then check: every "
                "answer comes with the reason and a link to the view that shows it.</p>",
                sizing_mode="stretch_width",
                stylesheets=[CSS],
            )
        ]
        for n, (q, group) in enumerate(zip(QUESTIONS, self.choices), start=1):
            parts.append(
                pn.pane.HTML(
                    f'<p class="bv-question"><b>{n}.</b> {html.escape(q.text)}</p>',
                    sizing_mode="stretch_width",
                    stylesheets=[CSS],
                )
            )
            parts.append(group)
        parts += [self.check, self.result]
        return pn.Column(*parts, sizing_mode="stretch_width", css_classes=["bv-quiz"], max_width=760)
