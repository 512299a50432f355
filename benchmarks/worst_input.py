"""The worst input each limit allows, and a few just past them: peak memory and time of each, one process per case.

`./dev bench limits`. Each case runs in a fresh Python process; its peak resident memory comes from the kernel
(`wait4`'s ru_maxrss), so a case that allocated before refusing would show it.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from core.limits import MAX_REQUESTS, MAX_TIMELINE_CELLS, MAX_TOTAL_TOKENS

CLI = "import sys; from batchviz.cli import main; sys.exit(main(sys.argv[1:]))"
UPLOAD = """
import sys, base64
from app.shell import App
app = App(query={"slots": "1", "window": "4096", "step": "4096"})
data = open(sys.argv[1], "rb").read()
app._on_upload(type("E", (), {"new": {"n": 1, "name": "worst.csv", "size": len(data),
                                      "data": base64.b64encode(data).decode()}})())
assert app.state.trace_name == "worst.csv", app.messages.text
print(len(app.state.trace), "requests on", app.state.slots, "slots,", app.state.window, "steps shown")
"""
REPLAY = """
import sys, torch
torch.set_num_threads(1)
from core import Request
from replay import Engine
engine = Engine("tiny", "cpu")
requests = [Request("A", 0, 192, 8000), Request("B", 0, 192, 8000)]
result = engine.replay(requests, 2, "continuous")
print(int(result.tokens_per_step.sum()), "tokens over 8,000-token prompts")
"""


def _write(path: Path, header: str, rows, count: int) -> Path:
    with path.open("w") as f:
        f.write(header)
        for i in range(count):
            f.write(rows(i))
    return path


def cases(folder: Path) -> list[tuple[str, list[str], str]]:
    """Return (description, python argv, expected outcome) for each case."""
    per = MAX_TOTAL_TOKENS // MAX_REQUESTS
    trace = _write(folder / "max.csv", "arrival,output_tokens\n", lambda i: f"{i * 1000},{per}\n", MAX_REQUESTS)
    # The largest upload the page runs (app/page/upload.py): 4,999 + 5,000 x 99 = 499,999 steps to drain on one slot.
    upload = _write(folder / "upload.csv", "arrival,output_tokens\n", lambda i: f"{i},99\n", 5000)
    window = MAX_TIMELINE_CELLS // 4096
    # A measured profile on a 2 x 2 x 2 grid (tests/test_hostile_input.py's), and one whose passes cost 1e-300 ms.
    grid = "[[[1,2],[3,4]],[[2,3],[4,5]]]"
    profile = '{"kind":"fitted","rows":[0,64],"prefill_tokens":[0,1024],"context_tokens":[0,6144],"ms":%s}'
    fitted, tiny = folder / "profile.json", folder / "tiny.json"
    fitted.write_text(profile % grid)
    tiny.write_text(profile % re.sub(r"\d", "1e-300", grid))
    return [
        (
            f"simulate --json: {4096} slots x {window:,} steps = the cell limit",
            ["-c", CLI, "simulate", "--json", "--slots", "4096", "--requests", "20000", "--window", str(window)],
            "ok",
        ),
        (
            f"compare: {MAX_REQUESTS:,}-row trace, {MAX_TOTAL_TOKENS:,} tokens, span 1e9 steps",
            ["-c", CLI, "compare", "--json", "--trace", str(trace), "--slots", "4096"],
            "ok",
        ),
        (
            "sweep: batch 1 drains 9,800,000 steps (the per-step limit is 10,000,000)",
            ["-c", CLI, "sweep", "--requests", "49000", "--lengths", "fixed", "--mean-tokens", "200", "--batches", "1"],
            "ok",
        ),
        ("sweep --cost: a measured profile, all default batches", ["-c", CLI, "sweep", "--cost", str(fitted)], "ok"),
        ("sweep --cost: a profile of 1e-300 ms passes", ["-c", CLI, "sweep", "--cost", str(tiny)], "ok"),
        ("upload: 5,000 rows, 499,999 steps to drain on 1 slot, 4,096-step window", ["-c", UPLOAD, str(upload)], "ok"),
        ("replay: two 8,000-token prompts + 192 tokens (tiny model's context)", ["-c", REPLAY], "ok"),
        (
            "refused: simulate --json --window 1,000,000,000",
            ["-c", CLI, "simulate", "--json", "--window", "1000000000"],
            "status 2",
        ),
        ("refused: --trace /dev/zero", ["-c", CLI, "simulate", "--trace", "/dev/zero"], "status 2"),
        (
            "refused: replay, prompt 1,000,000 tokens",
            ["-c", CLI, "replay", "--requests", "2", "--mean-prompt-tokens", "1000000", "--prompt-lengths", "fixed"],
            "status 2",
        ),
    ]


def run_case(argv: list[str]) -> tuple[int, float, float, str]:
    """Run one case; return (exit status, seconds, peak MB, last line of its output)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    lines = out.decode(errors="replace").strip().splitlines()
    return os.waitstatus_to_exitcode(status), seconds, usage.ru_maxrss / 1024, (lines[-1] if lines else "")[:90]


def main(argv: list[str]) -> None:
    """Print peak memory and time for the worst allowed input of each kind, and for refusals just past a limit."""
    argparse.ArgumentParser(prog="./dev bench limits", description=__doc__.split("\n\n")[0]).parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        print(f"{'case':<72}{'status':>7}{'seconds':>9}{'peak MB':>9}")
        for name, args, _expected in cases(Path(folder)):
            code, seconds, peak, last = run_case(args)
            print(f"{name:<72}{code:>7}{seconds:>9.1f}{peak:>9.0f}")
            if code:
                print(f"{'':<4}{last}")
