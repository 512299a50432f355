"""The real replay on the CPU (tiny preset): batch invariance, paged/ragged and padded forwards against a reference."""

import json
import threading
from dataclasses import replace

import numpy as np
import pytest
import torch

from core import Request, TrafficConfig, generate
from core.batch.kv_blocks import BlockAllocator
from core.batch.ragged import build_batch
from core.batch.sampling import SamplingParams
from core.batch.sequence import Sequence
from core.measure.sweep import SWEEP_TRAFFIC
from replay import PRESETS, Engine, Transformer, resolve_device
from replay.attention import (
    DenseKVCache,
    DensePaddedAttention,
    PagedKVCache,
    RaggedPagedAttention,
    ReferenceAttention,
)
from replay.sampling import make_generator, sample_rows

torch.set_num_threads(1)
CONFIG = PRESETS["tiny"]


@pytest.fixture(scope="module")
def engine():
    """The tiny model on the CPU in fp32."""
    return Engine("tiny", device="cpu", seed=0)


def _reference_logits(model: Transformer, tokens: list[int]) -> torch.Tensor:
    """Logits (L, V) at every position of one whole sequence, no cache."""
    ids = torch.tensor(tokens)
    return model.logits(model(ids, torch.arange(len(tokens)), ReferenceAttention()))


@pytest.mark.parametrize("seed,slots", [(4, 3), (11, 5)])
def test_batch_invariance_greedy(engine, seed, slots):
    """Greedy in fp32: every request's tokens are the same under continuous, under static, and alone."""
    requests = generate(TrafficConfig(seed=seed, requests=10, mean_prompt_tokens=12, mean_tokens=8, max_tokens=24))
    continuous = engine.replay(requests, slots, "continuous")
    static = engine.replay(requests, slots, "static")
    alone = [engine.replay([r], 1, "continuous").outputs[0] for r in requests]
    assert continuous.outputs == static.outputs == alone
    assert [len(o) for o in alone] == [r.output_tokens for r in requests]


def test_sjf_and_priority_replay_their_own_schedules_with_the_same_tokens(engine):
    """The replay follows sjf and priority (unlimited, and a tight paged pool): their schedules, continuous's tokens."""
    from core.kv.memory import MemoryConfig
    from core.sched.engine import as_run, schedule

    config = TrafficConfig(seed=3, requests=9, mean_prompt_tokens=10, mean_tokens=8, max_tokens=20)
    requests = generate(replace(config, high_priority_share=0.4))
    continuous = engine.replay(requests, 3, "continuous")
    pool = MemoryConfig(kv_blocks=12, block_size=16)
    for policy in ("sjf", "priority"):
        for memory in (None, pool):
            result = engine.replay(requests, 3, policy, memory=memory)
            planned = as_run(schedule(requests, 3, policy, memory or MemoryConfig()))
            assert result.run.policy == policy and result.run.start.tolist() == planned.start.tolist()
            assert result.outputs == continuous.outputs, (policy, memory)
    sjf = engine.replay(requests, 3, "sjf")
    assert sjf.run.start.tolist() != continuous.run.start.tolist()  # the order really differs on this traffic


@pytest.mark.parametrize("chunk", [None, 4], ids=["whole prompts", "prompts in chunks of 4 queries"])
def test_paged_ragged_forward_matches_the_reference(engine, chunk, monkeypatch):
    """Mixed prefill + decode in one ragged pass, then a decode-only pass: logits equal the dense reference.

    With a small chunk a prompt's queries go in chunks (round 4, defect 15: an 8,000-token prompt's scores).
    """
    from replay import attention

    if chunk:
        monkeypatch.setattr(attention, "PREFILL_QUERY_CHUNK", chunk)
    model = engine.model
    rng = np.random.default_rng(0)
    prompts = [rng.integers(0, CONFIG.vocab_size, n).tolist() for n in (5, 17, 1, 33)]
    seqs = [Sequence(str(i), i, list(p), len(p), 8) for i, p in enumerate(prompts)]
    allocator = BlockAllocator(64, 4)
    cache = PagedKVCache(CONFIG, 64, 4, "cpu", torch.float32)
    # Step 1: sequence 0 is already decoding (its prompt computed in an earlier pass); the rest prefill.
    allocator.allocate(seqs[0])
    _step(model, cache, [seqs[0]], 4)
    seqs[0].token_ids.append(7)
    for s in seqs[1:]:
        allocator.allocate(s)
    for _ in range(3):
        for s in seqs:
            allocator.append(s)
        logits = _step(model, cache, seqs, 4)  # (n, V)
        for s, row in zip(seqs, logits):
            want = _reference_logits(model, s.token_ids)[-1]
            torch.testing.assert_close(row, want, rtol=1e-4, atol=1e-4)
        for s in seqs:
            s.token_ids.append(int(rng.integers(0, CONFIG.vocab_size)))


@pytest.mark.parametrize("grouped", [True, False], ids=["one group", "a group per sequence"])
def test_cached_prefix_with_several_new_tokens_matches_the_reference(engine, grouped, monkeypatch):
    """A sequence with a cached prefix and several new tokens (and decodes beside it) attends causally over both."""
    from replay import attention

    if not grouped:
        monkeypatch.setattr(attention, "GROUP_PAIRS", 0)  # what a long prompt gets: a group of its own
    model = engine.model
    rng = np.random.default_rng(2)
    seqs = [Sequence(str(i), i, rng.integers(0, CONFIG.vocab_size, n).tolist(), n, 8) for i, n in enumerate((9, 4))]
    allocator = BlockAllocator(32, 4)
    cache = PagedKVCache(CONFIG, 32, 4, "cpu", torch.float32)
    for s in seqs:
        allocator.allocate(s)
    _step(model, cache, seqs, 4)  # both prompts cached
    seqs[0].token_ids += rng.integers(0, CONFIG.vocab_size, 6).tolist()  # 6 new tokens after a 9-token prefix
    seqs[1].token_ids.append(3)  # one decode token
    for s in seqs:
        allocator.append(s)
    batch = build_batch(seqs, 4)
    hidden = model(
        torch.as_tensor(batch.token_ids), torch.as_tensor(batch.positions), RaggedPagedAttention(cache, batch, "cpu")
    )
    first, second = (_reference_logits(model, s.token_ids) for s in seqs)
    want = torch.cat([first[9:], second[-1:]])
    torch.testing.assert_close(model.logits(hidden), want, rtol=1e-4, atol=1e-4)


def test_step_time_covers_the_model_time(engine):
    """Each step's wall time includes its model time; the rest (building, sampling, bookkeeping) is the overhead."""
    requests = generate(TrafficConfig(seed=2, requests=8, mean_prompt_tokens=10, mean_tokens=6, max_tokens=16))
    for policy in ("continuous", "static"):
        result = engine.replay(requests, 3, policy)
        ran = result.rows_per_step > 0
        assert (result.model_ms[ran] > 0).all() and (result.model_ms[~ran] == 0).all()
        assert (result.model_ms <= result.step_ms).all()
        assert 0 < result.overhead_share < 1


def _step(model, cache, seqs, block_size):
    batch = build_batch(seqs, block_size)
    hidden = model(
        torch.as_tensor(batch.token_ids), torch.as_tensor(batch.positions), RaggedPagedAttention(cache, batch, "cpu")
    )
    for s in seqs:
        s.num_computed_tokens = s.num_tokens
    return model.logits(hidden[torch.as_tensor(batch.last_token_index)])


@pytest.mark.parametrize("chunk", [None, 4], ids=["whole prompts", "prompts in chunks of 4 queries"])
def test_dense_padded_forward_matches_the_reference(engine, chunk, monkeypatch):
    """The static engine's left-padded rectangular batch: prefill and decode logits equal the reference."""
    from replay import attention

    if chunk:
        monkeypatch.setattr(attention, "PREFILL_QUERY_CHUNK", chunk)
    model = engine.model
    rng = np.random.default_rng(1)
    prompts = [rng.integers(0, CONFIG.vocab_size, n).tolist() for n in (3, 9, 6)]
    width = max(map(len, prompts))
    pad = torch.tensor([width - len(p) for p in prompts])
    cache = DenseKVCache(CONFIG, 3, width + 4, "cpu", torch.float32)
    tokens = torch.tensor([[0] * (width - len(p)) + p for p in prompts]).reshape(-1)
    positions = (torch.arange(width)[None, :] - pad[:, None]).clamp(min=0).reshape(-1)
    hidden = model(tokens, positions, DensePaddedAttention(cache, 3, 0, width, pad)).view(3, width, -1)
    seqs = [list(p) for p in prompts]
    for k in range(4):
        logits = model.logits(hidden[:, -1])
        for s, row in zip(seqs, logits):
            torch.testing.assert_close(row, _reference_logits(model, s)[-1], rtol=1e-4, atol=1e-4)
        new = [int(t) for t in rng.integers(0, CONFIG.vocab_size, 3)]
        for s, t in zip(seqs, new):
            s.append(t)
        positions = width + k - pad
        attention = DensePaddedAttention(cache, 3, width + k, 1, pad)
        hidden = model(torch.tensor(new), positions, attention).view(3, 1, -1)


def test_greedy_row_ignores_its_neighbours_and_seeded_rows_repeat():
    """A greedy row's token does not depend on the other rows' temperatures; a seeded row draws the same twice."""
    logits = torch.randn(3, 50, generator=torch.Generator().manual_seed(0))
    greedy = SamplingParams()
    for neighbours in ([0.5, 2.0], [5.0, 0.1], [0.0, 0.0]):
        params = [greedy] + [SamplingParams(temperature=t, top_k=10, seed=3) for t in neighbours]
        gens = [make_generator(p, "cpu") for p in params]
        assert sample_rows(logits, params, gens)[0] == int(logits[0].argmax())
    seeded = [SamplingParams(temperature=1.0, top_p=0.9, seed=42)] * 3
    draws = [
        [sample_rows(logits, seeded, gens) for _ in range(5)]
        for gens in ([make_generator(p, "cpu") for p in seeded] for _ in range(2))
    ]
    assert draws[0] == draws[1]
    top2 = SamplingParams(temperature=10.0, top_k=2, seed=1)
    picked = {sample_rows(logits[:1], [top2], [make_generator(top2, "cpu")])[0] for _ in range(20)}
    assert picked <= set(torch.topk(logits[0], 2).indices.tolist())


def test_static_computes_padding_rows_and_continuous_does_not(engine):
    """Static runs finished members as padding until the batch ends; continuous runs only live sequences."""
    requests = [Request("A", 0, 2, 3), Request("B", 0, 9, 4), Request("C", 1, 3, 2)]
    static = engine.replay(requests, 2, "static")
    continuous = engine.replay(requests, 2, "continuous")
    assert static.tokens_per_step.sum() == continuous.tokens_per_step.sum() == 14
    assert static.rows_per_step.sum() == 2 * 9 + 3  # A pads 7 steps beside B; C runs alone after
    assert (continuous.rows_per_step == continuous.tokens_per_step).all()
    assert (static.step_ms > 0).all() and static.total_s > 0
    lat = continuous.latencies_ms()
    assert (lat["ttft"] > 0).all() and (lat["e2e"] >= lat["ttft"]).all()


def test_progress_and_cancel(engine):
    """on_step reports every step in order; setting the cancel event stops between steps."""
    requests = generate(TrafficConfig(seed=2, requests=8, mean_prompt_tokens=4))
    seen = []
    result = engine.replay(requests, 2, "continuous", on_step=lambda t, n: seen.append((t, n)))
    assert seen == [(t, result.run.drain) for t in range(result.run.drain)] and not result.cancelled
    cancel = threading.Event()
    steps = []

    def stop_at_three(t, n):
        steps.append(t)
        if t == 2:
            cancel.set()

    cut = engine.replay(requests, 2, "continuous", on_step=stop_at_three, cancel=cancel)
    assert cut.cancelled and steps == [0, 1, 2]


def test_bad_device_and_model_names():
    """A missing device or an unknown preset is a ValueError naming what is allowed."""
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            resolve_device("cuda")
    with pytest.raises(ValueError, match="auto, cpu or cuda"):
        resolve_device("tpu")
    with pytest.raises(ValueError, match="tiny, small, gpt2"):
        Engine("huge")


def test_calibrate_writes_a_profile_that_compare_reads(tmp_path, capsys):
    """`batchviz calibrate` times the tiny model on its grid; the profile grows with the pass and drives compare."""
    from batchviz.cli import main
    from core.clock.cost import Fitted

    out = tmp_path / "tiny.json"
    assert main(["calibrate", "--model", "tiny", "--device", "cpu", "--out", str(out), "--no-progress"]) == 0
    from replay.calibrate import CONTEXT, PREFILL, ROWS

    assert f"wrote {out}: tiny on cpu, {len(ROWS) * len(PREFILL) * len(CONTEXT)} grid points" in capsys.readouterr().out
    profile = Fitted.load(out)
    assert profile.model == "tiny" and profile.device == "cpu"
    grid = np.asarray(profile.ms)
    assert np.all(grid > 0)
    assert grid[-1, -1, -1] > grid[0, 0, 0]  # 64 rows, a 1,024-token prefill and 14,336 cached tokens cost more
    assert grid[1, 0, -1] > grid[1, 0, -2]  # one row past what it can hold: extrapolated along the context, growing
    # The wake: an idle engine's next pass, timed after sleeping; the gap that costs it all lies between the two timed
    assert profile.wake_ms >= 0 and 5 <= profile.wake_gap_ms <= 40
    assert main(["compare", "--requests", "30", "--cost", str(out)]) == 0
    assert "time under the fitted (tiny on cpu) cost model" in capsys.readouterr().out


def test_the_sweep_runs_on_a_measured_profile(tmp_path, capsys):
    """`sweep --cost FILE.json` uses the profile's decode times; roofline flags beside a profile are refused."""
    from batchviz.cli import main
    from core.clock.cost import Fitted
    from core.measure.sweep import sweep

    out = tmp_path / "tiny.json"
    assert main(["calibrate", "--model", "tiny", "--device", "cpu", "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["sweep", "--requests", "200", "--batches", "1,8,64", "--cost", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    profile = Fitted.load(out)
    want = sweep(batches=(1, 8, 64), model=profile, traffic=replace(SWEEP_TRAFFIC, requests=200))
    assert [p["step_ms"] for p in doc["points"]] == pytest.approx([p.step_ms for p in want])
    assert main(["sweep", "--cost", str(out), "--tflops", "3"]) == 2
    assert "--tflops applies to --cost roofline only" in capsys.readouterr().err


@pytest.mark.parametrize("paged", [False, True], ids=["packed", "block tables"])
def test_varlen_path_inputs_match_the_reference(engine, paged, monkeypatch):
    """The CUDA path's inputs, under the varlen kernel's documented semantics: logits equal the dense reference.

    A reference stands in for the CUDA-only kernel, bound to this torch's own signature (a keyword it does not take
    raises, as on the GPU); the token-major cache, cu_seq_k, packed slots and block tables are the engine's own.
    """
    import torch.nn.attention.varlen as varlen

    from replay.attention import VarlenPagedAttention
    from tests.varlen_stand_in import stand_in

    monkeypatch.setattr(varlen, "varlen_attn", stand_in(varlen.varlen_attn))
    model = engine.model
    rng = np.random.default_rng(3)
    seqs = [Sequence(str(i), i, rng.integers(0, CONFIG.vocab_size, n).tolist(), n, 8) for i, n in enumerate((7, 3, 12))]
    allocator = BlockAllocator(32, 4)
    cache = PagedKVCache(CONFIG, 32, 4, "cpu", torch.float32, token_major=True)
    allocator.allocate(seqs[0])
    for step in range(3):
        if step == 1:
            for s in seqs[1:]:
                allocator.allocate(s)  # two prefills join a decode
        live = seqs[:1] if step == 0 else seqs
        for s in live:
            allocator.append(s)
        batch = build_batch(live, 4)
        attention = VarlenPagedAttention(cache, batch, "cpu", paged=paged)
        hidden = model(torch.as_tensor(batch.token_ids), torch.as_tensor(batch.positions), attention)
        logits = model.logits(hidden[torch.as_tensor(batch.last_token_index)])
        for s, row in zip(live, logits):
            torch.testing.assert_close(row, _reference_logits(model, s.token_ids)[-1], rtol=1e-4, atol=1e-4)
            s.num_computed_tokens = s.num_tokens
            s.token_ids.append(int(rng.integers(0, CONFIG.vocab_size)))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA: the varlen kernel runs on a GPU only")
def test_varlen_kernel_parity_on_cuda():
    """On a GPU in bf16: the engine's varlen pass gives the reference's logits within bf16 tolerance."""
    from replay.gpu_check import varlen_parity

    for paged in (False, True):
        assert varlen_parity("tiny", paged=paged)["ok"]


def test_groups_bound_rows_and_pairs(monkeypatch):
    """Consecutive groups of at most GROUP_ROWS sequences and GROUP_PAIRS pairs; a sequence over the limit alone."""
    from replay import attention

    monkeypatch.setattr(attention, "GROUP_ROWS", 3)
    monkeypatch.setattr(attention, "GROUP_PAIRS", 100)
    new, context = np.array([1, 1, 1, 1, 20, 1, 1]), np.array([10, 10, 10, 10, 30, 10, 10])
    groups = [g.tolist() for g in attention._groups(new, context)]
    assert groups == [[0, 1, 2], [3], [4], [5, 6]]


def test_the_engine_does_not_import_calibrate():
    """The synthetic passes live in their own module: engine -> synthetic, calibrate -> synthetic, no circle back."""
    import subprocess
    import sys

    code = "import sys, replay.engine; print('replay.calibrate' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_the_synthetic_pass_times_on_the_engines_public_clock(engine, monkeypatch):
    """time_pass reads Engine.clock() around each timed pass; the median of the repeats comes back in ms."""
    from replay import synthetic

    ticks = iter([0.0, 0.001, 10.0, 10.003, 20.0, 20.002, 30.0, 30.009])  # the warm-up (1 ms), then 3, 2 and 9 ms
    monkeypatch.setattr(engine, "clock", lambda: next(ticks))
    monkeypatch.setattr(engine, "ragged_pass", lambda *args: 0.0)  # the pass itself reads no clock here
    assert synthetic.time_pass(engine, 2, 16, 32, repeats=3) == pytest.approx(3.0)
    ticks = iter([0.0, 0.1, 10.0, 10.2])  # a warm-up of 100 ms: one timed pass (here 200 ms) is enough
    assert synthetic.time_pass(engine, 2, 16, 32, repeats=3) == pytest.approx(200.0)


def test_gpu_check_and_the_online_table_say_what_happened():
    """No divergence reads "none diverged", not "token None"; two profiles are named per policy, not "the a, b cost"."""
    from core.clock.cost import Fitted
    from replay.gpu_check import invariance_line
    from replay.online import _cost_words

    same = invariance_line({"same": 8, "of": 8, "earliest_divergence": None}, torch.bfloat16)
    assert same.endswith("identical under continuous batching and alone; none diverged") and "None" not in same
    assert invariance_line({"same": 7, "of": 8, "earliest_divergence": 12}, "bf16").endswith("at token 12")
    axes = ((0, 1), (0, 1), (0, 1))
    grid = (((1.0, 1.0), (1.0, 1.0)), ((1.0, 1.0), (1.0, 1.0)))
    ragged, dense = Fitted(*axes, grid), Fitted(*axes, grid, name="fitted (static)")
    both = _cost_words({"static": dense, "continuous": ragged})
    assert both == (
        "each policy's own profile (static: its padded rectangles timed, continuous: its ragged passes timed)"
    )
    assert _cost_words(ragged) == "the fitted cost" == _cost_words({"static": ragged, "continuous": ragged})


def test_a_quick_cpu_gpu_check_labels_its_table_a_smoke_test(capsys):
    """`./dev gpu-check --device cpu --model tiny --quick`: exit 0; each online table says its errors measure nothing.

    Round 4, the front door: its ±300% errors on a CPU read as an alarm without the note.
    """
    from replay.gpu_check import QUICK_NOTE, main

    assert main(["--device", "cpu", "--model", "tiny", "--quick"]) == 0
    ran, _, summary = capsys.readouterr().out.rpartition("== gpu-check summary")
    table = summary.index("predicted by the simulator")
    assert summary.index(QUICK_NOTE) > table and summary.count(QUICK_NOTE) == summary.count("online replay on cpu") == 1
    # Each part printed as it ended (a killed run has shown them), every kind of pass beside its price, the header
    # naming cuDNN and the SDPA backend static's decode gets.
    order = [ran.index(part) for part in ("calibrate tiny", "replay static:", "replay continuous:", "predicted by")]
    assert order == sorted(order)
    assert summary.count("decode only") == 2 and "priced" in summary
    assert "cuDNN none" in summary and "static's dense decode on SDPA" in summary and "cuDNN excluded" in summary
