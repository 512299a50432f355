"""The bound on a run's passes counts the passes it will really make: a per-prompt cap is refused before it runs."""

import re
import subprocess
import sys

import pytest

from core import Request
from core.kv.memory import MemoryConfig
from core.limits import MAX_PREFILL_PASSES, LimitError, check_prefill_passes
from core.sched.engine import schedule
from core.sched.policies import get_policy

# The freeze: 256 prompts of 39,000 tokens (a 3.6 KB upload) on one slot, one token of a prompt a pass.
FREEZE = [Request(str(i), i, 1, prompt_tokens=39_000) for i in range(256)]
ONE_TOKEN_A_PASS = get_policy("vllm").with_knobs(long_prefill_token_threshold=1)


def test_a_per_prompt_cap_that_needs_millions_of_passes_is_refused_before_it_runs():
    """256 x 39,000 one-token chunks on one slot are 9,984,000 passes: refused, naming the chunks and the slots."""
    with pytest.raises(LimitError, match=r"chunks of at most 1 tokens on 1 slots need at least 9,984,000 passes"):
        schedule(FREEZE, 1, ONE_TOKEN_A_PASS, MemoryConfig(kv_blocks=4_000, block_size=16), token_budget=2048)


def test_the_bound_is_the_larger_of_the_budget_and_the_chunks_over_the_slots():
    check_prefill_passes([MAX_PREFILL_PASSES], 1)  # exactly the limit: allowed
    with pytest.raises(LimitError, match="give a token budget of at least 2"):
        check_prefill_passes([MAX_PREFILL_PASSES + 1], 1)
    check_prefill_passes([1000] * 1000, 2048, cap=1, slots=1)  # 1,000,000 one-token chunks: allowed
    with pytest.raises(LimitError, match="allow more tokens of one prompt a pass, or more slots"):
        check_prefill_passes([1000] * 1001, 2048, cap=1, slots=1)
    check_prefill_passes([1000] * 1001, 2048, cap=1, slots=2)  # two chunks a pass: half the passes


def test_the_cli_refuses_the_freeze_in_one_line(tmp_path):
    trace = tmp_path / "long.csv"
    trace.write_text("arrival,output_tokens,prompt_tokens\n" + "".join(f"{i},1,39000\n" for i in range(256)))
    argv = ["compare", "--trace", str(trace), "--slots", "1", "--policies", "vllm,continuous",
            "--long-prefill-token-threshold", "1", "--token-budget", "2048"]  # fmt: skip
    proc = subprocess.run([sys.executable, "-m", "core", *argv], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "need at least 9,984,000 passes" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_compare_refuses_a_target_of_zero_and_sweep_offers_no_priority_share(capsys):
    """A target of 0 is met by nobody (the Schedulers tab refuses it too); the sweep would draw classes never read."""
    from core.cli.commands import main

    for argv, words in (
        (["compare", "--ttft-target", "0", "--itl-target", "5"], "--ttft-target: expected a number above 0"),
        (["sweep", "--high-priority-share", "1"], "unrecognized arguments: --high-priority-share"),
    ):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
        assert words in capsys.readouterr().err


def test_a_text_timeline_names_every_letter_it_draws(capsys):
    """TGI without chunking draws its paused rows Z: the legend above the timeline says what Z is."""
    from core.cli.commands import main

    assert main(["simulate", "--policy", "tgi", "--prefill-chunking", "0", "--requests", "12", "--slots", "4"]) == 0
    out = capsys.readouterr().out
    drawn = set("".join(line.split()[1] for line in out.splitlines() if re.match(r"slot\d", line)))
    legend = next(line for line in out.splitlines() if "Z paused" in line or "G " in line)  # after the clock's line
    assert "Z" in drawn and "Z paused" in legend
    assert all(f"{c} " in legend for c in drawn)
