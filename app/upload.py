"""Trace upload: validated with the core's parser; a bad file leaves the current traffic in place."""

from __future__ import annotations

from core.request import Request
from core.traces import TraceError, parse_trace

MAX_TRACE_BYTES = 2_000_000
MAX_TRACE_REQUESTS = 5_000


def read_upload(data: bytes | None, filename: str) -> tuple[list[Request] | None, str]:
    """Return (requests, "") for a good file, or (None, message) naming what was wrong and what is allowed."""
    name = filename or "upload"
    if not data:
        return None, f"{name}: the file is empty; expected a CSV trace."
    if len(data) > MAX_TRACE_BYTES:
        return None, f"{name}: {len(data):,} bytes is over the {MAX_TRACE_BYTES:,}-byte limit for uploads."
    try:
        requests = parse_trace(data, name)
    except TraceError as exc:
        return None, str(exc)
    if not requests:
        return None, f"{name}: no requests in the file; expected at least one row after the header."
    if len(requests) > MAX_TRACE_REQUESTS:
        return None, f"{name}: {len(requests):,} requests is over the {MAX_TRACE_REQUESTS:,}-request limit."
    return requests, ""
