"""An engine setting, declared once: the engine's own name, its default, its bounds or choices, and its help.

A policy lists its settings (`Policy.settings`) and validates with them; the command line makes a flag of each, a
link's entry (`vllm:scheduling_policy=priority`) parses with them, and the Schedulers tab shows them: its picker offers
each choice of a setting with choices, and its settings panel names every setting (a number is given in a link's
entry). A setting is written nowhere else, so a policy registered with a new one has its flag, its entry and its
place on the tab at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.limits import plain_float, plain_int, show_text


@dataclass(frozen=True)
class Setting:
    """One engine setting: an integer or a number in bounds, or a word among choices."""

    name: str  # the engine's own name for it (vLLM's `long_prefill_token_threshold`, say)
    default: int | float | str
    help: str  # what it does, in the engine's terms, without its default (`describe` adds it)
    low: float = 0
    high: float = 0
    choices: tuple[str, ...] = ()

    def __post_init__(self):
        if isinstance(self.default, bool) or not isinstance(self.default, (int, float, str)):
            raise TypeError(f"setting {self.name}: the default must be an int, a float or a str")
        if isinstance(self.default, str) and self.default not in self.choices:
            raise ValueError(f"setting {self.name}: the default {self.default!r} is not among {self.choices}")
        if not isinstance(self.default, str) and not self.low <= self.default <= self.high:
            raise ValueError(f"setting {self.name}: the default {self.default} is outside {self.low}..{self.high}")

    @property
    def flag(self) -> str:
        """Return its command-line flag: `--long-prefill-token-threshold`."""
        return "--" + self.name.replace("_", "-")

    def allowed(self) -> str:
        """Return what it accepts, in words: `fcfs or priority`, `an integer in 0..10,000,000`."""
        if self.choices:
            return " or ".join(self.choices)
        if isinstance(self.default, int):
            return f"an integer in {int(self.low):,}..{int(self.high):,}"
        return f"a number in {self.low:g}..{self.high:g}"

    def describe(self) -> str:
        """Return its help with what it accepts and its default, as a flag's help and the tab's picker say it."""
        default = self.default if self.choices else f"{self.default:g}"
        return f"{self.help} ({self.allowed()}; default {default})"

    def check(self, value) -> int | float | str:
        """Return `value` as this setting holds it, or refuse it naming what is allowed."""
        if self.choices:
            ok = isinstance(value, str) and value in self.choices
        elif isinstance(self.default, int):
            ok = type(value) is int and self.low <= value <= self.high
        else:
            ok = not isinstance(value, bool) and isinstance(value, (int, float)) and self.low <= value <= self.high
            value = float(value) if ok else value
        if not ok:
            raise ValueError(f"{self.name} must be {self.allowed()}, got {value!r}")
        return value

    def parse(self, text: str) -> int | float | str:
        """Return the value a link or a flag writes (`priority`, `1.2`, `2048`), or refuse it naming what is allowed."""
        raw = text.strip()
        if self.choices:
            if raw not in self.choices:
                raise ValueError(f"{self.name} must be {self.allowed()}, got {show_text(raw)}")
            return raw
        value = plain_int(raw) if isinstance(self.default, int) else plain_float(raw)
        if value is None:
            raise ValueError(f"{self.name}={show_text(raw)} is not a number ({self.allowed()})")
        return self.check(value)
