"""The documented limits on what the core builds or reads, checked before anything is allocated; each names itself."""

from __future__ import annotations

import errno
import math
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

MAX_REQUESTS = 1_000_000  # requests in one workload (trace rows, or the generator's --requests)
MAX_OUTPUT_TOKENS = 1_000_000  # output tokens of one request
MAX_PROMPT_TOKENS = 1_000_000  # prompt tokens of one request (the replay also needs it within the model's context)
MAX_PRIORITY = 1_000_000  # |priority| of one request: any integer class, lower first (vLLM's convention)
MAX_TOTAL_TOKENS = 1_000_000_000  # output tokens of a whole workload
MAX_ARRIVAL_STEP = 1_000_000_000  # the trace span: the last arrival, in steps
MAX_DRAIN_STEPS = MAX_ARRIVAL_STEP + MAX_TOTAL_TOKENS  # implied by the two above: the longest a schedule can run
MAX_TIMELINE_CELLS = 16_777_216  # slots x steps of a dense state grid (timeline strings, playback tables)
MAX_STEP_ARRAY = 10_000_000  # steps of any one-value-per-step array (the sweep's step costs, the replay's clock)
MAX_TRACE_BYTES = 64 * 1024 * 1024  # a trace file read by the command line (the app's uploads are smaller)
MAX_SLOTS = 4096  # batch slots
MAX_ID_CHARS = 100  # a request id in a trace file
MAX_INT_DIGITS = 18  # plain ASCII digits in any integer we read: always fits int64
MAX_PROFILE_BYTES = 16 * 1024 * 1024  # a profile JSON file (--cost, --profile, --static-profile)
MAX_PROFILE_POINTS = 100_000  # grid points in a profile (`batchviz calibrate` measures 168)
MAX_PROFILE_AXIS = 1_000_000_000  # the largest value on a profile's axes (rows, prefill or context tokens)
MAX_PASS_MS = 3_600_000.0  # one forward pass in a profile: at most an hour


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


_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def plain_float(text: str) -> float | None:
    """Return `text` as a finite number if it is a plain ASCII decimal (sign, dot, exponent; no `1_0`, nan, inf)."""
    text = text.strip()
    if len(text) > 40 or not _DECIMAL.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def parse_float(text: str, name: str, low: float, high: float) -> float:
    """Return `text` as a number in [low, high]: ASCII digits, one optional dot and exponent (no `1_0`, nan, inf)."""
    text = text.strip()
    if not _DECIMAL.fullmatch(text):
        raise ValueError(f"{name} must be a number in {low:g}..{high:g} (plain ASCII decimal), got {_quote(text)}")
    value = float(text)
    if not low <= value <= high:  # 1e-320 underflows past a positive low bound; 1e400 is inf
        raise LimitError(f"{name} must be a number in {low:g}..{high:g}, got {_quote(text)}")
    return value


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


MAX_PREFILL_PASSES = 1_000_000  # passes a token budget needs for the prompts alone (each one recorded on its own)


def check_prefill_passes(prompts: Sequence[int], budget: int, cap: int = 0, slots: int = 1) -> None:
    """Raise LimitError, before anything runs, if the prompts alone need more passes than the limit.

    A pass holds at most `budget` prompt tokens, at most `cap` of one prompt (0: the budget) and chunks of at most
    `slots` prompts, so the prompts need at least the larger of their tokens over the budget and their chunks over
    the slots: a per-prompt cap (vLLM's long_prefill_token_threshold) can need far more passes than the budget.
    """
    total = sum(prompts)
    by_budget = -(-total // budget)
    per_prompt = min(cap or budget, budget)
    # A prompt's chunks are at most its tokens over the chunk, plus one: counted one by one only near the limit.
    if max(by_budget, -(-(total // per_prompt + len(prompts)) // slots)) <= MAX_PREFILL_PASSES:
        return
    by_chunks = -(-sum(-(-p // per_prompt) for p in prompts) // slots)
    passes = max(by_budget, by_chunks)
    if passes <= MAX_PREFILL_PASSES:
        return
    if by_chunks > by_budget:
        raise LimitError(
            f"the prompts ({total:,} tokens) in chunks of at most {per_prompt:,} tokens on {slots:,} slots need at "
            f"least {passes:,} passes, over the limit of {MAX_PREFILL_PASSES:,}; allow more tokens of one prompt "
            f"a pass, or more slots"
        )
    least = -(-total // MAX_PREFILL_PASSES)
    raise LimitError(
        f"the prompts ({total:,} tokens) need at least {passes:,} passes of {budget:,} tokens, over the "
        f"limit of {MAX_PREFILL_PASSES:,}; give a token budget of at least {least:,}"
    )


def check_workload(num_requests: int, total_tokens: int) -> None:
    """Raise LimitError if a workload has more requests or output tokens than the limits allow."""
    if num_requests > MAX_REQUESTS:
        raise LimitError(f"{num_requests:,} requests is over the limit of {MAX_REQUESTS:,}")
    if total_tokens > MAX_TOTAL_TOKENS:
        raise LimitError(f"{total_tokens:,} output tokens in all is over the limit of {MAX_TOTAL_TOKENS:,}")


def show_name(name) -> str:
    """Return a file name as it can be shown on one line: as is when printable, else quoted like Python's repr."""
    text = str(name)
    return text if text.isprintable() and text.strip() == text and text else repr(text)


def show_text(text: str, limit: int = 40) -> str:
    """Return `text` as a message echoes it: quoted on one line, cut to `limit` characters with an ellipsis."""
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def one_line(text: str) -> str:
    """Return `text` with every control or unprintable character escaped, so a message stays one line."""
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def read_regular_file(path: str | Path, limit: int, what: str) -> bytes:
    """Return a regular file's bytes, at most `limit`; a pipe or device is refused before it is opened for reading."""
    try:
        info = os.stat(path)  # follows links: a link to /dev/zero is a device
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"not a regular file; expected a {what} file")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))  # never waits for a writer
    except ValueError:  # a NUL in the name
        raise OSError(errno.EINVAL, "the name holds a NUL character") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())  # the file opened, which may not be the one stat saw
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"not a regular file; expected a {what} file")
        if info.st_size > limit:
            raise OSError(errno.EFBIG, f"{info.st_size:,} bytes is over the {limit:,}-byte limit for {what} files")
        data = f.read(limit + 1)  # the file may have grown since fstat
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"over the {limit:,}-byte limit for {what} files")
    return data


def check_writable(path: str | Path) -> None:
    """Raise OSError (naming why) unless a file can be written at `path`: probed now, before anything is built."""
    text = str(path)
    if not text or "\0" in text:
        raise OSError(errno.EINVAL, "expected a file name" if not text else "the name holds a NUL character")
    target, folder = Path(text), Path(text).parent
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, "it is a directory; expected a file name")
    if target.exists() and not target.is_file():
        raise OSError(errno.EINVAL, "not a regular file")
    if not folder.is_dir():
        raise FileNotFoundError(errno.ENOENT, f"No such file or directory (no directory {show_name(folder)})")
    try:
        if target.exists():
            os.close(os.open(target, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK))  # writable, and left unchanged
        else:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            os.unlink(target)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot create a file there ({exc.strerror or exc})") from None
