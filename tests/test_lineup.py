"""The schedulers' lineup in the core: entries with their engines' settings, one traffic, the best of each figure."""

import pytest

from core import Request
from core.clock.hardware import cost_model
from core.kv.memory import MemoryConfig
from core.measure.lineup import Entry, best, lineup, parse_entries, parse_entry, registered_presets
from core.measure.serving import serving_metrics
from core.sched.policies import REGISTRY
from core.sched.timed import simulate_timed
from core.workload.traffic import TrafficConfig, generate


def test_an_entry_carries_its_settings_in_a_link_and_in_words():
    entry = parse_entry("tgi:prefill_chunking=0;waiting_served_ratio=1.2;max_waiting_tokens=5")
    assert entry == Entry("tgi", (("prefill_chunking", 0), ("waiting_served_ratio", 1.2), ("max_waiting_tokens", 5)))
    assert entry.text() == "tgi:prefill_chunking=0;waiting_served_ratio=1.2;max_waiting_tokens=5"
    assert parse_entry(entry.text()) == entry
    assert entry.label() == "TGI (prefill_chunking 0, waiting_served_ratio 1.2, max_waiting_tokens 5)"
    policy = entry.policy()
    assert (policy.waiting_served_ratio, policy.max_waiting_tokens) == (1.2, 5)
    assert parse_entry("vllm:scheduling_policy=priority").policy().orders_by_class


@pytest.mark.parametrize(
    "text,words",
    [
        ("bogus", "policy must be one of"),
        ("tgi:max_num_seqs=4", "tgi has no setting 'max_num_seqs' (its settings: prefill_chunking"),
        ("tgi:waiting_served_ratio=lots", "waiting_served_ratio='lots' is not a number"),
        ("tgi:max_waiting_tokens=1.5", "max_waiting_tokens='1.5' is not a number"),
        ("tgi:max_waiting_tokens=0", "max_waiting_tokens must be an integer in 1..1,000,000, got 0"),
        ("sglang:schedule_policy=lifo", "schedule_policy must be fcfs or lof, got 'lifo'"),
        ("continuous:x=1", "continuous has no setting 'x' (its settings: none)"),
    ],
)
def test_a_bad_entry_is_refused_naming_what_is_allowed(text, words):
    with pytest.raises(ValueError) as exc:
        parse_entry(text)
    assert words in str(exc.value)


def test_a_lineup_takes_two_to_four_distinct_entries():
    assert len(parse_entries("vllm, tgi ,sglang,trtllm-no-evict")) == 4
    for text, words in (("vllm", "pick 2 to 4 schedulers, got 1"), ("vllm,tgi,sglang,sjf,static", "got 5")):
        with pytest.raises(ValueError, match=words):
            parse_entries(text)
    with pytest.raises(ValueError, match="each scheduler once"):
        parse_entries("tgi,tgi")
    assert len(parse_entries("tgi,tgi:prefill_chunking=0")) == 2  # two settings of one engine


def test_each_line_is_its_own_run_judged_against_the_same_targets():
    """Every line equals its policy run alone on the same requests, pool and clock, judged by core.measure.serving."""
    requests = generate(TrafficConfig(seed=3, requests=30, arrivals="poisson", rate=0.05, mean_prompt_tokens=200))
    cost, memory = cost_model(), MemoryConfig(kv_blocks=400, block_size=16)
    entries = parse_entries("vllm,tgi,sglang,trtllm-max-util")
    lines = lineup(requests, 6, entries, cost, 300.0, 40.0, memory, token_budget=256)
    for line in lines:
        pol = line.entry.policy()
        budget = (4096 if pol.name == "tgi" else 256) if pol.has_token_budget else None  # TGI: its own setting
        slots = 30 if pol.name == "tgi" else 6  # TGI has no request cap: all 30 may run
        alone = simulate_timed(requests, slots, pol, cost, memory=memory, token_budget=budget)
        assert line.run.pass_end_ms.tolist() == alone.pass_end_ms.tolist()
        assert line.figures == serving_metrics(alone, cost, 300.0, 40.0)


def test_best_marks_the_leaders_of_a_figure_in_its_own_direction():
    """Two requests on one slot, by hand: sjf runs the short one first.

    So the later first token (the p99 of two) comes after 2 tokens, not 30, and both are slowed more alike (fairer).
    """
    requests = [Request("A", 0, 30, 8), Request("B", 0, 2, 8)]
    lines = lineup(requests, 1, parse_entries("continuous,sjf"), cost_model(), 1e9, 1e9)
    assert lines[1].figures.ttft_p99 < lines[0].figures.ttft_p99 / 5
    assert best(lines, "ttft_p99") == {1} and best(lines, "fairness") == {1}
    assert best(lines, "ttft_p50") == set()  # the first admitted gets its token at the same time under both
    assert best(lines, "latency_p99") == set()  # both finish the long one last, at the same time: nobody leads
    assert best(lines, "met") == set()  # both meet targets this loose
    assert best(lines, "throughput") == set()


def test_the_presets_offered_put_the_engines_first_and_every_registered_policy_after():
    names = registered_presets()
    assert set(names) == set(REGISTRY)
    engines = [n for n in names if REGISTRY[n].engine]
    assert names[: len(engines)] == tuple(engines) and {"vllm", "tgi", "sglang"} <= set(engines)


def test_targets_must_be_positive():
    with pytest.raises(ValueError, match="the targets must be positive"):
        lineup([Request("A", 0, 3)], 1, parse_entries("continuous,sjf"), cost_model(), 0.0, 50.0)


def test_a_setting_given_twice_in_one_entry_is_refused():
    """`tgi:waiting_served_ratio=1000;waiting_served_ratio=0.3` ran the last and was labelled with both: refused."""
    with pytest.raises(ValueError) as exc:
        parse_entry("tgi:waiting_served_ratio=1000;waiting_served_ratio=0.3")
    assert str(exc.value) == "tgi: waiting_served_ratio is given twice; give each setting once"


@pytest.mark.parametrize(
    "text,words",
    [
        ("tgi,tgi:waiting_served_ratio=0.3", "'tgi:waiting_served_ratio=0.3' runs as 'tgi'"),
        ("vllm:scheduling_policy=fcfs,tgi,vllm", "'vllm' runs as 'vllm:scheduling_policy=fcfs'"),
        (
            "tgi:max_waiting_tokens=20,tgi:waiting_served_ratio=0.3",
            "'tgi:waiting_served_ratio=0.3' runs as 'tgi:max_waiting_tokens=20'",
        ),
    ],
)
def test_an_entry_at_its_defaults_repeats_the_bare_one(text, words):
    """The same policy with the same effective settings is one scheduler, however it is written."""
    with pytest.raises(ValueError) as exc:
        parse_entries(text)
    assert str(exc.value) == f"each scheduler once: {words} (the same settings)"


def test_a_repeated_entry_cannot_grow_a_label():
    """1,800 repeats of a default made a 43,204-character picker label: refused, in one short message."""
    with pytest.raises(ValueError) as exc:
        parse_entries("tgi,tgi:" + ";".join(["waiting_served_ratio=0.3"] * 1800))
    assert len(str(exc.value)) < 100


LONG = "x" * 30_000


@pytest.mark.parametrize(
    "text,words",
    [
        (LONG, "policy must be one of"),
        (f"tgi:{LONG}=1", "tgi has no setting 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' (its settings:"),
        (f"tgi:{LONG}", "tgi has no setting 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...'"),
        (f"tgi:waiting_served_ratio={LONG}", "waiting_served_ratio='xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' is not"),
        (f"sglang:schedule_policy={LONG}", "schedule_policy must be fcfs or lof, got 'xxxxxxxxxxxxxxxxxxxxxxxxx"),
        ("tgi:" + ";".join(f"k{i}=1" for i in range(500)), "tgi has no setting 'k0'"),
    ],
    ids=["name", "key", "key without a value", "number", "choice", "500 unknown keys"],
)
def test_a_value_echoed_in_a_refusal_is_cut_short(text, words):
    """A refusal repeats at most 40 characters of what it refuses (a 30,000-character key made a 30,000 message)."""
    with pytest.raises(ValueError) as exc:
        parse_entries(f"{text},vllm")
    assert words in str(exc.value) and len(str(exc.value)) < 250 and LONG[:41] not in str(exc.value)
