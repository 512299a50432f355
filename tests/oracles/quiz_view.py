"""The quiz's markup in Python: the oracle app/web/tabs/quiz.js is tested against (no page uses it)."""

from __future__ import annotations

import html

from app.quiz.view import QUESTIONS, Question


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
