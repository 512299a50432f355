"""The command line: the JSON contracts, the chapter's figures, and one-line errors with exit status 2."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from batchviz.cli import main
from core import TrafficConfig, compute_metrics, generate, simulate
from core.cli.parsers import COMPARE_TRAFFIC as COMPARE_TRAFFIC_FOR_TEST
from core.cli.report import rounded
from core.measure.metrics import compare

FIXTURES = Path(__file__).parent / "fixtures"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _run_json(capsys, *argv: str) -> dict:
    code, out, err = _run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_simulate_json_contract_from_a_trace(capsys):
    """Simulate --json has the contract's keys, per-request rows and one timeline string per slot."""
    doc = _run_json(capsys, "simulate", "--trace", str(FIXTURES / "tiny.csv"), "--slots", "2", "--policy", "static")
    assert {"policy", "slots", "requests", "timeline", "metrics"} <= doc.keys()
    assert doc["requests"][0] == {
        "id": "q1",
        "arrival": 0,
        "output_tokens": 3,
        "priority": 0,
        "max_tokens": 0,
        "start": 0,
        "finish": 3,
        "slot": 0,
    }
    assert doc["timeline"] == ["GGGPPGG", "GGGGG.."]
    for key in (
        "completed",
        "useful_tokens",
        "utilisation",
        "padding_share",
        "idle_share",
        "avg_latency",
        "p50_latency",
        "p90_latency",
        "p99_latency",
        "avg_wait",
        "drain_steps",
    ):
        assert key in doc["metrics"]


def test_simulate_generator_flags_match_the_python_api(capsys):
    """Generator flags reproduce exactly the requests and schedule the app shows for the same settings."""
    doc = _run_json(capsys, "simulate", "--seed", "7", "--requests", "20", "--slots", "3", "--window", "64")
    run = simulate(generate(TrafficConfig(seed=7, requests=20)), 3, "continuous")
    assert doc["timeline"] == run.timeline_strings(64)
    assert doc["metrics"] == rounded(compute_metrics(run, 64).as_dict())
    assert all(len(row) == 64 for row in doc["timeline"])


def test_window_nulls_what_did_not_happen(capsys):
    """With --window, a request not started in the window has null start, finish and slot."""
    doc = _run_json(capsys, "simulate", "--trace", str(FIXTURES / "tiny.csv"), "--slots", "1", "--window", "4")
    late = doc["requests"][1]  # q2 starts at 3 and finishes at 8
    assert (late["start"], late["finish"]) == (3, None)
    assert doc["requests"][2]["start"] is None and doc["requests"][2]["slot"] is None


def test_compare_default_lands_near_the_chapters_figures(capsys):
    """The default workload: continuous drains 2.5-3.5x faster and static pads 55-80% of slot-time."""
    doc = _run_json(capsys, "compare")
    assert 2.5 <= doc["ratios"]["drain"] <= 3.5
    assert 0.55 <= doc["static"]["padding_share"] <= 0.8
    assert doc["continuous"]["padding_share"] == 0


def test_compare_uniform_lengths_shrink_the_gain(capsys):
    """Exercise 2: with uniform lengths the advantage mostly disappears."""
    heavy = _run_json(capsys, "compare")["ratios"]["drain"]
    uniform = _run_json(capsys, "compare", "--lengths", "uniform")["ratios"]["drain"]
    assert uniform < 1.6 < heavy


def test_compare_text_has_the_side_by_side_table(capsys):
    """The human table lists both policies and the percentile rows."""
    code, out, _ = _run(capsys, "compare", "--requests", "40")
    assert code == 0
    for row in ("static", "continuous", "latency p50", "latency p90", "latency p99", "padding waste", "drains"):
        assert row in out


def test_sweep_reports_a_knee(capsys):
    """Sweep: bigger batches cost more per step; the knee is the largest whose p99 inter-token latency meets it."""
    doc = _run_json(capsys, "sweep", "--requests", "300", "--batches", "1,8,64,512")
    steps = [p["step_ms"] for p in doc["points"]]
    assert steps == sorted(steps)
    assert all(p["itl_p50_ms"] <= p["itl_p99_ms"] and p["decode_itl_p99_ms"] <= p["itl_p99_ms"] for p in doc["points"])
    meeting = [p["batch"] for p in doc["points"] if p["itl_p99_ms"] <= 50]
    assert doc["knee"] == max(meeting)
    assert doc["decode_knee"] == max(p["batch"] for p in doc["points"] if p["decode_itl_p99_ms"] <= 50)
    tight = _run_json(capsys, "sweep", "--requests", "300", "--batches", "1,8,64,512", "--itl-target-ms", "1")
    assert tight["knee"] is None and tight["decode_knee"] is None


def test_sweep_is_the_timed_simulation(capsys, tmp_path):
    """Generated and trace traffic: each ITL p99 is simulate_timed's, arrivals in ms; the text names both knees."""
    from dataclasses import replace

    from core import load_trace
    from core.clock.hardware import cost_model
    from core.measure.sweep import SWEEP_TRAFFIC, poisson_requests
    from core.sched.timed import simulate_timed, timed_metrics
    from core.workload.request import Request

    doc = _run_json(capsys, "sweep", "--requests", "200", "--rate-per-s", "40", "--batches", "4,32")
    requests = poisson_requests(replace(SWEEP_TRAFFIC, requests=200), 40.0)
    for p in doc["points"]:
        want = timed_metrics(simulate_timed(requests, p["batch"], "continuous", cost_model())).itl_ms["p99"]
        assert p["itl_p99_ms"] == pytest.approx(want, abs=1e-6)
    trace = tmp_path / "t.csv"
    trace.write_text("arrival,output_tokens,prompt_tokens\n0,30,100\n1,50,900\n3,20,50\n", encoding="utf-8")
    doc = _run_json(capsys, "sweep", "--trace", str(trace), "--step-ms", "5", "--batches", "1,2")
    in_ms = [Request(r.id, r.arrival * 5, r.output_tokens, r.prompt_tokens) for r in load_trace(trace)]
    want = timed_metrics(simulate_timed(in_ms, 2, "continuous", cost_model())).itl_ms["p99"]
    assert doc["points"][1]["itl_p99_ms"] == pytest.approx(want, abs=1e-6)
    code, out, _ = _run(capsys, "sweep", "--trace", str(trace), "--batches", "1,2")
    assert code == 0 and "\nknee: batch 2 " in out and "decode alone (no prefill stalls): batch 2 would meet" in out


@pytest.mark.parametrize(
    "argv,message",
    [
        (["simulate", "--slots", "0"], "argument --slots: expected an integer in 1..4096, got '0'"),
        (["simulate", "--policy", "fifo"], "argument --policy: invalid choice: 'fifo'"),
        (["compare", "--seed", "x"], "argument --seed: expected an integer in 0..4294967295, got 'x'"),
        (["simulate", "--trace", "__missing__.csv"], "cannot read __missing__.csv: No such file or directory"),
        (["sweep", "--batches", "1,a"], "--batches: expected comma-separated integers"),
        (["sweep", "--mem-bw-gbs", "0"], "--mem-bw-gbs: expected a number in 1..100000"),
        (["replay", "--device", "tpu"], "argument --device: invalid choice: 'tpu'"),
        (["replay", "--model", "huge"], "argument --model: invalid choice: 'huge'"),
        (["export", "page.html", "--requests", "65"], "argument --requests: expected an integer in 1..64, got '65'"),
        (["export", "__no_such_dir__/page.html"], "cannot write __no_such_dir__/page.html: No such file or directory"),
    ],
)
def test_bad_input_is_one_line_and_status_2(capsys, argv, message):
    """Bad flags and files print one line naming what was wrong, and exit with status 2."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse rejects flags by exiting
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_bad_trace_line_via_the_console_script(tmp_path):
    """A bad trace row through the installed entry point: file:line:column on stderr, status 2, no traceback."""
    bad = tmp_path / "bad.csv"
    bad.write_text("arrival,output_tokens\n0,4\n3,-2\n")
    proc = subprocess.run(
        [sys.executable, "-m", "core", "simulate", "--trace", str(bad)], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"python -m core simulate: error: {bad}:3:2: output_tokens must be a whole number in 1..1,000,000, got -2"
    )


def test_python_m_core_calls_itself_so():
    """`python -m core --help` names itself `python -m core` (not batchviz), and lists only the core's commands."""
    proc = subprocess.run([sys.executable, "-m", "core", "--help"], capture_output=True, text=True, check=True)
    assert proc.stdout.startswith("usage: python -m core [-h] {simulate,compare,sweep}")


REPLAY_SMALL = ["--requests", "8", "--mean-prompt-tokens", "6", "--mean-tokens", "6", "--slots", "3", "--no-progress"]


def test_replay_json_puts_measured_beside_simulated(capsys):
    """Replay --json: both policies measured on the same schedules, the simulator's prediction beside them."""
    doc = _run_json(capsys, "replay", *REPLAY_SMALL, "--device", "cpu")
    overrides = {"requests": 8, "mean_prompt_tokens": 6, "mean_tokens": 6}
    requests = generate(TrafficConfig(**{**vars(COMPARE_TRAFFIC_FOR_TEST), **overrides}))
    tokens = sum(r.output_tokens for r in requests)
    assert doc["static"]["tokens"] == doc["continuous"]["tokens"] == tokens
    assert doc["static"]["rows_computed"] >= doc["continuous"]["rows_computed"] == tokens
    predicted = compare(simulate(requests, 3, "static"), simulate(requests, 3, "continuous")).throughput_ratio
    assert doc["predicted_speedup"] == pytest.approx(predicted, abs=1e-6)
    measured = doc["continuous"]["tokens_per_s"] / doc["static"]["tokens_per_s"]
    assert doc["measured_speedup"] == pytest.approx(measured, rel=1e-5)
    assert doc["device"] == "cpu" and doc["model"] == "tiny"


def test_replay_without_torch_says_how_to_enable_it(capsys, monkeypatch):
    """Where torch is missing, replay prints one line on how to install it, and exits 2."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    code, _, err = _run(capsys, "replay", *REPLAY_SMALL)
    assert code == 2 and "the replay needs torch: pip install torch==2.13.0" in err


def test_export_page_links_nothing_even_with_panel_imported():
    """Panel registers extension scripts with Bokeh once imported; the page must still link none of them."""
    import re

    import panel  # noqa: F401

    from app.export.page import SCRIPT_BODY, build_page

    markup = SCRIPT_BODY.sub(r"\1\2", build_page(TrafficConfig(requests=3), seeds=range(1), lesson_seeds=range(1)))
    assert re.findall(r"<(?:script|link)\b[^>]*\b(?:src|href)=", markup) == []


def test_compare_on_a_clock(capsys, tmp_path):
    """--cost roofline adds the core's timed figures (arrival steps of --step-ms); unit adds none; profiles load."""
    from dataclasses import replace

    from core.clock.cost import Fitted
    from core.clock.hardware import cost_model
    from core.sched.timed import simulate_timed, timed_metrics

    doc = _run_json(capsys, "compare", "--requests", "40", "--cost", "roofline", "--step-ms", "20")
    requests = [
        replace(r, arrival=round(r.arrival * 20)) for r in generate(replace(COMPARE_TRAFFIC_FOR_TEST, requests=40))
    ]
    for policy in ("static", "continuous"):
        want = timed_metrics(simulate_timed(requests, 8, policy, cost_model()))
        assert doc["timed"][policy]["drain_ms"] == pytest.approx(want.drain_ms, abs=1e-6)
        assert doc["timed"][policy]["e2e_ms"]["p99"] == pytest.approx(want.e2e_ms["p99"], abs=1e-6)
    assert doc["timed"]["cost"] == "roofline (Llama-2 7B on H100 SXM)"
    assert "timed" not in _run_json(capsys, "compare", "--requests", "40", "--cost", "unit")
    profile = Fitted((1, 64), (0, 1024), (0, 100_000), (((5, 50), (9, 60)), ((8, 55), (12, 70)))).save(
        tmp_path / "p.json"
    )
    code, out, _ = _run(capsys, "compare", "--requests", "40", "--cost", str(profile))
    assert code == 0 and "time under the fitted" in out and "inter-token p99, ms" in out


ENGINE_CLOCK = "time: the roofline of {} on {} (engine presets are judged on a clock; --cost unit for steps)\n"


def test_engine_presets_run_on_the_roofline_by_default_and_say_so(capsys):
    """An engine preset listed: --cost roofline unless --cost is given; the chapter's policies keep unit steps.

    On unit steps a 2,048-token chunk costs what a decode does, and TGI, without a request cap, looked 3x faster.
    """
    engines = ["compare", "--requests", "40", "--policies", "vllm,tgi,sglang,trtllm-no-evict,trtllm-max-util"]
    code, out, err = _run(capsys, *engines, "--ttft-target", "500", "--itl-target", "50")
    assert code == 0, err
    assert out.startswith(ENGINE_CLOCK.format("Llama-2 7B", "H100 SXM")) and out.count("time: the roofline") == 1
    assert "time under the roofline (Llama-2 7B on H100 SXM) cost model" in out and "TTFT p50 (ms)" in out
    roofline = _run_json(capsys, *engines, "--cost", "roofline")
    assert _run_json(capsys, *engines) == roofline and roofline["timed"]["cost"] == "roofline (Llama-2 7B on H100 SXM)"
    code, out, _ = _run(capsys, *engines, "--accelerator", "a100-80gb", "--model-shape", "llama3-8b")
    assert out.startswith(ENGINE_CLOCK.format("Llama-3 8B", "A100 80GB SXM")), out.splitlines()[0]
    code, out, _ = _run(capsys, *engines, "--cost", "unit")  # steps, when asked for
    assert code == 0 and "time: " not in out and "time under" not in out
    code, out, _ = _run(capsys, "compare", "--requests", "40", "--policies", "continuous,sjf")  # the chapter's
    assert code == 0 and out.startswith("workload: ") and "time under" not in out
    code, out, _ = _run(capsys, "simulate", "--policy", "vllm")
    assert code == 0 and out.startswith(ENGINE_CLOCK.format("Llama-2 7B", "H100 SXM")) and "time under the" in out
    code, out, _ = _run(capsys, "simulate", "--policy", "continuous")
    assert code == 0 and "time: " not in out and "time under" not in out
    code, _, err = _run(capsys, "compare", "--policies", "continuous,sjf", "--accelerator", "a100-80gb")
    assert code == 2 and "--accelerator applies to --cost roofline only" in err
