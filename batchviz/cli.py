"""The `batchviz` entry point: each package registers its own subcommands; only this module sees them all."""

from __future__ import annotations

import sys

import app.cli
import core.cli.commands
import replay.cli

REGISTRARS = (core.cli.commands.register, replay.cli.register, app.cli.register)


def main(argv: list[str] | None = None) -> int:
    """Run `batchviz` with every subcommand; return the exit status (2 for bad input)."""
    return core.cli.commands.main(argv, REGISTRARS)


def main_exit() -> None:
    """Entry point of the `batchviz` console script."""
    sys.exit(main())
