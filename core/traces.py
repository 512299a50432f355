"""Trace files: the plain CSV (`arrival,output_tokens[,id,prompt_tokens]`) and the Azure LLM inference trace."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .request import Request, request_label

PLAIN_REQUIRED = ("arrival", "output_tokens")
PLAIN_OPTIONAL = ("id", "prompt_tokens")
AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
DEFAULT_STEP_MS = 50.0
_TIMESTAMP = re.compile(r"^(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})(?:\.(\d+))?$")


class TraceError(ValueError):
    """A trace file that cannot be read: names the file, the line and column, and what was expected."""

    def __init__(self, source: str, line: int, column: int, message: str):
        self.source, self.line, self.column, self.message = source, line, column, message
        super().__init__(f"{source}:{line}:{column}: {message}")


@dataclass(frozen=True)
class TraceOptions:
    """How an Azure trace's wall-clock timestamps map onto steps."""

    step_ms: float = DEFAULT_STEP_MS  # one forward pass, in milliseconds
    time_scale: float = 1.0  # < 1 compresses arrivals (more load), > 1 stretches them

    def __post_init__(self) -> None:
        if not self.step_ms > 0:
            raise ValueError(f"step_ms must be > 0, got {self.step_ms!r}")
        if not self.time_scale > 0:
            raise ValueError(f"time_scale must be > 0, got {self.time_scale!r}")


def load_trace(path: str | Path, options: TraceOptions | None = None) -> list[Request]:
    """Return the requests of a trace file in trace order; raises TraceError naming line and column."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TraceError(str(path), 0, 0, f"cannot read the file ({exc.strerror or exc})") from None
    return parse_trace(data, str(path), options)


def parse_trace(data: bytes | str, source: str = "<trace>", options: TraceOptions | None = None) -> list[Request]:
    """Return the requests of a trace held in memory (bytes or text), in trace order."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise TraceError(source, 1, 1, f"not UTF-8 text (byte {exc.start}); expected a CSV file") from None
    rows = [(n, row) for n, row in enumerate(csv.reader(io.StringIO(data.lstrip("\ufeff"))), 1) if row]
    if not rows:
        raise TraceError(source, 1, 1, "empty file; expected a header 'arrival,output_tokens' or the Azure header")
    header = [name.strip() for name in rows[0][1]]
    if tuple(header) == AZURE_COLUMNS:
        return _parse_azure(rows[1:], source, options or TraceOptions())
    return _parse_plain(header, rows[1:], source)


def _column_index(header: list[str], source: str) -> dict[str, int]:
    allowed = PLAIN_REQUIRED + PLAIN_OPTIONAL
    for col, name in enumerate(header, 1):
        if name not in allowed:
            raise TraceError(
                source,
                1,
                col,
                f"unknown column {name!r}; allowed: {', '.join(allowed)} "
                f"(or the Azure header {','.join(AZURE_COLUMNS)})",
            )
        if header.index(name) != col - 1:
            raise TraceError(source, 1, col, f"column {name!r} appears twice")
    for name in PLAIN_REQUIRED:
        if name not in header:
            raise TraceError(source, 1, len(header) + 1, f"missing required column {name!r}")
    return {name: i for i, name in enumerate(header)}


def _integer(text: str, source: str, line: int, col: int, name: str, low: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        value = None
    if value is None or value < low:
        raise TraceError(source, line, col, f"{name} must be an integer >= {low}, got {text.strip()!r}")
    return value


def _fields(row: list[str], width: int, source: str, line: int) -> list[str]:
    if len(row) != width:
        raise TraceError(source, line, min(len(row), width) + 1, f"expected {width} fields, got {len(row)}")
    return row


def _parse_plain(header: list[str], rows: list, source: str) -> list[Request]:
    index = _column_index(header, source)
    requests, seen = [], {}
    for line, row in rows:
        row = _fields(row, len(header), source, line)

        def get(name: str, low: int, row=row, line=line) -> int:
            return _integer(row[index[name]], source, line, index[name] + 1, name, low)

        rid = row[index["id"]].strip() if "id" in index else request_label(len(requests))
        if "id" in index and (not rid or rid in seen):
            why = "is empty" if not rid else f"repeats line {seen[rid]}"
            raise TraceError(source, line, index["id"] + 1, f"id {rid!r} {why}; ids must be unique")
        seen[rid] = line
        prompt = get("prompt_tokens", 0) if "prompt_tokens" in index else 0
        requests.append(Request(rid, get("arrival", 0), get("output_tokens", 1), prompt))
    return requests


def _seconds(text: str, source: str, line: int) -> float:
    match = _TIMESTAMP.match(text.strip())
    if not match:
        raise TraceError(source, line, 1, f"TIMESTAMP must look like '2023-11-16 18:15:46.6805900', got {text!r}")
    whole = datetime.fromisoformat(match.group(1).replace("T", " "))
    fraction = float("0." + match.group(2)) if match.group(2) else 0.0
    return whole.timestamp() + fraction


def _parse_azure(rows: list, source: str, options: TraceOptions) -> list[Request]:
    parsed = []
    for line, row in rows:
        row = _fields(row, 3, source, line)
        seconds = _seconds(row[0], source, line)
        context = _integer(row[1], source, line, 2, "ContextTokens", 0)
        generated = _integer(row[2], source, line, 3, "GeneratedTokens", 1)
        parsed.append((seconds, context, generated))
    t0 = min((s for s, _, _ in parsed), default=0.0)
    scale = options.time_scale * 1000.0 / options.step_ms
    return [
        Request(request_label(i), int((s - t0) * scale), generated, context)
        for i, (s, context, generated) in enumerate(parsed)
    ]
