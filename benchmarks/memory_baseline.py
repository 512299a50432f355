"""The engine's cases under this checkout and a git ref's, side by side: `./dev bench memory --baseline REF`.

Each checkout runs the cases in its own process (CPU time, best of the repeats); the two take their rounds
alternately in one run, so the ratios come from the same minutes of a shared machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Run inside a checkout: only names every checkout since the folders by role holds (core.sched.engine.schedule).
CASES = r"""
import json, time
from dataclasses import replace
from core import generate
from core.kv.memory import MemoryConfig
from core.sched.engine import schedule
from benchmarks.core_speed import SYNTHETIC
requests = generate(replace(SYNTHETIC, high_priority_share=0.3))
slots, repeats = SLOTS, REPEATS
longest = max(max(1, r.prompt_tokens) + r.output_tokens for r in requests)
tight = max(-(-longest // 16), slots * 8)
cases = {
    "unlimited": lambda: schedule(requests, slots, "continuous"),
    "paged tight": lambda: schedule(requests, slots, "continuous", MemoryConfig(kv_blocks=tight)),
    "contiguous": lambda: schedule(
        requests, slots, "continuous", MemoryConfig(kv_blocks=4 * tight, allocation="contiguous")
    ),
    "chunked 256": lambda: schedule(requests, slots, "chunked", token_budget=256),
    "sjf unlimited": lambda: schedule(requests, slots, "sjf"),
    "sjf tight": lambda: schedule(requests, slots, "sjf", MemoryConfig(kv_blocks=tight)),
    "priority unlimited": lambda: schedule(requests, slots, "priority"),
    "priority tight": lambda: schedule(requests, slots, "priority", MemoryConfig(kv_blocks=tight)),
}
out = {}
for name, run in cases.items():
    best = float("inf")
    for _ in range(repeats):
        t = time.process_time(); run(); best = min(best, time.process_time() - t)
    out[name] = best
print(json.dumps(out))
"""


def _run_cases(checkout: Path, slots: int, repeats: int) -> dict[str, float]:
    """Return each case's best CPU seconds in a fresh process of `checkout`."""
    code = CASES.replace("SLOTS", str(slots)).replace("REPEATS", str(repeats))
    done = subprocess.run([sys.executable, "-c", code], cwd=checkout, env={"PYTHONPATH": str(checkout)},
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode:
        raise SystemExit(f"the cases failed in {checkout}:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def compare(ref: str, slots: int, repeats: int, rounds: int = 2) -> None:
    """Print each case's seconds under `ref` and this checkout, and their ratio, for each round."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "baseline"
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(base), ref], cwd=ROOT, check=True)
        try:
            print(f"CPU seconds, best of {repeats}, {slots} slots: {ref} against this checkout, rounds alternating")
            for k in range(rounds):
                before, now = _run_cases(base, slots, repeats), _run_cases(ROOT, slots, repeats)
                print(f"round {k + 1}:")
                for name, seconds in now.items():
                    was = before[name]
                    print(f"  {name:<20} {ref[:10]} {was:6.3f} s   this {seconds:6.3f} s   {seconds / was:5.2f}x")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)
