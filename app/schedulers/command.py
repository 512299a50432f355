"""The one command line that reproduces the Schedulers tab's table, and what its slots and budget stand for.

`command_args(key)` is `batchviz compare` with every setting of a lineup's key as a flag: the same requests (arrivals in
ms), slots, pool, token budget, roofline and targets, so the command's serving figures equal the tab's `Line.figures`
for every entry (tests/test_lineup_reproduce.py runs it). The page shows `command_html(key)` under the table.
"""

from __future__ import annotations

import csv
import html
import io
import shlex
from dataclasses import fields
from urllib.parse import quote

from app.page.runs import arrival_step_ms
from app.schedulers.data import BLOCK_SIZE, LineupKey, budget_of
from app.simulator.state import requests_of
from core.cli.args import GENERATOR_FLAGS
from core.cli.parsers import COMPARE_TRAFFIC
from core.measure.lineup import Entry
from core.workload.request import Request
from core.workload.traffic import TrafficConfig

TRACE = "FILE"  # the placeholder for the simulator's requests written as a trace (`trace_csv`)
TRACE_NAME = "schedulers-traffic.csv"  # the name the page's download link gives that file
CHAT_STEP_MS = 1.0  # the tab's chat traffic is generated in ms: one arrival step is 1 ms
TRACE_COLUMNS = ("arrival", "output_tokens", "id", "prompt_tokens", "priority", "max_tokens")  # a plain CSV trace's


def _number(value) -> str:
    """Return a number as a flag reads it back exactly: 500 for 500.0, the shortest decimal that round-trips."""
    if isinstance(value, float):
        if value.is_integer():
            return str(int(value))
        short = f"{value:.15g}"
        return short if float(short) == value else repr(value)
    return str(value)


def entry_text(entry: Entry) -> str:
    """Return an entry as `--policies` reads it back (`tgi:prefill_chunking=0;max_waiting_tokens=5`)."""
    settings = ";".join(f"{k}={_number(v)}" for k, v in entry.knobs)
    return f"{entry.name}:{settings}" if settings else entry.name


def _generator_flags(config: TrafficConfig) -> list[str]:
    """Return the generator flags that give `config` on `compare` (its defaults are the chapter's script's)."""
    unused = {"--arrival-window" if config.arrivals == "poisson" else "--rate"}
    if "heavy" not in (config.lengths, config.prompt_lengths):
        unused.add("--tail")  # refused there: it would change nothing
    out = []
    for flag, (name, *_) in GENERATOR_FLAGS.items():
        value = getattr(config, name)
        if flag in ("--seed", "--requests") or (flag not in unused and value != getattr(COMPARE_TRAFFIC, name)):
            out += [flag, _number(value)]
    return out


def page_requests_generated(key: LineupKey) -> bool:
    """Return whether the simulator's traffic the key runs is its generator's whole config (flags give it)."""
    page = key.page_traffic
    return isinstance(page, TrafficConfig) and page.requests <= key.requests


def _traffic_flags(key: LineupKey) -> list[str]:
    """Return the flags giving the key's requests with their arrivals in ms (a trace file where flags cannot)."""
    if key.page_traffic is None:
        return [*_generator_flags(key.traffic()), "--step-ms", _number(CHAT_STEP_MS)]
    step = ["--step-ms", _number(arrival_step_ms(key.accelerator, key.model))]  # as the clock view places arrivals
    if page_requests_generated(key):
        return [*_generator_flags(key.page_traffic), *step]
    return ["--trace", TRACE, *step]


def command_args(key: LineupKey, trace: str = TRACE, json: bool = True) -> list[str]:
    """Return `batchviz compare`'s arguments that reproduce the key's lineup (`trace`: the file for `--trace`).

    Each flag is the key's setting: the traffic (generated, or the simulator's requests as a trace file), the slots
    (each engine's request cap), the pool, the token budget where an entry takes it (0 gives none: each engine's
    default on the accelerator), the roofline, the targets.
    """
    pols = [entry.policy() for entry in key.entries]
    args = ["compare", "--policies", ",".join(entry_text(e) for e in key.entries)]
    args += [trace if a == TRACE else a for a in _traffic_flags(key)]
    args += ["--slots", str(key.slots)]
    if key.kv_blocks:
        args += ["--kv-blocks", str(key.kv_blocks), "--block-size", str(BLOCK_SIZE)]
    if key.token_budget and any(p.has_token_budget and p.shares_budget for p in pols):
        args += ["--token-budget", str(max(key.token_budget, key.slots))]  # the CLI refuses one below the slots
    if not any(p.engine for p in pols):
        args += ["--cost", "roofline"]  # engine presets run on it by default; the chapter's policies on steps
    args += ["--accelerator", key.accelerator, "--model-shape", key.model]
    args += ["--ttft-target", _number(key.ttft_ms), "--itl-target", _number(key.itl_ms)]
    return args + (["--json"] if json else [])


def command_text(key: LineupKey) -> str:
    """Return the command line as a shell reads it: `batchviz compare --policies vllm,tgi ... --json`."""
    return shlex.join(["batchviz", *command_args(key)])


def trace_csv(key: LineupKey) -> str:
    """Return the simulator's requests the key runs as a plain CSV trace, arrivals in its steps (`--step-ms`)."""
    assert {f.name for f in fields(Request)} == set(TRACE_COLUMNS)  # a new field of Request needs its column
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(TRACE_COLUMNS)
    for r in requests_of(key.page_traffic)[: key.requests]:
        writer.writerow([getattr(r, name) for name in TRACE_COLUMNS])
    return out.getvalue()


def command_html(key: LineupKey) -> str:
    """Return the line under the table: the command that prints its figures, and the trace it needs where it does."""
    code = f'<code style="overflow-wrap: anywhere">{html.escape(command_text(key))}</code>'  # long on a phone
    head = (
        '<p class="bv-muted" data-claim="command">The same table on the command line (its figures under '
        "<code>serving</code>"
    )
    if key.page_traffic is None or page_requests_generated(key):
        return f"{head}): {code}</p>"
    uri = "data:text/csv;charset=utf-8," + quote(trace_csv(key), safe="")
    link = f'<a download="{TRACE_NAME}" href="{uri}">{TRACE_NAME}</a>'
    return (
        f"{head}), where {TRACE} is the simulator's {_first(key)} as a trace ({link}: arrivals in "
        f"its steps, which <code>--step-ms</code> turns into ms as the clock view does): {code}</p>"
    )


def _first(key: LineupKey) -> str:
    """Return which of the simulator's requests the key runs, in words: all 12, or the first 64 of 300."""
    held, ran = len(requests_of(key.page_traffic)), len(key.arrivals())
    return f"{ran:,} requests" if ran == held else f"first {ran:,} requests of {held:,}"


def knobs_html(key: LineupKey) -> str:
    """Return what the slots and the token budget stand for in each engine, with the budgets this lineup runs at."""
    budgets = budget_of(key)[0]
    shown = []
    for e in key.entries:
        pol = e.policy()
        if e.text() in budgets:  # each engine's own name for it: TGI's is the prompts' share of a pass
            name = pol.budget_setting or "token budget"
            shown.append(f"{html.escape(e.label())} {budgets[e.text()]:,} (<code>{name}</code>)")
        elif pol.cap_counts_decoders:  # TensorRT-LLM: a limit on a pass's tokens, not a budget it chunks under
            shown.append(f"{html.escape(e.label())} {pol.prompt_tokens_cap(()):,} (<code>{pol.cap_name}</code>)")
    here = f" Here: {', '.join(shown)} tokens a pass." if shown else ""
    return (
        '<p class="bv-muted" data-claim="knobs"><b>Slots</b> stand for each engine\'s cap on running requests: '
        "vLLM's <code>max_num_seqs</code>, SGLang's <code>max_running_requests</code>, TensorRT-LLM's "
        "<code>max_batch_size</code>; TGI has no request cap by default, so it runs every request the pool holds. "
        "<b>Token budget</b>: the most tokens a pass of vLLM (<code>max_num_batched_tokens</code>) or SGLang "
        "(<code>chunked_prefill_size</code>) holds; 0 runs each at its engine's default for the accelerator. TGI's "
        "<code>max_batch_prefill_tokens</code> and TensorRT-LLM's <code>max_num_tokens</code> are their own "
        f"settings (set in a link), whatever the budget.{here}</p>"
    )
