"""`python -m benchmarks [name]`: run one benchmark (default: core)."""

import sys

from . import core_speed

BENCHMARKS = {"core": core_speed.main}

name = sys.argv[1] if len(sys.argv) > 1 else "core"
if name not in BENCHMARKS:
    sys.exit(f"benchmarks: unknown benchmark {name!r}; choose from {', '.join(BENCHMARKS)}")
BENCHMARKS[name](sys.argv[2:])
