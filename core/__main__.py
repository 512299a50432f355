"""`python -m core`: the core's own commands (simulate, compare, sweep), with nothing above the core imported."""

import sys

from core.cli.commands import main

sys.exit(main(prog="python -m core"))
