"""`./dev gpu-check` sized to a short GPU rental (issue 46): a budget that stops a replay, a summary on SIGTERM."""

import os
import signal
import time
from dataclasses import replace

import pytest
import torch

from replay import Cancelled, Engine, gpu_check
from replay import attention as attn

from .varlen_stand_in import stand_in, varlen_2_11

torch.set_num_threads(1)
CPU_QUICK = ["--device", "cpu", "--model", "tiny", "--quick"]


def test_the_defaults_fit_a_short_rental():
    """256 chat and 200 Azure requests (1,024 and 400 ran past 400 s on an H200), and a budget of four minutes."""
    args = gpu_check._parser().parse_args([])
    assert (args.requests, args.trace_requests, args.budget_s) == (256, 200, 240.0)


def test_sigterm_prints_the_summary_of_what_ran(monkeypatch, capsys):
    """SIGTERM mid-run: the parts done so far are printed again as the summary, and the run says it was stopped."""

    def terminated(*args):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler interrupts this at once
        raise AssertionError("SIGTERM did not stop the run")

    monkeypatch.setattr(gpu_check, "batch_invariance", terminated)
    before = signal.getsignal(signal.SIGTERM)
    assert gpu_check.main(CPU_QUICK) == 143
    out = capsys.readouterr().out
    ran, _, summary = out.partition("== gpu-check summary")
    assert "parity ours (CPU)" in ran and "parity ours (CPU)" in summary  # printed as it ended, and again
    assert "cuDNN" in summary and "static's dense decode on SDPA" in summary
    assert summary.rstrip().endswith("stopped by SIGTERM; the parts after this did not run")
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_spent_budget_stops_the_run_and_says_so(capsys):
    """--budget-s spent before a part: that part and the rest are skipped, the summary printed, exit 3."""
    assert gpu_check.main([*CPU_QUICK, "--budget-s", "0.001"]) == 3
    summary = capsys.readouterr().out.partition("== gpu-check summary")[2]
    assert "stopped: --budget-s 0.001 was spent" in summary and "calibrate" not in summary


def test_the_budget_stops_a_replay_in_flight():
    """A replay that would wait 20 s for its arrivals stops within a second of its 0.5 s budget, and says how far."""
    engine = Engine("tiny", "cpu")
    workload = [replace(r, arrival=k * 2000) for k, r in enumerate(gpu_check.chat_workload(10, 1.0))]
    report, budget = gpu_check.Report(), gpu_check.Budget(0.5)
    t0 = time.perf_counter()
    with pytest.raises(Cancelled):
        gpu_check.budgeted_replay(engine, workload, 4, "continuous", budget, report)
    assert time.perf_counter() - t0 < 1.5
    assert report.lines[-1].startswith("replay continuous: stopped by --budget-s 0.5 after 0.")
    assert report.lines[-1].endswith(f"of {sum(r.output_tokens for r in workload):,} tokens generated")


def test_gpu_check_skips_a_parity_this_torch_cannot_run(monkeypatch):
    """gpu-check on torch 2.11: the block-table parity says "skipped: needs torch 2.12+" and the version, not FAILED."""
    varlen = pytest.importorskip("torch.nn.attention.varlen")
    monkeypatch.setattr(varlen, "varlen_attn", stand_in(varlen_2_11))
    attn.varlen_parameters.cache_clear()
    try:
        result = gpu_check.varlen_parity("tiny", "cpu", paged=True)
    finally:
        monkeypatch.undo()
        attn.varlen_parameters.cache_clear()
    assert result["ok"] and result["skipped"] == f"needs torch 2.12+ (this is {torch.__version__})"
    line = gpu_check.parity_line(result)
    assert line.startswith("parity varlen block tables") and "skipped: needs torch 2.12+" in line
    assert "FAILED" not in line and torch.__version__ in line
