"""The online replay: arrivals on the wall clock, the core's timed schedulers deciding, and the prediction beside it."""

import threading
from dataclasses import replace

import pytest
import torch

from core import Request, TrafficConfig, generate
from core.clock.cost import Fitted
from core.sched.timed import simulate_timed
from replay import Cancelled, Engine
from replay import online as online_mod
from replay.engine import StaticBatch
from replay.online import predicted_vs_measured, replay_online
from replay.pass_prices import KINDS, pass_errors, priced_passes
from replay.synthetic import SPIN_MS

from .helpers import check_timed_invariants

torch.set_num_threads(1)
TRAFFIC = TrafficConfig(seed=5, requests=10, arrival_window=6, mean_tokens=8, max_tokens=20, mean_prompt_tokens=12)


@pytest.fixture(scope="module")
def engine():
    """The tiny model on the CPU in fp32."""
    return Engine("tiny", device="cpu", seed=0)


def _in_ms(requests, step_ms):
    return [replace(r, arrival=r.arrival * step_ms) for r in requests]


@pytest.mark.parametrize("policy", ["continuous", "static"])
def test_online_replay_waits_for_arrivals_and_keeps_the_invariants(engine, policy):
    """Nobody starts before its wall-clock arrival; tokens are conserved; the greedy tokens equal the offline ones."""
    requests = generate(TRAFFIC)
    timed = _in_ms(requests, 15)  # a 15 ms arrival step: the engine sits idle between some of them
    result = replay_online(engine, timed, 3, policy)
    run = result.run
    check_timed_invariants(run)
    assert run.arrival_ms.max() == 15 * max(r.arrival for r in requests)
    assert run.start_ms.max() >= run.arrival_ms.max()  # the last arrival really was waited for
    assert [len(o) for o in result.outputs] == [r.output_tokens for r in timed]
    assert result.outputs == engine.replay(requests, 3, policy).outputs  # batch invariance, greedy fp32
    assert len(result.model_ms) == run.passes and 0 < result.overhead_share < 1


def test_online_replay_cancels_between_passes(engine):
    """A set cancel event stops the replay at the next pass (or wait) with Cancelled."""
    cancel = threading.Event()
    timed = _in_ms(generate(replace(TRAFFIC, requests=40)), 50)
    seen = []

    def on_pass(done, total):
        seen.append(done)
        cancel.set()

    with pytest.raises(Cancelled):
        replay_online(engine, timed, 2, "continuous", on_pass=on_pass, cancel=cancel)
    assert len(seen) == 1


# A device whose pass costs are known exactly: linear in rows, prefill and context, so a profile of it interpolates
# without error, and a clock that advances only by those costs (and by waits).
def _known_ms(rows, prefill, context):
    return 2.0 + 0.5 * rows + 0.01 * prefill + 0.001 * context


class _FakeEngine:
    """The engine's interface to the online runner, with no model: each pass advances a virtual clock."""

    device, model_name, seed = "fake", "fake", 0

    def __init__(self):
        self.real = Engine("tiny", device="cpu")
        self.clock_s = 0.0

    def check_fits(self, requests, slots):
        pass

    def warm_up(self, policy, slots):
        pass

    def sequences(self, requests):
        return self.real.sequences(requests)

    def paged_cache(self, seqs, slots):
        return self.real.paged_cache(seqs, slots)

    def new_batch(self, rows, steps):
        return StaticBatch(rows, None, None, max(s.num_prompt_tokens for s in rows))

    def clock(self):
        return self.clock_s

    def ragged_pass(self, cache, allocator, running, generators):
        for s in running:
            allocator.append(s)
        new = [s for s in running if s.num_computed_tokens == 0]
        old = [s for s in running if s.num_computed_tokens > 0]
        self._spend(_known_ms(len(old), sum(s.num_prompt_tokens for s in new), sum(s.num_tokens for s in old)))
        for s in running:
            s.num_computed_tokens = s.num_tokens
            s.token_ids.append(1)
        return 0.0

    def dense_pass(self, batch, live, generators):
        B = len(batch.rows)
        if batch.column == 0:
            self._spend(_known_ms(0, B * batch.prompt_width, 0))
            batch.column = batch.prompt_width
        else:
            self._spend(_known_ms(B, 0, B * (batch.column + 1)))
            batch.column += 1
        for s, alive in zip(batch.rows, live):
            if alive:
                s.num_computed_tokens = s.num_tokens
                s.token_ids.append(1)
        return 0.0

    def _spend(self, ms):
        self.clock_s += ms / 1e3


@pytest.mark.parametrize("policy", ["continuous", "static"])
def test_prediction_on_a_device_of_known_costs_has_no_error(policy, monkeypatch):
    """The fake device's profile predicts its online replay exactly: every figure's error is 0."""
    fake = _FakeEngine()
    monkeypatch.setattr(online_mod.time, "sleep", lambda s: setattr(fake, "clock_s", fake.clock_s + s))
    monkeypatch.setattr(online_mod, "SPIN_MS", 0.0)  # every wait sleeps, so the virtual clock lands on the arrival
    axes = ((1, 8, 64), (0, 64, 512), (0, 1024, 4096))
    grid = tuple(tuple(tuple(_known_ms(r, p, c) for c in axes[2]) for p in axes[1]) for r in axes[0])
    profile = Fitted(*axes, grid)
    requests = generate(replace(TRAFFIC, requests=30, arrival_window=40))
    timed = _in_ms(requests, 7)  # mostly busy, sometimes idle: waits and passes both count
    result = replay_online(fake, timed, 4, policy)
    check_timed_invariants(result.run)
    for name, figure in predicted_vs_measured(result.run, profile)["figures"].items():
        assert figure["error"] == pytest.approx(0, abs=1e-6), (name, figure)


def test_online_refuses_what_does_not_fit_before_allocating(engine):
    """A request past the model's context is refused before anything runs."""
    from core import LimitError

    with pytest.raises(LimitError, match="context"):
        replay_online(engine, [Request("A", 0, 10, 9000)], 2, "continuous")


def _linear_profile(path):
    axes = ((0, 1, 8, 64), (0, 64, 512), (0, 1024, 4096))
    grid = tuple(tuple(tuple(_known_ms(r, p, c) for c in axes[2]) for p in axes[1]) for r in axes[0])
    return Fitted(*axes, grid, device="cpu", model="tiny").save(path)


def test_cli_online_prints_predicted_beside_measured(tmp_path, capsys):
    """`batchviz replay --online --profile F --json`: both policies, every figure predicted and measured."""
    import json

    from batchviz.cli import main

    profile = _linear_profile(tmp_path / "p.json")
    argv = ["replay", "--online", "--requests", "6", "--mean-tokens", "6", "--max-tokens", "12", "--slots", "2",
            "--step-ms", "5", "--profile", str(profile), "--no-progress"]  # fmt: skip
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["policies"]) == {"static", "continuous"}
    for policy in doc["policies"].values():
        assert len(policy["figures"]) == len(online_mod.FIGURES)
        assert all(f["measured"] > 0 and f["predicted"] > 0 for f in policy["figures"].values())
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "online replay on cpu, model tiny, 2 slots" in text and "TTFT p99 (ms)" in text and "error" in text


def test_app_online_job_reports_every_figure(monkeypatch):
    """The app's real-time replay: a profile per server, both policies online, a table row per figure."""
    from app.real_replay import view as replay_view
    from app.real_replay.view import ReplayJob, ReplayView
    from app.simulator.state import SimState

    axes = ((0, 1, 8, 64), (0, 64, 512), (0, 1024, 4096))
    grid = tuple(tuple(tuple(_known_ms(r, p, c) for c in axes[2]) for p in axes[1]) for r in axes[0])
    profile = Fitted(*axes, grid)
    monkeypatch.setitem(replay_view._PROFILES, ("tiny", "cpu"), {"continuous": profile, "static": profile})
    job = ReplayJob(generate(replace(TRAFFIC, requests=5)), 2, online=True)
    assert job.start() == ""
    while not job.done:
        threading.Event().wait(0.02)
    assert job.error == "", job.error
    assert job.result["step_ms"] == max(1.0, round(profile.pass_ms(2, 0, 256)))
    check_timed_invariants(job.result["continuous"].run)
    view = ReplayView(state=SimState())
    html_text = view._render_online(job.result)[0].object
    assert html_text.count("<tr data-figure=") == len(online_mod.FIGURES)
    assert 'data-replay="online"' in html_text and view.measured


@pytest.mark.parametrize("policy", ["continuous", "static"])
def test_passes_priced_by_the_cost_that_ran_them_cost_what_they_took(policy):
    """Passes re-priced with the cost that ran them are priced at what each took; twice as slow shows 2 everywhere.

    The run is the simulator's, so its cost is known exactly: the wake and static's rectangles included.
    """
    axes = ((1, 8, 64), (0, 64, 512), (0, 1024, 4096))
    grid = tuple(tuple(tuple(_known_ms(r, p, c) + 0.002 * r * p for c in axes[2]) for p in axes[1]) for r in axes[0])
    cost = Fitted(*axes, grid, prefill_rows=policy == "static", wake_ms=3.0, wake_gap_ms=20.0)
    slow = replace(cost, ms=tuple(tuple(tuple(2 * v for v in c) for c in p) for p in grid), wake_ms=6.0)
    timed = _in_ms(generate(replace(TRAFFIC, requests=40, arrival_window=60)), 12)
    run = simulate_timed(timed, 3, policy, cost)
    price, gap = priced_passes(run, cost)
    assert price == pytest.approx(run.pass_end_ms - run.pass_start_ms, rel=1e-9)
    assert (gap > SPIN_MS).any() and (gap[run.pass_prefill > 0] == 0).any()  # both kinds of prompt pass are in it
    errors = pass_errors(simulate_timed(timed, 3, policy, slow), cost)
    assert set(errors) == set(KINDS)
    for kind, e in errors.items():
        assert e["passes"] > 0 and e["ratio"] == pytest.approx(2.0, rel=1e-9), (kind, e)
    assert sum(e["passes"] for e in errors.values()) == simulate_timed(timed, 3, policy, slow).passes
