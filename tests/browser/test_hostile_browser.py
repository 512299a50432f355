"""Hostile uploads and URLs in the browser: a message each, and the session, the picture and the URL keep working."""

from __future__ import annotations

import logging
import re
import threading

import pytest
from playwright.sync_api import expect

from core import simulate
from core.chapter.chapter_traffic import chapter_traffic
from core.workload.traces import parse_trace

from .helpers import core_run, open_app, wait_for_timeline
from .pixels import read_timeline

# The server runs in this process (see conftest.app_url): its log records reach these loggers.
SERVER_LOGGERS = ("", "panel", "bokeh", "tornado")


class _Errors(logging.Handler):
    """Keep every record at `level` or above (errors by default), once (a record can reach two of the loggers)."""

    def __init__(self, level: int = logging.ERROR):
        super().__init__(level)
        self.records: dict[int, logging.LogRecord] = {}

    def emit(self, record: logging.LogRecord) -> None:
        self.records[id(record)] = record


@pytest.fixture
def server_log(page):
    """Fail the test when the server logged an error or a traceback while it ran: no input may put one there."""
    handler = _Errors()
    loggers = [logging.getLogger(name) for name in SERVER_LOGGERS]
    for logger in loggers:
        logger.addHandler(handler)
    yield handler
    page.wait_for_function("Bokeh.documents[0].is_idle", polling=100)  # what the page sent last is handled
    for logger in loggers:
        logger.removeHandler(handler)
    logged = [f"{r.name}: {r.getMessage()[:300]}" for r in handler.records.values()]
    assert logged == [], f"the server logged: {logged}"


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
def test_a_bad_upload_keeps_the_trace_the_view_and_the_session(
    page, page_errors, server_log, app_url, name, data, message
):
    """After a good trace, a bad file shows its message; the trace, its picture, the reset button and the URL stay live."""
    open_app(page, app_url, "?mode=static&slots=3&seed=4")
    _upload(page, "good.csv", GOOD.encode())
    trace = parse_trace(GOOD)
    wait_for_timeline(page, simulate(trace, 3, "static").timeline_strings(64), 3)
    _upload(page, "bad.csv", data)
    expect(page.locator(".bv-message").first).to_contain_text(message, timeout=30_000)
    assert read_timeline(page, 3, 64) == simulate(trace, 3, "static").timeline_strings(64)
    expect(page.get_by_role("button", name="Use generated traffic")).to_be_visible()
    page.get_by_role("radio", name="continuous").click()  # the session still answers, on the same trace
    wait_for_timeline(page, simulate(trace, 3, "continuous").timeline_strings(64), 3)
    expect(page).to_have_url(re.compile(r"\?slots=3&seed=4$"), timeout=15_000)  # continuous is the default mode


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
def test_any_query_string_renders_with_a_message(page, page_errors, server_log, app_url, query, message):
    """Odd digits, a 5,000-digit number or junk: the page renders the default picture and says what it refused."""
    open_app(page, app_url, query + "&mode=continuous" if "mode=" not in query else query)
    expect(page.locator(".bv-message").first).to_contain_text(message, timeout=15_000)
    # No generator setting in the query: the page's own opening traffic, the chapter's.
    expected = core_run("continuous", 4, 4) if "seed=" in query else simulate(chapter_traffic(), 4, "continuous")
    assert read_timeline(page, 4, 64) == expected.timeline_strings(64)
    if "9" * 5000 in query:  # a number Panel itself cannot read: the page rewrites the address without it
        expect(page).to_have_url(re.compile(r"/main\??$"), timeout=15_000)  # every setting at its default


# (?query, the message shown on the tab the link opens)
EXERCISE_QUERIES = [
    ("?tab=knee&rate=-1&itl=nan", "URL: rate=-1 is out of range 1..1000; using 1."),
    ("?tab=knee&rate=-1&itl=nan", "URL: itl='nan' is not a number (allowed 1..500); kept 50."),
    ("?tab=spread&sigma=1e309", "URL: sigma='1e309' is not a number"),
    ("?tab=temperature&bug=2", "URL: bug='2' is not allowed (use 1 or 0); kept 0."),
]


@pytest.mark.parametrize("query,message", EXERCISE_QUERIES, ids=["knee rate", "knee itl", "spread sigma", "bug"])
def test_a_refused_exercise_value_shows_on_its_tab(page, page_errors, server_log, app_url, query, message):
    """A link into an exercise with a bad value: the message is on the exercise's tab, where the learner is."""
    open_app(page, app_url, query, canvas=False)
    expect(page.locator(".bv-tab.bv-active").first).to_have_text(re.compile(r"Exercise"), timeout=15_000)
    expect(page.locator(".bv-message:visible", has_text=message)).to_have_count(1, timeout=15_000)
    # Round 4, also: the address says what the page shows, not the value refused or clamped.
    expect(page).not_to_have_url(re.compile(r"rate=-1|itl=nan|sigma=1e309|bug=2"), timeout=15_000)
    assert "tab=" in page.url


def test_a_clamped_pool_is_written_back_to_the_address(page, page_errors, server_log, app_url):
    """Round 4, also: `?tab=memory&blocks=-5` is clamped to the least pool, and the address says so."""
    from app.memory.lesson import MIN_BLOCKS

    open_app(page, app_url, "?tab=memory&blocks=-5", canvas=False)
    expect(page).to_have_url(re.compile(rf"blocks={MIN_BLOCKS}(&|$)"), timeout=15_000)


# (input's label, what is typed, the message, the value the box shows again)
KNEE_INPUTS = [
    ("Memory bandwidth, GB/s", "0", "Memory bandwidth, GB/s: 0 is not allowed (use 1 to 100,000); kept 3,350.", "3350"),
    ("Weights, billions of parameters", "-5", "Weights, billions of parameters: -5 is not allowed (use 0.01 to 2,000); kept 6.74.", "6.74"),
    ("Peak dense compute, TFLOP/s", "1e308", "Peak dense compute, TFLOP/s: 1e+308 is not allowed (use 0.01 to 100,000); kept 989.", "989"),
    ("Per-step overhead, ms", "99999999999", "Per-step overhead, ms: 1e+11 is not allowed (use 0 to 100); kept 1.", "1"),
]  # fmt: skip


@pytest.mark.parametrize("label,typed,message,kept", KNEE_INPUTS, ids=[c[0] for c in KNEE_INPUTS])
def test_a_knee_input_out_of_range_is_refused_and_restored(page, page_errors, server_log, app_url, label, typed,
                                                          message, kept):  # fmt: skip
    """A cost-model value the view does not use: a message naming the range, and the box shows the value in use."""
    open_app(page, app_url, "?tab=knee")
    box = page.get_by_label(label, exact=True)
    expect(box).to_be_visible(timeout=15_000)
    before = box.input_value()
    box.fill(typed)
    box.press("Enter")
    expect(page.locator(".bv-message:visible", has_text=message)).to_have_count(1, timeout=15_000)
    expect(box).to_have_value(before, timeout=15_000)
    assert float(before.replace(",", "")) == float(kept)


def test_malformed_websocket_traffic_is_one_line_each_and_the_server_survives(app_url):
    """Round 4, defect 14: an upgrade without Bokeh's subprotocol, frames without a msgid, junk: one line each."""
    import asyncio
    import json
    import urllib.request

    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    handler = _Errors(logging.WARNING)
    loggers = [logging.getLogger(name) for name in SERVER_LOGGERS]
    for logger in loggers:
        logger.addHandler(handler)
    origin = {"Origin": app_url.rsplit("/", 1)[0]}
    ws = app_url.replace("http://", "ws://") + "/ws"

    async def attack() -> None:
        page = urllib.request.urlopen(app_url).read().decode()
        token = re.search(r'"token":\s*"([^"]+)"', page).group(1)
        bare = await websocket_connect(HTTPRequest(ws, headers=origin))  # no subprotocol: the server closes it
        assert await bare.read_message() is None
        client = await websocket_connect(HTTPRequest(ws, headers=origin), subprotocols=["bokeh", token])
        assert "ACK" in await client.read_message()
        for frame in (json.dumps({"msgtype": "PATCH-DOC"}), "{}", "{}"):  # a message whose header has no msgid
            await client.write_message(frame)
        await asyncio.sleep(1.0)
        client.close()

    failed: list[BaseException] = []

    def run() -> None:  # a thread of its own: Playwright's sync API may hold a running loop in this one
        try:
            asyncio.run(attack())
        except BaseException as exc:  # noqa: BLE001 (re-raised below, in the test's thread)
            failed.append(exc)

    try:
        thread = threading.Thread(target=run)
        thread.start()
        thread.join(60)
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
    if failed:
        raise failed[0]
    records = list(handler.records.values())
    assert records, "the bad messages were logged"
    for record in records:
        assert record.exc_info is None and record.exc_text is None, record.getMessage()[:200]  # no traceback
        assert "\n" not in record.getMessage() and len(record.getMessage()) < 700
    # The server survives: the page still serves.
    assert urllib.request.urlopen(app_url).status == 200


def test_a_widget_value_from_the_socket_is_refused_as_a_url_value_is(caplog):
    """Round 4, defect 14: a Memory-tab pool of -3 blocks from the socket: one line, the widget put back, state kept."""
    import param

    from app.memory.view import MemoryView

    view = MemoryView()
    view._build()
    with caplog.at_level(logging.WARNING, logger="batchviz.server"), param.edit_constant(view.pool_slider):
        view.pool_slider.value_throttled = -3
    assert view.blocks == view.param.blocks.default and view.pool_slider.value == view.blocks
    lo, hi = view.param.blocks.bounds
    # The app's own lines only: a served app of an earlier test may log its sessions' ends meanwhile.
    ours = [r.getMessage() for r in caplog.records if r.name == "batchviz.server"]
    assert ours == [f"refused blocks=-3 from the page (allowed ({lo}, {hi}))"]
    with caplog.at_level(logging.WARNING, logger="batchviz.server"):
        view.budget_choice.value = 7
    assert view.budget == view.param.budget.default and view.budget_choice.value == view.budget
