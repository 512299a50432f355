"""One step number everywhere: step t is the pass at the cursor, and every view at the cursor says t."""

import re

from app.simulator.state import SimState
from core import compute_metrics
from tests.oracles.batch_view import BatchView
from tests.oracles.loop_view import loop_texts
from tests.oracles.progress import progress_table

WINDOW = 64


def _number(pattern: str, text: str) -> int:
    return int(re.search(pattern, text).group(1))


def test_every_view_at_the_cursor_names_the_same_step():
    """For t in 0..63 the readout, the lit loop and the batch view all say step t."""
    state = SimState(seed=4)
    view = BatchView(state=state)
    table, loops = progress_table(state.run, WINDOW), loop_texts(state.run, WINDOW)
    assert len(table["readout"]) == len(loops) == WINDOW
    for t in (0, 1, 17, 40, WINDOW - 1):
        state.step = t
        assert _number(r'data-step="(\d+)"', table["readout"][t]) == t
        assert _number(r'data-loop-step="(\d+)"', loops[t]) == t
        assert _number(r'data-batch-step="(\d+)"', view.div.text) == t
        assert table["log"][t].startswith(f"step {t}:")


def test_the_stats_at_step_t_count_steps_0_to_t():
    """The live stats at step t are the core's metrics over t + 1 steps; at the last pass, the head-to-head's."""
    state = SimState(seed=4)
    table = progress_table(state.run, WINDOW)
    for t in (0, 9, WINDOW - 1):
        m = compute_metrics(state.run, t + 1)
        assert f'data-stat="useful_tokens">{m.useful_tokens}<' in table["stats"][t]
        assert f'data-stat="completed">{m.completed}/{m.requests}<' in table["stats"][t]
    assert state.step == WINDOW - 1  # the page opens on the window's last pass, where stats and head-to-head agree


def test_the_step_cannot_pass_the_windows_last_pass():
    """Shrinking the window clamps the step to its last pass, never to a position past it."""
    state = SimState(seed=4)
    state.window = 24
    assert state.step == 23 and state.param.step.bounds == (0, 23)
