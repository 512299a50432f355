"""`python -m benchmarks [name]`: run one benchmark (default: core)."""

import importlib
import sys

BENCHMARKS = {
    "core": "core_speed",
    "browser": "browser_speed",
    "replay": "replay_speed",
    "load": "load",
    "limits": "worst_input",
    "default": "default_traffic",
    "peer": "peer",
    "online": "online",
}

name = sys.argv[1] if len(sys.argv) > 1 else "core"
if name not in BENCHMARKS:
    sys.exit(f"benchmarks: unknown benchmark {name!r}; choose from {', '.join(BENCHMARKS)}")
importlib.import_module(f"benchmarks.{BENCHMARKS[name]}").main(sys.argv[2:])
