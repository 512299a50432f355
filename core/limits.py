"""The documented limits on what the core will build, checked before anything is allocated; each names itself."""

from __future__ import annotations

import re

MAX_REQUESTS = 1_000_000  # requests in one workload (trace rows, or the generator's --requests)
MAX_OUTPUT_TOKENS = 1_000_000  # output tokens of one request
MAX_PROMPT_TOKENS = 1_000_000  # prompt tokens of one request (the replay also needs it within the model's context)
MAX_TOTAL_TOKENS = 1_000_000_000  # output tokens of a whole workload
MAX_ARRIVAL_STEP = 1_000_000_000  # the trace span: the last arrival, in steps
MAX_DRAIN_STEPS = MAX_ARRIVAL_STEP + MAX_TOTAL_TOKENS  # implied by the two above: the longest a schedule can run
MAX_TIMELINE_CELLS = 16_777_216  # slots x steps of a dense state grid (timeline strings, playback tables)
MAX_STEP_ARRAY = 10_000_000  # steps of any one-value-per-step array (the sweep's step costs, the replay's clock)
MAX_TRACE_BYTES = 64 * 1024 * 1024  # a trace file read by the command line (the app's uploads are smaller)
MAX_SLOTS = 4096  # batch slots
MAX_ID_CHARS = 100  # a request id in a trace file
MAX_INT_DIGITS = 18  # plain ASCII digits in any integer we read: always fits int64


class LimitError(ValueError):
    """An input past one of the documented limits; the message names the limit and what is allowed."""


def show_number(value) -> str:
    """Return a short, always printable form of a number (Python refuses str() of ints past 4,300 digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_DIGITS = re.compile(r"[+-]?[0-9]+")


def plain_int(text: str) -> int | None:
    """Return `text` as an integer if it is plain ASCII digits (a sign allowed, at most MAX_INT_DIGITS), else None."""
    text = text.strip()
    if not _DIGITS.fullmatch(text) or len(text.lstrip("+-").lstrip("0")) > MAX_INT_DIGITS:
        return None
    return int(text)


def parse_int(text: str, name: str, low: int, high: int) -> int:
    """Return `text` as an integer in [low, high]: plain ASCII digits only (no `1_0`, no other scripts' digits)."""
    text = text.strip()
    if not _DIGITS.fullmatch(text):
        raise ValueError(f"{name} must be a whole number in {low:,}..{high:,}, got {_quote(text)}")
    value = plain_int(text)
    if value is None:
        digits = len(text.lstrip("+-").lstrip("0"))
        raise LimitError(f"{name} must be a whole number in {low:,}..{high:,}, got {digits:,} digits")
    if not low <= value <= high:
        raise LimitError(f"{name} must be a whole number in {low:,}..{high:,}, got {value:,}")
    return value


def _quote(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:37] + "...")


def check_range(name: str, value, low, high) -> None:
    """Raise LimitError unless low <= value <= high (NaN is never in range)."""
    if not (low <= value <= high):
        raise LimitError(f"{name} must be in {_plain(low)}..{_plain(high)}, got {show_number(value)}")


def _plain(bound) -> str:
    return f"{bound:,}" if isinstance(bound, int) else f"{bound:g}"


def check_cells(slots: int, steps: int, what: str = "the timeline") -> None:
    """Raise LimitError before building a dense grid of slots x steps cells past MAX_TIMELINE_CELLS."""
    if slots * steps > MAX_TIMELINE_CELLS:
        raise LimitError(
            f"{what} would be {slots:,} slots x {steps:,} steps = {slots * steps:,} cells, over the limit of "
            f"{MAX_TIMELINE_CELLS:,}; ask for a shorter window (at most {MAX_TIMELINE_CELLS // max(slots, 1):,} "
            f"steps on {slots:,} slots)"
        )


def check_steps(steps: int, what: str) -> None:
    """Raise LimitError before building a per-step array longer than MAX_STEP_ARRAY."""
    if steps > MAX_STEP_ARRAY:
        raise LimitError(f"{what} would run {steps:,} steps, over the limit of {MAX_STEP_ARRAY:,} steps")


def check_workload(num_requests: int, total_tokens: int) -> None:
    """Raise LimitError if a workload has more requests or output tokens than the limits allow."""
    if num_requests > MAX_REQUESTS:
        raise LimitError(f"{num_requests:,} requests is over the limit of {MAX_REQUESTS:,}")
    if total_tokens > MAX_TOTAL_TOKENS:
        raise LimitError(f"{total_tokens:,} output tokens in all is over the limit of {MAX_TOTAL_TOKENS:,}")
