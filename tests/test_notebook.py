"""The notebook runs top to bottom on a real Jupyter kernel, and the numbers it prints are the core's."""

import contextlib
import io
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from app.exercises.knee_words import PAGE_RATE_PER_S
from core import TrafficConfig, compare, generate, simulate
from core.batch.step_batch import ContinuousBatches
from core.chapter.spread import spread_study
from core.clock.hardware import cost_model
from core.measure.sweep import decode_knee, knee, sweep

NOTEBOOK = Path(__file__).resolve().parents[1] / "assets" / "simulator.ipynb"
CELL_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def printed() -> str:
    """Execute the notebook on a fresh python3 kernel; return everything its cells printed."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": "."}}).execute()
    return "".join(out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs)


def test_the_repository_holds_the_notebook_without_outputs():
    """Outputs are stripped in the repository: a clean diff, figures only from running it."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)


def test_the_head_to_head_is_the_cores(printed):
    """The printed head-to-head equals core.compare on the default traffic over the 64-step window."""
    requests = generate(TrafficConfig())
    result = compare(simulate(requests, 4, "static"), simulate(requests, 4, "continuous"), window=64)
    for name, m in (("static", result["static"]), ("continuous", result["continuous"])):
        line = (
            f"HEAD-TO-HEAD {name}: completed {m.completed}/{m.requests}, "
            f"utilisation {m.utilisation:.1%}, average latency {m.avg_latency:.1f} steps"
        )
        assert line in printed


def test_the_learners_scheduler_agrees_with_the_core(printed):
    """The per-step scheduler written in the notebook equals core.simulate on all 200 random workloads."""
    assert "SCHEDULER CHECK: 200/200 random workloads equal core.simulate" in printed


def test_the_scheduler_check_catches_a_changed_rule():
    """The check can fail: admitting into the highest free slot instead of the lowest breaks it."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    cells = [c.source for c in nb.cells if c.cell_type == "code"]
    scheduler = next(s for s in cells if s.startswith("def my_continuous"))
    check = next(s for s in cells if "SCHEDULER CHECK" in s)
    broken = scheduler.replace("for s in range(slots):", "for s in reversed(range(slots)):")
    assert broken != scheduler
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(cells[0].replace("pn.extension()", ""), namespace := {})  # noqa: S102 - the notebook's own cells
        exec(broken + "\n" + check, namespace)  # noqa: S102
    agree = int(re.search(r"SCHEDULER CHECK: (\d+)/200", out.getvalue()).group(1))
    assert agree < 200


def test_the_ragged_batch_and_the_exercises_are_the_cores(printed):
    """cu_seqlens at step 10, the knee, the spread's ratios and the bug's distinct draws, as the core computes them."""
    run = simulate(generate(TrafficConfig()), 4, "continuous")
    assert f"cu_seqlens {ContinuousBatches(run).at(10).batch.cu_seqlens.tolist()}" in printed
    points = sweep(rate_per_s=PAGE_RATE_PER_S, model=cost_model("h100-sxm", "llama2-7b"), itl_target_ms=50)
    assert f"KNEE: {knee(points).batch}\n" in printed
    assert f"DECODE ALONE: {decode_knee(points).batch}\n" in printed
    for c in spread_study(1.2):
        assert f"{c.kind:>8}: static drain / continuous drain {c.drain_ratio:.2f}x" in printed
    assert "'greedy': 1," in printed.split("with the bug:")[0]
    assert "'greedy': 1," not in printed.split("with the bug:")[1]
