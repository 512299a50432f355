"""Trace upload: a file input that refuses big files in the browser, and the core's parser on the server."""

from __future__ import annotations

import base64
import binascii

import param
from panel.reactive import ReactiveHTML

from core.limits import LimitError
from core.workload.request import Request
from core.workload.traces import TraceError, parse_trace

MAX_TRACE_BYTES = 2_000_000
MAX_TRACE_REQUESTS = 5_000
# What one upload may ask of the server, checked before anything runs (the command line takes far more): its drain on
# one slot (the last arrival plus every output token), which bounds every run's passes and so its memory, and the
# tokens its requests reserve at once, which bounds the KV pool an unlimited run counts blocks in (simulator/state.py).
MAX_PAGE_STEPS = 500_000
MAX_PAGE_TOKENS = 10_000_000


class TraceUpload(ReactiveHTML):
    """A file input that sends one file as an `upload` event; a file over `max_bytes` is refused before sending.

    Bokeh's own FileInput sends any file whole over the websocket, and one bigger than the server's message limit
    closes the session; here the browser checks the size first and sends only the name and size of a refused file.
    """

    upload = param.Dict(default={}, doc="{n, name, size, data}: data is base64, empty when refused in the browser")
    max_bytes = param.Integer(default=MAX_TRACE_BYTES, doc="Largest file the browser will send")
    label = param.String(default="Trace file (CSV or Azure)")

    _template = """
    <div class="bv-upload" id="wrap" style="font-size: 13px; margin: 0 0 0 5px;">
      <label for="file" id="caption" style="display: block; margin-bottom: 4px;">${label}</label>
      <input id="file" type="file" accept=".csv,.txt" onchange="${script('pick')}"></input>
    </div>
    """
    _scripts = {
        "pick": """
        const f = file.files[0];
        if (!f) return;
        state.n = (state.n || 0) + 1;
        const n = state.n;
        file.value = '';  // the same file may be picked again
        if (f.size > data.max_bytes || f.size === 0) {
          data.upload = {n: n, name: f.name, size: f.size, data: ''};
          return;
        }
        const reader = new FileReader();
        reader.onload = () => {
          data.upload = {n: n, name: f.name, size: f.size, data: reader.result.split(',', 2)[1] || ''};
        };
        reader.readAsDataURL(f);
        """
    }


def decode_upload(event: dict) -> tuple[bytes | None, str, int]:
    """Return (file bytes or None when not sent, file name, size the browser reported) from an upload event."""
    name = str(event.get("name") or "upload")[:200]
    size = event.get("size")
    size = size if isinstance(size, int) and size >= 0 else -1
    try:
        data = base64.b64decode(str(event.get("data") or ""), validate=True)
    except (binascii.Error, ValueError):
        data = None
    return data, name, size


def read_upload(data: bytes | None, filename: str, size: int | None = None) -> tuple[list[Request] | None, str]:
    """Return (requests, "") for a good file, or (None, message) naming what was wrong and what is allowed."""
    name = filename or "upload"
    size = max(size or 0, len(data or b""))  # the browser's word, or what actually arrived, whichever is larger
    if size > MAX_TRACE_BYTES:
        return None, f"{name}: {size:,} bytes is over the {MAX_TRACE_BYTES:,}-byte limit for uploads."
    if not data:
        return None, f"{name}: the file is empty; expected a CSV trace."
    try:
        requests = parse_trace(data, name, max_requests=MAX_TRACE_REQUESTS)
    except (TraceError, LimitError) as exc:
        return None, str(exc)
    if not requests:
        return None, f"{name}: no requests in the file; expected at least one row after the header."
    message = page_bound(requests, name)
    return (None, message) if message else (requests, "")


def page_bound(requests: list[Request], name: str) -> str:
    """Return "" when the page can run these requests, else one line naming what is too much and what is allowed."""
    steps = max(r.arrival for r in requests) + sum(r.output_tokens for r in requests)
    if steps > MAX_PAGE_STEPS:
        return (
            f"{name}: the last arrival plus every output token come to {steps:,} steps (the drain on one slot); the "
            f"page runs at most {MAX_PAGE_STEPS:,} (fewer or shorter requests; the command line, "
            "`batchviz simulate --trace`, takes more)."
        )
    # A contiguous cache (and a static row) reserves each request's prompt plus the longest answer in the traffic.
    tokens = sum(r.prompt_tokens for r in requests) + len(requests) * max(r.output_tokens for r in requests)
    if tokens > MAX_PAGE_TOKENS:
        return (
            f"{name}: every prompt plus the longest answer for each request come to {tokens:,} tokens (what a "
            f"contiguous KV cache reserves); the page runs at most {MAX_PAGE_TOKENS:,} (the command line, "
            "`batchviz simulate --trace`, takes more)."
        )
    return ""
