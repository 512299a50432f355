"""Trace files: the plain CSV, the Azure format with a byte-order mark, and precise error positions."""

from pathlib import Path

import pytest

from core.workload.traces import TraceError, TraceOptions, load_trace, parse_trace

FIXTURES = Path(__file__).parent / "fixtures"


def test_plain_csv_keeps_ids_and_order():
    """The plain format reads ids, arrivals, lengths and prompts in file order."""
    reqs = load_trace(FIXTURES / "tiny.csv")
    assert [(r.id, r.arrival, r.output_tokens, r.prompt_tokens) for r in reqs] == [
        ("q1", 0, 3, 12),
        ("q2", 0, 5, 7),
        ("q3", 1, 2, 30),
    ]


def test_plain_csv_without_optional_columns_gets_labels():
    """Without an id column requests are labelled A, B, …; prompts default to 0."""
    reqs = parse_trace("output_tokens,arrival\n4,0\n2,3\n")
    assert [(r.id, r.arrival, r.output_tokens, r.prompt_tokens) for r in reqs] == [("A", 0, 4, 0), ("B", 3, 2, 0)]


def test_azure_with_bom_maps_timestamps_to_steps():
    """Azure rows map to steps by step_ms; time_scale compresses arrivals."""
    reqs = load_trace(FIXTURES / "azure_bom.csv", TraceOptions(step_ms=50))
    assert [(r.arrival, r.output_tokens, r.prompt_tokens) for r in reqs] == [(0, 44, 374), (2, 109, 396), (20, 1, 12)]
    squeezed = load_trace(FIXTURES / "azure_bom.csv", TraceOptions(step_ms=50, time_scale=0.5))
    assert [r.arrival for r in squeezed] == [0, 1, 10]


@pytest.mark.parametrize(
    "text,where,message",
    [
        ("arrival,output_tokens\n0,3\n2,x\n", ":3:2:", "output_tokens must be a whole number in 1..1,000,000, got 'x'"),
        ("arrival,output_tokens\n-1,3\n", ":2:1:", "arrival must be a whole number in 0..1,000,000,000, got -1"),
        ("arrival,output_tokens\n0,0\n", ":2:2:", "output_tokens must be a whole number in 1..1,000,000, got 0"),
        ("arrival,output_tokens\n0,3,9\n", ":2:3:", "expected 2 fields, got 3"),
        ("arrival,output\n", ":1:2:", "unknown column 'output'; allowed: arrival, output_tokens, id, prompt_tokens"),
        ("arrival,id\n", ":1:3:", "missing required column 'output_tokens'"),
        ("id,arrival,output_tokens\nx,0,1\nx,1,1\n", ":3:1:", "id 'x' repeats line 2"),
        ("", ":1:1:", "empty file"),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,1\n", ":2:1:", "TIMESTAMP must look like"),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,5,0\n", ":2:3:", "GeneratedTokens must be"),
    ],
)
def test_errors_name_line_column_and_what_is_allowed(text, where, message):
    """Each bad input raises a ValueError subclass naming the file, line, column and the expectation."""
    with pytest.raises(TraceError) as info:
        parse_trace(text, "t.csv")
    assert isinstance(info.value, ValueError)
    assert str(info.value).startswith("t.csv" + where)
    assert message in str(info.value)


def test_binary_file_is_rejected_cleanly():
    """Bytes that are not UTF-8 give a TraceError, not a UnicodeDecodeError."""
    with pytest.raises(TraceError, match="not UTF-8"):
        parse_trace(b"\xff\xfe\x00\x01", "blob.bin")


def test_missing_file_is_a_trace_error(tmp_path):
    """A path that does not exist is reported as a TraceError naming it."""
    with pytest.raises(TraceError, match="cannot read .*: No such file"):
        load_trace(tmp_path / "nope.csv")
