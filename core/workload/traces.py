"""Trace files: the plain CSV (`arrival,output_tokens[,id,prompt_tokens,priority,max_tokens]`) and Azure's trace."""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from core.limits import (
    MAX_ARRIVAL_STEP,
    MAX_ID_CHARS,
    MAX_OUTPUT_TOKENS,
    MAX_PRIORITY,
    MAX_PROMPT_TOKENS,
    MAX_REQUESTS,
    MAX_TOTAL_TOKENS,
    MAX_TRACE_BYTES,
    parse_int,
    read_regular_file,
    show_name,
)
from core.workload.request import Request, request_label

PLAIN_REQUIRED = ("arrival", "output_tokens")
PLAIN_OPTIONAL = ("id", "prompt_tokens", "priority", "max_tokens")
AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
DEFAULT_STEP_MS = 50.0
STEP_MS_RANGE = (0.001, 3_600_000.0)  # a microsecond to an hour per step
TIME_SCALE_RANGE = (1e-6, 1e6)
_TIMESTAMP = re.compile(r"(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?", re.ASCII)  # 0-9 only
_EPOCH = datetime(1970, 1, 1)  # naive: trace times are compared with each other, never with a local clock
# column -> (low, high) for the plain format
_PLAIN_BOUNDS = {
    "arrival": (0, MAX_ARRIVAL_STEP),
    "output_tokens": (1, MAX_OUTPUT_TOKENS),
    "prompt_tokens": (0, MAX_PROMPT_TOKENS),
    "priority": (-MAX_PRIORITY, MAX_PRIORITY),
    "max_tokens": (0, MAX_OUTPUT_TOKENS),
}


class TraceError(ValueError):
    """A trace file that cannot be read: names the file, the line and column, and what was expected."""

    def __init__(self, source: str, line: int, column: int, message: str):
        self.source, self.line, self.column, self.message = source, line, column, message
        where = f"cannot read {show_name(source)}" if line == 0 else f"{show_name(source)}:{line}:{column}"
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class TraceOptions:
    """How an Azure trace's wall-clock timestamps map onto steps."""

    step_ms: float = DEFAULT_STEP_MS  # one forward pass, in milliseconds
    time_scale: float = 1.0  # < 1 compresses arrivals (more load), > 1 stretches them

    def __post_init__(self) -> None:
        for name, (low, high) in (("step_ms", STEP_MS_RANGE), ("time_scale", TIME_SCALE_RANGE)):
            value = getattr(self, name)
            if not low <= value <= high:  # NaN fails too
                raise ValueError(f"{name} must be in {low:g}..{high:g}, got {value!r}")


def load_trace(path: str | Path, options: TraceOptions | None = None) -> list[Request]:
    """Return the requests of a trace file in trace order; raises TraceError naming line and column."""
    return parse_trace(read_trace_bytes(path), str(path), options)


def read_trace_bytes(path: str | Path, limit: int = MAX_TRACE_BYTES) -> bytes:
    """Return a trace file's bytes: a regular file of at most `limit` bytes (never /dev/zero or a pipe)."""
    try:
        return read_regular_file(path, limit, "CSV trace")
    except OSError as exc:
        raise TraceError(str(path), 0, 0, exc.strerror or str(exc)) from None


def parse_trace(
    data: bytes | str, source: str = "<trace>", options: TraceOptions | None = None, max_requests: int = MAX_REQUESTS
) -> list[Request]:
    """Return the requests of a trace held in memory (bytes or text), in trace order (at most `max_requests`)."""
    text = _decode(data, source) if isinstance(data, bytes) else data
    rows = _rows(text.lstrip("\ufeff"), source, max_requests)
    first = next(rows, None)
    if first is None:
        raise TraceError(source, 1, 1, "empty file; expected a header 'arrival,output_tokens' or the Azure header")
    header = [name.strip() for name in first[1]]
    if tuple(header) == AZURE_COLUMNS:
        return _parse_azure(rows, source, options or TraceOptions())
    return _parse_plain(header, rows, source)


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        message = f"byte 0x{data[exc.start]:02x} is not UTF-8; expected a CSV text file"
        raise TraceError(source, line, column, message) from None


def _rows(text: str, source: str, max_requests: int) -> Iterator[tuple[int, list[str]]]:
    """Yield (line where the record starts, fields) for each non-blank record: the header and `max_requests` rows."""
    reader = csv.reader(io.StringIO(text, newline=""))
    count, line = 0, 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            # Named at the line its record starts on: a quoted field may have run on for thousands of lines.
            raise TraceError(source, line, 1, f"not a readable CSV record ({exc})") from None
        if row:
            count += 1
            if count > max_requests + 1:
                raise TraceError(source, line, 1, f"more than {max_requests:,} requests; that is the limit")
            yield line, row
        line = reader.line_num + 1  # a quoted field may span lines: count the lines read, not the records


def _column_index(header: list[str], source: str) -> dict[str, int]:
    allowed = PLAIN_REQUIRED + PLAIN_OPTIONAL
    for col, name in enumerate(header, 1):
        if name not in allowed:
            raise TraceError(
                source,
                1,
                col,
                f"unknown column {name[:40]!r}; allowed: {', '.join(allowed)} "
                f"(or the Azure header {','.join(AZURE_COLUMNS)})",
            )
        if header.index(name) != col - 1:
            raise TraceError(source, 1, col, f"column {name!r} appears twice")
    for name in PLAIN_REQUIRED:
        if name not in header:
            raise TraceError(source, 1, len(header) + 1, f"missing required column {name!r}")
    return {name: i for i, name in enumerate(header)}


def _integer(text: str, source: str, line: int, col: int, name: str, low: int, high: int) -> int:
    try:
        return parse_int(text, name, low, high)
    except ValueError as exc:
        raise TraceError(source, line, col, str(exc)) from None


def _fields(row: list[str], width: int, source: str, line: int) -> list[str]:
    if len(row) != width:
        raise TraceError(source, line, min(len(row), width) + 1, f"expected {width} fields, got {len(row)}")
    return row


class _TokenBudget:
    """Counts output tokens as rows are read, so a trace past MAX_TOTAL_TOKENS is refused at the row that passes."""

    def __init__(self, source: str):
        self.source, self.total = source, 0

    def add(self, tokens: int, line: int, col: int) -> None:
        self.total += tokens
        if self.total > MAX_TOTAL_TOKENS:
            raise TraceError(
                self.source, line, col, f"output tokens pass the limit of {MAX_TOTAL_TOKENS:,} for a whole trace"
            )


def _parse_plain(header: list[str], rows: Iterator, source: str) -> list[Request]:
    index = _column_index(header, source)
    requests, seen, budget = [], {}, _TokenBudget(source)
    for line, row in rows:
        row = _fields(row, len(header), source, line)

        def get(name: str, row=row, line=line) -> int:
            return _integer(row[index[name]], source, line, index[name] + 1, name, *_PLAIN_BOUNDS[name])

        rid = row[index["id"]].strip() if "id" in index else request_label(len(requests))
        if "id" in index and (not rid or rid in seen or len(rid) > MAX_ID_CHARS):
            why = "is empty" if not rid else f"repeats line {seen[rid]}" if rid in seen else "is too long"
            raise TraceError(
                source, line, index["id"] + 1, f"id {rid[:40]!r} {why}; ids must be unique, 1-{MAX_ID_CHARS} chars"
            )
        seen[rid] = line
        prompt = get("prompt_tokens") if "prompt_tokens" in index else 0
        tokens = get("output_tokens")
        budget.add(tokens, line, index["output_tokens"] + 1)
        priority = get("priority") if "priority" in index else 0
        cap = get("max_tokens") if "max_tokens" in index else 0
        if cap and cap < tokens:
            raise TraceError(
                source, line, index["max_tokens"] + 1, f"max_tokens {cap:,} is below output_tokens {tokens:,}"
            )
        requests.append(Request(rid, get("arrival"), tokens, prompt, priority, cap))
    return requests


def _seconds(text: str, source: str, line: int) -> float:
    """Return a TIMESTAMP as seconds since 1970 (naive: no local time zone, no daylight-saving jumps)."""
    text = text.strip()
    match = _TIMESTAMP.fullmatch(text)
    if match:
        try:
            whole = datetime.fromisoformat(match.group(1).replace("T", " "))
        except ValueError as exc:
            raise TraceError(source, line, 1, f"TIMESTAMP {text!r} is not a real date and time ({exc})") from None
        fraction = float("0." + match.group(2)) if match.group(2) else 0.0
        return (whole - _EPOCH).total_seconds() + fraction
    raise TraceError(source, line, 1, f"TIMESTAMP must look like '2023-11-16 18:15:46.6805900', got {text[:40]!r}")


def _parse_azure(rows: Iterator, source: str, options: TraceOptions) -> list[Request]:
    parsed, budget = [], _TokenBudget(source)
    for line, row in rows:
        row = _fields(row, 3, source, line)
        seconds = _seconds(row[0], source, line)
        context = _integer(row[1], source, line, 2, "ContextTokens", 0, MAX_PROMPT_TOKENS)
        generated = _integer(row[2], source, line, 3, "GeneratedTokens", 1, MAX_OUTPUT_TOKENS)
        budget.add(generated, line, 3)
        parsed.append((line, seconds, context, generated))
    t0 = min((s for _, s, _, _ in parsed), default=0.0)
    steps_per_s = options.time_scale * 1000.0 / options.step_ms
    requests = []
    for i, (line, seconds, context, generated) in enumerate(parsed):
        step = (seconds - t0) * steps_per_s
        if not (math.isfinite(step) and step <= MAX_ARRIVAL_STEP):
            raise TraceError(
                source,
                line,
                1,
                f"arrives {seconds - t0:,.0f} s after the first request, step {step:,.0f} at {options.step_ms:g} ms "
                f"per step and time scale {options.time_scale:g}: past the limit of {MAX_ARRIVAL_STEP:,} steps "
                "(the trace span); use a larger --step-ms or a smaller --time-scale",
            )
        requests.append(Request(request_label(i), int(step), generated, context))
    return requests
