"""Static priced as it runs (issue 46): calibrate times the dense shapes static's replay runs, on the same backends."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from core import TrafficConfig, generate
from replay import Engine, synthetic
from replay import calibrate as cal
from replay.online import replay_online

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def engine():
    """The tiny model on the CPU in fp32."""
    return Engine("tiny", device="cpu", seed=0)


@pytest.fixture
def calls(monkeypatch):
    """Record every SDPA call: (batch, queries, keys, whether cuDNN may take it); the calls still run."""
    seen = []
    real = torch.nn.functional.scaled_dot_product_attention

    def record(q, k, v, *args, **kwargs):
        seen.append((q.shape[0], q.shape[-2], k.shape[-2], torch.backends.cuda.cudnn_sdp_enabled()))
        return real(q, k, v, *args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", record)
    return seen


def _per_pass(seen: list, layers: int) -> list:
    """Return one call per pass: every layer of a pass attends over the same shape (a short prompt: one chunk)."""
    assert len(seen) % layers == 0
    passes = [seen[i : i + layers] for i in range(0, len(seen), layers)]
    assert all(len(set(p)) == 1 for p in passes)
    return [p[0][:3] for p in passes]


def _static_replay(engine, monkeypatch, calls) -> tuple:
    """Return a small online static replay and the (batch, queries, keys) each of its passes ran."""
    monkeypatch.setattr(engine, "warm_up", lambda *args: None)  # only the replay's own passes are recorded
    requests = generate(TrafficConfig(seed=5, requests=7, mean_prompt_tokens=24, mean_tokens=6, max_tokens=12))
    requests = [replace(r, arrival=0) for r in requests]  # no waiting on the wall clock
    result = replay_online(engine, requests, 3, "static")
    shapes = _per_pass(calls, engine.model.config.n_layers)
    calls.clear()
    return result.run, shapes


def test_calibrate_times_the_shapes_static_replay_runs(engine, monkeypatch, calls):
    """Each static pass, priced at its (rows, prefill, context), ran the shape calibrate times at that point.

    A prompt pass of r members is a rectangle (r, p / r queries, p / r keys); a decode column (r, 1 query, c / r
    keys), and calibrate times it at a new key length each repeat, centred on c / r, as static decodes one more key
    every pass (a repeated key length hid cuDNN's plan per shape on an H200).
    """
    run, ran = _static_replay(engine, monkeypatch, calls)
    members = np.bincount(run.start_pass, minlength=run.passes)  # a batch's members all start in its prompt pass
    layers = engine.model.config.n_layers
    checked = set()
    for k in range(run.passes):
        prompt = run.pass_prefill[k] > 0
        rows = int(members[k] if prompt else run.pass_rows[k])
        point = (rows, int(run.pass_prefill[k]), int(run.pass_context[k]))
        if point in checked:
            continue
        checked.add(point)
        synthetic.time_dense_pass(engine, *point, slots=3)
        timed = _per_pass(calls, layers)[1:]  # the first pass warms up
        calls.clear()
        if prompt:
            assert set(timed) == {ran[k]}
        else:
            batch, queries, keys = ran[k]
            assert {(b, q) for b, q, _ in timed} == {(batch, queries)}
            lengths = [n for _, _, n in timed]
            assert len(set(lengths)) == len(lengths) == synthetic.REPEATS  # a new key length each repeat
            assert sorted(lengths)[len(lengths) // 2] == keys
    assert any(p > 0 for _, p, _ in checked) and sum(p == 0 for _, p, _ in checked) >= 3


def test_static_attention_leaves_cudnn_out(engine, monkeypatch, calls):
    """Static's dense passes, replayed and calibrated, run with the cuDNN backend off (its plan keys on the shape)."""
    _static_replay(engine, monkeypatch, calls)
    synthetic.time_dense_pass(engine, 4, 0, 400, slots=4)
    synthetic.time_dense_pass(engine, 4, 256, 0, slots=4)
    assert calls and not any(cudnn for *_, cudnn in calls)


def test_the_dense_context_axis_reaches_statics_padded_contexts():
    """gpu-check's chat workload at 64 slots: static's widest decode column is inside the dense grid's measured points.

    Before, the grid stopped at 224 keys a row for 64 rows, and the rest was extrapolated from 96 and 224.
    """
    from core.cli.parsers import COMPARE_TRAFFIC
    from core.clock.cost import UnitCost
    from core.sched.timed import simulate_timed

    chat = [replace(r, arrival=round(r.arrival * 2.0)) for r in generate(replace(COMPARE_TRAFFIC, requests=256))]
    run = simulate_timed(chat, 64, "static", UnitCost())  # gpu-check's chat workload
    widest = int(run.pass_context[run.pass_rows == 64].max())
    measured = [c for r, p, c in cal._points("dense", prefill=cal.DENSE_PREFILL, context=cal.DENSE_CONTEXT) if r == 64]
    assert widest <= max(measured)
