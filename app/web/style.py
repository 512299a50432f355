"""The app's stylesheet, read once from app/web/ (passed to each component: Bokeh renders in shadow DOM)."""

from pathlib import Path

CSS_PATH = Path(__file__).resolve().parent / "batchviz.css"
CSS = CSS_PATH.read_text(encoding="utf-8")

# The exercises' choices: long options wrap inside their column (Bokeh's radio labels do not by
# default), a chosen one reads as chosen, and a code option reads as code. Passed to those widgets only.
CHOICE_CSS = """
.bk-input-group { display: flex; flex-direction: column; gap: 0.35rem; max-width: 100%; }
.bk-input-group label { display: flex; align-items: flex-start; gap: 0.5rem; white-space: normal;
  overflow-wrap: anywhere; line-height: 1.35; max-width: 100%; }
.bk-input-group input { flex: none; margin-top: 0.2rem; }
:host(.bv-code-choice) .bk-input-group label span { font-family: ui-monospace, monospace; font-size: 0.9rem; }
"""
QUIZ_CSS = """
.bv-quiz-progress { color: var(--bv-muted, #555); margin: 0.4rem 0 0 0; }
.bv-verdict[data-verdict="right"] b { color: var(--bv-right, #007A5A); }
.bv-verdict[data-verdict="wrong"] b { color: var(--bv-wrong, #B84A00); }
.bv-assert-table td[data-pass="1"] { color: var(--bv-right, #007A5A); font-weight: 600; }
.bv-assert-table td[data-pass="0"] { color: var(--bv-wrong, #B84A00); font-weight: 600; }
.bv-assert-table code { white-space: pre-wrap; }
"""
CSS += QUIZ_CSS
