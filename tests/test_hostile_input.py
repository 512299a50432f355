"""Hostile and careless input: every bad flag, trace and size is refused with one line before anything is built."""

from __future__ import annotations

import argparse
import json
import re
import tracemalloc

import pytest

import core
from batchviz.cli import main
from core import LimitError, Request, TraceError, parse_trace, simulate
from core.limits import MAX_TIMELINE_CELLS

AZURE = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
PLAIN = "arrival,output_tokens\n"

# (name, trace file text or None, argv after the subcommand, message on stderr)
CLI_CASES = [
    ("window past the cell limit", None, ["simulate", "--json", "--window", "1000000000"], "over the limit of 16,777,216"),
    ("arrival window 10**30", None, ["simulate", "--arrival-window", "1" + "0" * 30], "--arrival-window: expected an"),
    ("mean tokens 10**30", None, ["simulate", "--mean-tokens", "1" + "0" * 30], "--mean-tokens: expected an integer"),
    ("max tokens 10**9", None, ["simulate", "--max-tokens", "1000000000"], "--max-tokens: expected an integer in 1..1"),
    ("step-ms underflows", AZURE, ["simulate", "--step-ms", "1e-320"], "--step-ms: expected a number in 0.001.."),
    ("time scale 1e300", AZURE, ["simulate", "--time-scale", "1e300"], "--time-scale: expected a number in 1e-06.."),
    ("poisson rate 1e-9", None, ["simulate", "--arrivals", "poisson", "--rate", "1e-9"], "--rate: expected a number"),
    ("NaN tail", None, ["compare", "--tail", "nan"], "--tail: expected a number in 0.05..4"),
    ("sweep rate 1e-300", None, ["sweep", "--rate-per-s", "1e-300"], "--rate-per-s: expected a number in 0.001.."),
    ("sweep rate too low", None, ["sweep", "--rate-per-s", "0.001", "--batches", "1"], "past the limit of"),
    ("/dev/zero", "/dev/zero", ["simulate"], "cannot read /dev/zero: not a regular file"),
    ("missing file", "/nonexistent/t.csv", ["sweep"], "cannot read /nonexistent/t.csv: No such file or directory"),
    ("sweep --rate", None, ["sweep", "--rate", "3"], "unrecognized arguments: --rate"),
    ("sweep cost unit", None, ["sweep", "--cost", "unit"], "--cost unit has no time: the sweep needs roofline or a profile"),
    ("cost junk", None, ["compare", "--cost", "fast"], "--cost: expected unit, roofline or a .json profile, got 'fast'"),
    ("cost missing profile", None, ["compare", "--cost", "/nonexistent/p.json"], "--cost: cannot read the profile /nonexistent/p.json"),
    ("preset without roofline", None, ["simulate", "--accelerator", "h200"], "--accelerator applies to --cost roofline only"),
    ("step-ms without a cost", None, ["simulate", "--step-ms", "20"], "--step-ms applies to a --trace file only"),
    ("sweep accelerator", None, ["sweep", "--accelerator", "tpu"], "--accelerator: invalid choice: 'tpu' (choose from"),
    ("sweep model shape", None, ["sweep", "--model-shape", "7b"], "--model-shape: invalid choice: '7b' (choose from"),
    ("sweep zero bandwidth", None, ["sweep", "--mem-bw-gbs", "0"], "mem_bw_gbs must be a finite number > 0"),
    ("sweep --arrivals", None, ["sweep", "--arrivals", "window"], "unrecognized arguments: --arrivals"),
    ("sweep rate with a trace", PLAIN + "0,3\n", ["sweep", "--rate-per-s", "5"], "--rate-per-s applies to generated"),
    ("header only", PLAIN, ["simulate"], "no requests; expected at least one row after the header"),
    ("header only, sweep", PLAIN, ["sweep"], "no requests; expected at least one row after the header"),
    ("zero requests", None, ["compare", "--requests", "0"], "--requests: expected an integer in 1..1000000, got '0'"),
    ("port 99999", None, ["serve", "--port", "99999"], "--port: expected an integer in 1..65535, got '99999'"),
    ("underscore digits", None, ["simulate", "--slots", "1_6"], "--slots: expected an integer in 1..4096, got '1_6'"),
    ("Arabic-Indic digits", None, ["simulate", "--seed", "\u0663"], "--seed: expected an integer in 0..4294967295"),
    ("a flag's prefix", None, ["simulate", "--see", "3"], "unrecognized arguments: --see"),
    ("seed with a trace", PLAIN + "0,3\n", ["simulate", "--seed", "3"], "--seed applies to generated traffic"),
    ("rate with window arrivals", None, ["simulate", "--rate", "2"], "--rate applies to --arrivals poisson only"),
    ("window with poisson", None, ["compare", "--arrivals", "poisson", "--arrival-window", "9"], "applies to --ar"),
    ("tail without heavy lengths", None, ["compare", "--lengths", "fixed", "--prompt-lengths", "fixed", "--tail", "1"],
     "--tail applies to heavy lengths only"),
    ("timeout under continuous", None, ["simulate", "--batch-timeout", "3"], "applies to --policy static only"),
    ("step-ms on a plain trace", PLAIN + "0,3\n", ["simulate", "--step-ms", "20"], "applies to Azure-format traces"),
    ("time scale without a trace", None, ["compare", "--time-scale", "0.5"], "--time-scale applies to a --trace file"),
    ("tokens 10**7", PLAIN + "0,10000000\n", ["simulate", "--slots", "16"], ":2:2: output_tokens must be a whole number in 1..1,000,000, got 10,000,000"),
    ("tokens 10**30", PLAIN + "0," + "1" + "0" * 30 + "\n", ["simulate"], ":2:2: output_tokens must be a whole number in 1..1,000,000, got 31 digits"),
    ("tokens 2**63-1", PLAIN + f"0,{2**63 - 1}\n", ["simulate"], ":2:2: output_tokens must be a whole number in 1..1,000,000, got 19 digits"),
    ("arrival 10**30", PLAIN + "1" + "0" * 30 + ",3\n", ["simulate"], ":2:1: arrival must be a whole number in 0..1,000,000,000"),
    ("total tokens", PLAIN + "0,1000000\n" * 1001, ["compare"], ":1002:2: output tokens pass the limit of 1,000,000,000"),
    ("a 5,000-digit number", PLAIN + "0," + "9" * 5000 + "\n", ["simulate"], ":2:2: output_tokens must be a whole number in 1..1,000,000, got 5,000 digits"),
    ("underscore in a trace", PLAIN + "0,1_0\n", ["simulate"], ":2:2: output_tokens must be a whole number in 1..1,000,000, got '1_0'"),
    ("other digits in a trace", PLAIN + "0,\u0663\n", ["simulate"], ":2:2: output_tokens must be a whole number"),
    ("Azure month 13", AZURE + "2023-13-45 25:61:61.0,5,3\n", ["simulate"], ":2:1: TIMESTAMP '2023-13-45 25:61:61.0' is not a real date and time (month must be in 1..12)"),
    ("Azure year 0", AZURE + "0000-01-01 00:00:00,5,3\n", ["simulate"], ":2:1: TIMESTAMP '0000-01-01 00:00:00' is not a real date and time (year 0 is out of range)"),
    ("Azure years 1 to 9999", AZURE + "0001-01-01 00:00:00,5,3\n9999-12-31 00:00:00,5,3\n", ["compare"], ":3:1: arrives 315,537,811,200 s after the first request"),
    ("a field over 131,072 characters", PLAIN + "0," + "7" * 200_000 + "\n", ["simulate"], ":2:1: not a readable CSV record (field larger than field limit (131072))"),
    ("replay past the model's context", None, ["replay", "--requests", "2", "--mean-prompt-tokens", "100000", "--prompt-lengths", "fixed", "--no-progress"],
     "request A: prompt 100,000 + output"),
    ("a profile without --online", None, ["replay", "--profile", "p.json", "--no-progress"], "--profile applies to --online only"),
    ("an unreadable profile", None, ["replay", "--online", "--requests", "2", "--static-profile", "/nonexistent/p.json", "--no-progress"],
     "cannot read the profile /nonexistent/p.json"),
    ("a calibrate path that is not one", None, ["calibrate", "--path", "diagonal"], "argument --path: invalid choice: 'diagonal'"),
]  # fmt: skip


@pytest.mark.parametrize("name,trace,argv,message", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_bad_cli_input_is_one_line_and_status_2(capsys, tmp_path, name, trace, argv, message):
    """Each bad input exits with status 2 and one stderr line naming what was wrong; stdout stays empty."""
    if trace is not None and not trace.startswith("/"):
        path = tmp_path / "t.csv"
        path.write_text(trace)
        argv = [*argv, "--trace", str(path)]
    elif trace is not None:
        argv = [*argv, "--trace", trace]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse refuses flags by exiting
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_non_utf8_byte_is_reported_on_its_own_line():
    """A bad byte on line 3 is reported at line 3 and its column, not at 1:1."""
    with pytest.raises(TraceError) as info:
        parse_trace(b"arrival,output_tokens\n0,1\n12,\xff\n", "t.csv")
    assert str(info.value).startswith("t.csv:3:4: byte 0xff is not UTF-8")


def test_a_quoted_field_spanning_lines_keeps_the_line_count():
    """After an id quoted over two lines, a bad row is reported at its real line (5), not the record count (4)."""
    text = 'id,arrival,output_tokens\na,0,1\n"b\nc",0,2\nd,0,x\n'
    with pytest.raises(TraceError, match=r"^t.csv:5:3: output_tokens"):
        parse_trace(text, "t.csv")


def test_row_limit_is_checked_while_reading():
    """A trace with more rows than allowed is refused at the first row past the limit."""
    with pytest.raises(TraceError, match=r"^t.csv:5:1: more than 3 requests"):
        parse_trace(PLAIN + "0,1\n" * 10, "t.csv", max_requests=3)


def _peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    except (LimitError, ValueError):
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_long_runs_build_only_the_window():
    """A request of a million tokens on 16 slots: the run and a 64-step grid cost kilobytes, not slots x drain."""
    run = simulate([Request("A", 0, 1_000_000)], 16, "static")
    assert run.drain == 1_000_000
    assert _peak_bytes(lambda: run.grid(64)) < 64 * 1024
    assert run.timeline_strings(64)[0] == "G" * 64


def test_dense_grids_past_the_limit_are_refused_before_allocation():
    """Asking for the whole drain of a long run on many slots is refused before a byte of the grid exists."""
    run = simulate([Request(str(i), 0, 1_000_000) for i in range(64)], 64, "continuous")
    assert run.slots * run.drain > MAX_TIMELINE_CELLS
    with pytest.raises(LimitError, match="cells, over the limit"):
        run.timeline_strings()
    assert _peak_bytes(lambda: run.timeline) < 64 * 1024


def test_generator_refuses_spans_before_sampling():
    """Poisson arrivals that would span past the arrival limit are refused from the config, before any sampling."""
    with pytest.raises(LimitError, match="would span about"):
        core.TrafficConfig(arrivals="poisson", rate=1e-6, requests=1_000_000)


def test_requests_refuse_values_past_the_limits():
    """A Request holds plain ints within the documented limits (no numpy ints, no 10**30)."""
    for kwargs in ({"output_tokens": 10**30}, {"arrival": 10**30}, {"prompt_tokens": 2**63}):
        with pytest.raises(LimitError, match="must be an integer in"):
            Request("A", **{"arrival": 0, "output_tokens": 1, **kwargs})
    with pytest.raises(ValueError, match="must be an integer in"):
        Request("A", 0, True)


def test_replay_refuses_a_prompt_past_the_context_before_allocating():
    """The replay checks every request against the model's context before building prompts or caches."""
    torch = pytest.importorskip("torch", reason="the replay needs torch (CI installs it)")
    torch.set_num_threads(1)
    from replay import Engine

    engine = Engine("tiny", "cpu")
    long = [Request("A", 0, 4, 1_000_000)]
    assert _peak_bytes(lambda: engine.replay(long, 4, "continuous")) < 256 * 1024
    with pytest.raises(LimitError, match="over the model's context of 8,192 positions"):
        engine.replay(long, 4, "continuous")


def test_json_floats_are_rounded(capsys):
    """JSON output carries no float noise such as 77.00000000000001."""
    assert main(["compare", "--json", "--requests", "40"]) == 0
    out = capsys.readouterr().out
    json.loads(out)
    assert not re.search(r"\d\.\d{7,}", out)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_flag_of_every_subcommand_has_help_with_its_default():
    """Each subcommand has a description; each of its flags has help that states its default."""
    from batchviz.cli import REGISTRARS
    from core.cli import build_parser

    parser, commands = build_parser(REGISTRARS)
    subs = _subparsers(parser)
    assert set(subs) == set(commands) == {"simulate", "compare", "sweep", "replay", "calibrate", "serve", "export"}
    for name, sub in subs.items():
        assert sub.description, f"{name} has no description"
        for action in sub._actions:
            if not action.option_strings or action.dest == "help":
                continue
            assert action.help and "default" in action.help, f"{name} {action.option_strings[0]} lacks its default"


def test_load_trace_is_importable_from_core():
    """DESIGN.md's Python contract: `from core import load_trace`."""
    assert core.load_trace.__module__ == "core.traces"


def test_core_imports_nothing_above_it():
    """`core` is the bottom floor: running its whole command line loads neither app, replay, Panel nor torch."""
    import subprocess
    import sys

    code = (
        "import sys; from core.cli import main; main(['compare', '--requests', '20', '--json']); "
        "print(sorted(m for m in ('app', 'replay', 'batchviz', 'panel', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
