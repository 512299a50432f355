"""The peer benchmark's machinery: a Llama with our weights computes our function; the peer follows our schedule."""

import json

import torch

from benchmarks import peer as peer_bench
from benchmarks.peer_engine import peer_model, run_continuous, run_static
from core import TrafficConfig, generate, simulate
from replay import Engine
from replay.attention import ReferenceAttention

torch.set_num_threads(1)
WORKLOAD = TrafficConfig(seed=3, requests=24, arrival_window=8, mean_tokens=12, max_tokens=40, mean_prompt_tokens=20)


def test_the_peer_model_computes_our_model():
    """Same weights mapped into Llama (rotary pairs reordered): logits at every position equal ours."""
    engine = Engine("tiny")
    peer = peer_model(engine)
    ids = torch.randint(0, engine.model.config.vocab_size, (50,), generator=torch.Generator().manual_seed(0))
    ours = engine.model.logits(engine.model(ids, torch.arange(50), ReferenceAttention()))  # (50, V)
    with torch.inference_mode():
        theirs = peer(ids[None]).logits[0]  # (50, V)
    torch.testing.assert_close(theirs, ours, rtol=1e-4, atol=1e-4)


def test_the_peer_follows_our_schedule_and_writes_our_tokens():
    """On the same requests both engines generate the same greedy tokens; the peer's passes equal our steps +- 1%."""
    engine = Engine("tiny")
    peer = peer_model(engine)
    requests = generate(WORKLOAD)
    for policy, run_peer in (("continuous", run_continuous), ("static", run_static)):
        ours = engine.replay(requests, 4, policy)
        theirs = run_peer(peer, simulate(requests, 4, policy), engine)
        steps = int((ours.rows_per_step > 0).sum())
        assert abs(theirs.passes - steps) <= max(1, 0.01 * steps), (policy, theirs.passes, steps)
        assert theirs.tokens == int(ours.tokens_per_step.sum()) == sum(r.output_tokens for r in requests)
        assert [theirs.outputs[r.id] for r in ours.run.requests] == ours.outputs


def test_the_peer_bench_prints_both_engines_in_json(capsys):
    """`./dev bench peer --json`: tokens/s for both engines and policies, the checks, and our overhead share."""
    peer_bench.main(["--requests", "12", "--model", "tiny", "--json"])
    doc = json.loads(capsys.readouterr().out)
    for side in ("ours", "peer"):
        assert set(doc[side]) == {"continuous", "static"} and all(v > 0 for v in doc[side].values())
    for check in doc["checks"].values():
        assert check["steps_match"] and check["tokens"] == check["peer_tokens"]
        assert 0 < check["overhead_share"] < 1
    assert doc["ratio"]["continuous"] == doc["ours"]["continuous"] / doc["peer"]["continuous"]
