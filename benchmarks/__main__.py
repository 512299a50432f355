"""`python -m benchmarks [name] [flags]`: run one benchmark (default: core); `--help` after a name lists its flags."""

import importlib
import sys

BENCHMARKS = {
    "core": "core_speed",
    "browser": "browser_speed",
    "replay": "replay_speed",
    "load": "load",
    "session": "session_cpu",
    "limits": "worst_input",
    "default": "default_traffic",
    "peer": "peer",
    "online": "online",
    "memory": "memory_speed",
}
USAGE = f"usage: python -m benchmarks [{'|'.join(BENCHMARKS)}] [flags]  (--help after a name: its flags)"

name = sys.argv[1] if len(sys.argv) > 1 else "core"
if name in ("-h", "--help"):
    print(USAGE)
    sys.exit(0)
if name not in BENCHMARKS:
    print(f"benchmarks: error: unknown benchmark {name[:40]!r}; choose from {', '.join(BENCHMARKS)}", file=sys.stderr)
    sys.exit(2)
try:
    module = importlib.import_module(f"benchmarks.{BENCHMARKS[name]}")
except ImportError as exc:  # the replay's need torch, the browser's Playwright: say so in one line
    needs = exc.name or exc
    print(f"benchmarks {name}: error: needs {needs}; install the extras: pip install -e '.[bench]'", file=sys.stderr)
    sys.exit(2)
module.main(sys.argv[2:])
