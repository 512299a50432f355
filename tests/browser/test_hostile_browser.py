"""Hostile uploads and URLs in the browser: a message each, and the session, the picture and the URL keep working."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from core import simulate
from core.chapter_traffic import chapter_traffic
from core.traces import parse_trace

from .helpers import core_run, open_app, wait_for_timeline
from .pixels import read_timeline

GOOD = "id,arrival,output_tokens\nx,0,5\ny,0,2\nz,1,9\nw,4,3\n"
PLAIN = "arrival,output_tokens\n"
AZURE = "TIMESTAMP,ContextTokens,GeneratedTokens\n"

# (name, file bytes, message the page shows)
BAD_UPLOADS = [
    ("tokens 10**30", (PLAIN + "0," + "1" + "0" * 30 + "\n").encode(), "bad.csv:2:2: output_tokens must be a whole number in 1..1,000,000, got 31 digits"),
    ("arrival 10**30", (PLAIN + "1" + "0" * 30 + ",3\n").encode(), "bad.csv:2:1: arrival must be a whole number in 0..1,000,000,000"),
    ("tokens 2**63-1", (PLAIN + f"0,{2**63 - 1}\n").encode(), "bad.csv:2:2: output_tokens must be a whole number in 1..1,000,000"),
    ("Azure years 1 to 9999", (AZURE + "0001-01-01 00:00:00,5,3\n9999-12-31 00:00:00,5,3\n").encode(), "bad.csv:3:1: arrives 315,537,811,200 s after the first request"),
    ("Azure month 13", (AZURE + "2023-13-45 25:61:61.0,5,3\n").encode(), "bad.csv:2:1: TIMESTAMP '2023-13-45 25:61:61.0' is not a real date and time"),
    ("over 5,000 rows", (PLAIN + "0,1\n" * 5001).encode(), "bad.csv:5002:1: more than 5,000 requests; that is the limit"),
    ("a 0-byte file", b"", "bad.csv: the file is empty; expected a CSV trace."),
    ("3 MB", b"0" * 3_000_000, "bad.csv: 3,000,000 bytes is over the 2,000,000-byte limit for uploads."),
    ("25 MB, past the websocket's message limit", b"0" * 25_000_000, "bad.csv: 25,000,000 bytes is over the 2,000,000-byte limit"),
]  # fmt: skip


def _upload(page, name: str, data: bytes) -> None:
    page.locator("input[type=file]").first.set_input_files({"name": name, "mimeType": "text/csv", "buffer": data})


@pytest.mark.parametrize("name,data,message", BAD_UPLOADS, ids=[c[0] for c in BAD_UPLOADS])
def test_a_bad_upload_keeps_the_trace_the_view_and_the_session(page, page_errors, app_url, name, data, message):
    """After a good trace, a bad file shows its message; the trace, its picture, the reset button and the URL stay live."""
    open_app(page, app_url, "?mode=static&slots=3&seed=4")
    _upload(page, "good.csv", GOOD.encode())
    trace = parse_trace(GOOD)
    wait_for_timeline(page, simulate(trace, 3, "static").timeline_strings(64), 3)
    _upload(page, "bad.csv", data)
    expect(page.locator(".bv-message").first).to_contain_text(message, timeout=30_000)
    assert read_timeline(page, 3, 64) == simulate(trace, 3, "static").timeline_strings(64)
    expect(page.get_by_role("button", name="Use generated traffic")).to_be_visible()
    page.get_by_role("button", name="continuous").click()  # the session still answers, on the same trace
    wait_for_timeline(page, simulate(trace, 3, "continuous").timeline_strings(64), 3)
    expect(page).to_have_url(re.compile(r"mode=continuous"), timeout=15_000)


@pytest.mark.parametrize(
    "query,message",
    [
        ("?slots=1_6", "URL: slots='1_6' is not a whole number (allowed 1..64); kept 4."),
        ("?slots=%D9%A3", "URL: slots='\u0663' is not a whole number (allowed 1..64); kept 4."),
        ("?slots=" + "9" * 5000, "URL: slots='9999999999999999999999999999999999999...' is not a whole number"),
        ("?mode=" + "x" * 5000 + "&seed=%00%ff", "URL: mode='xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' is not allowed"),
    ],
    ids=["underscore", "arabic-indic digit", "5000 digits", "junk"],
)
def test_any_query_string_renders_with_a_message(page, page_errors, app_url, query, message):
    """Odd digits, a 5,000-digit number or junk: the page renders the default picture and says what it refused."""
    open_app(page, app_url, query + "&mode=continuous" if "mode=" not in query else query)
    expect(page.locator(".bv-message").first).to_contain_text(message, timeout=15_000)
    # No generator setting in the query: the page's own opening traffic, the chapter's.
    expected = core_run("continuous", 4, 4) if "seed=" in query else simulate(chapter_traffic(), 4, "continuous")
    assert read_timeline(page, 4, 64) == expected.timeline_strings(64)
    if "9" * 5000 in query:  # a number Panel itself cannot read: the page rewrites the address without it
        expect(page).to_have_url(re.compile(r"\?mode=continuous&slots=4$"), timeout=15_000)
