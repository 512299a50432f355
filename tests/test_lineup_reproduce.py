"""The Schedulers tab's command line reproduces its table: `batchviz compare` prints the tab's serving figures.

The command is the one string the page shows (`app.schedulers.command.command_text`), split as a shell splits it and
run through the core's `main`: for every entry, the serving figures it computes are the tab's `Line.figures` exactly
(caught as `compare` computes them), and its `--json` prints them as it prints any figures.
"""

from __future__ import annotations

import dataclasses
import json
import shlex

import pytest

from app.schedulers import command
from app.schedulers.command import TRACE, command_html, command_text, knobs_html, trace_csv
from app.schedulers.data import LineupKey, shared_lineup
from app.schedulers.view import SchedulersView
from app.simulator.state import requests_of
from core.cli import commands, report
from core.measure.lineup import parse_entries
from core.workload.traffic import TrafficConfig

DEFAULT = SchedulersView().key()  # the tab as it opens
OTHER = LineupKey(  # every setting changed: seed, rate, priority share, slots, a limited pool, a budget, settings
    parse_entries(
        "vllm:scheduling_policy=priority,tgi:prefill_chunking=0;waiting_served_ratio=1.2,sglang,trtllm-max-util"
    ),
    seed=7,
    requests=48,
    rate_per_s=25.0,
    priority_share=30,
    slots=5,
    kv_blocks=900,
    token_budget=100,
    ttft_ms=750.0,
    itl_ms=12.5,
    accelerator="a100-80gb",
    model="llama3-8b",
)
CHAPTER = LineupKey(parse_entries("continuous,sjf"), slots=6)  # no engine preset: the command names the roofline
PAGE = LineupKey(  # the simulator's generated traffic, whole: flags give it, its arrival steps turned into ms
    parse_entries("vllm,trtllm-no-evict"), requests=64, page_traffic=TrafficConfig(seed=3, requests=40)
)


def _run(argv: list[str], capsys, monkeypatch) -> tuple[dict, list]:
    """Run `compare` in-process; return its JSON and the serving figures it computed, unrounded, in order."""
    caught = []

    def serving_metrics(*args, **kwargs):
        figures = real(*args, **kwargs)
        caught.append(figures)
        return figures

    real = commands.serving_metrics
    monkeypatch.setattr(commands, "serving_metrics", serving_metrics)
    assert commands.main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out), caught


def _reproduces(key: LineupKey, capsys, monkeypatch, trace: str | None = None) -> str:
    """Assert the key's command prints the tab's figures for every entry; return the command."""
    text = command_text(key)
    argv = shlex.split(text)
    assert argv[:2] == ["batchviz", "compare"] and argv[-1] == "--json"
    argv = [trace if a == TRACE and trace else a for a in argv[1:]]
    doc, caught = _run(argv, capsys, monkeypatch)
    lines = shared_lineup(key)
    assert [dataclasses.asdict(f) for f in caught] == [dataclasses.asdict(line.figures) for line in lines]
    printed = {line.entry.text(): json.loads(report.dumps(line.figures.as_dict())) for line in lines}
    assert {k: v for k, v in doc["serving"].items() if k in printed} == printed
    assert doc["serving"]["unit"] == "ms"
    assert (doc["serving"]["ttft_target"], doc["serving"]["itl_target"]) == (key.ttft_ms, key.itl_ms)
    return text


def test_the_default_tabs_command_prints_its_figures(capsys, monkeypatch):
    text = _reproduces(DEFAULT, capsys, monkeypatch)
    assert text == (
        "batchviz compare --policies vllm,tgi,sglang,trtllm-no-evict --seed 4 --requests 64 --arrivals poisson "
        "--rate 0.04 --mean-tokens 128 --tail 1.2 --mean-prompt-tokens 512 --step-ms 1 --slots 8 "
        "--accelerator h100-sxm --model-shape llama2-7b --ttft-target 500 --itl-target 50 --json"
    )
    assert "--token-budget" not in text and "--cost" not in text  # each engine's default budget, on the roofline


def test_a_changed_tabs_command_prints_its_figures(capsys, monkeypatch):
    """Another seed, rate, share, slots, a limited pool, a budget, entries with settings, targets and presets."""
    text = _reproduces(OTHER, capsys, monkeypatch)
    for flag in (
        "--seed 7", "--requests 48", "--rate 0.025", "--high-priority-share 0.3", "--slots 5", "--kv-blocks 900",
        "--block-size 16", "--token-budget 100", "--accelerator a100-80gb", "--model-shape llama3-8b",
        "--ttft-target 750", "--itl-target 12.5",
    ):  # fmt: skip
        assert f" {flag} " in text, flag
    assert (
        "'vllm:scheduling_policy=priority,tgi:prefill_chunking=0;waiting_served_ratio=1.2,sglang,trtllm-max-util'"
        in text
    )


def test_the_chapters_policies_name_the_roofline(capsys, monkeypatch):
    assert " --cost roofline " in _reproduces(CHAPTER, capsys, monkeypatch)


def test_the_simulators_generated_traffic_is_given_by_flags(capsys, monkeypatch):
    text = _reproduces(PAGE, capsys, monkeypatch)
    assert "--requests 40" in text and "--seed 3" in text and "--trace" not in text


def test_the_simulators_requests_need_the_trace_file_the_page_offers(capsys, monkeypatch, tmp_path):
    """A part of the simulator's traffic (or an upload): the command names FILE, the page links it as a CSV."""
    key = dataclasses.replace(PAGE, requests=24)  # its first 24 requests of 40: flags cannot give them
    html = command_html(key)
    assert f"--trace {TRACE} " in command_text(key) and 'download="schedulers-traffic.csv"' in html
    path = tmp_path / "traffic.csv"
    path.write_text(trace_csv(key))
    _reproduces(key, capsys, monkeypatch, trace=str(path))
    upload = dataclasses.replace(key, page_traffic=requests_of(PAGE.page_traffic))  # held as requests, in steps
    path.write_text(trace_csv(upload))
    assert "--trace" in command_text(upload)
    _reproduces(upload, capsys, monkeypatch, trace=str(path))


def test_entry_settings_keep_every_digit():
    """A setting's value in the command reads back as the same number (a link may hold more digits than %g)."""
    entry = parse_entries("tgi:prefill_chunking=0;waiting_served_ratio=0.123456789,vllm")[0]
    assert command.entry_text(entry) == "tgi:prefill_chunking=0;waiting_served_ratio=0.123456789"
    assert parse_entries(command.entry_text(entry) + ",vllm")[0] == entry


def test_the_tab_shows_the_command_under_the_table_and_what_slots_and_budget_stand_for():
    view = SchedulersView()
    view.__panel__()
    assert view.command.object == ""  # with the table: after the guess
    view.guess = 0
    assert command_text(view.key()).replace("'", "&#x27;") in view.command.object
    knobs = view.knobs.object
    for words in ("max_num_seqs", "max_running_requests", "max_batch_size", "TGI has no request cap by default"):
        assert words in knobs
    words = knobs_html(DEFAULT)  # H100: each engine's own, in its own name; TensorRT-LLM's limit too
    for said in (
        "vLLM 8,192 (<code>max_num_batched_tokens</code>)",
        "TGI 4,096 (<code>max_batch_prefill_tokens</code>)",
        "SGLang 8,192 (<code>chunked_prefill_size</code>)",
        "TensorRT-LLM no-evict 8,192 (<code>max_num_tokens</code>) tokens a pass",
    ):
        assert said in words
    assert view.token_budget == 0 and view.inputs["token_budget"].start == 0
    assert "0: each engine's default" in view.inputs["token_budget"].name


@pytest.mark.parametrize("budget, refused", [(0, False), (64, False), (10, True)])
def test_the_budget_is_each_engines_default_or_at_least_64(budget, refused):
    view = SchedulersView()
    view.__panel__()
    messages = view.apply_query({"s_budget": [str(budget)]})
    assert bool(messages) == refused, messages
    assert view.token_budget == (0 if refused else budget)
    if refused:
        assert "the token budget is 0 (each engine's default) or at least 64" in messages[0]


def test_a_policy_without_a_default_budget_asks_for_one():
    view = SchedulersView()
    view.__panel__()
    messages = view.apply_query({"schedulers": ["continuous,chunked"]})
    assert "chunked prefill has no engine's default token budget: set the token budget" in " ".join(messages)
    assert not view.apply_query({"schedulers": ["continuous,chunked"], "s_budget": ["512"]})
