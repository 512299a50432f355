"""Results carry the policy object that made them, settings and all: nothing downstream looks a name up again."""

from app.schedulers.data import run_json
from core import Request, simulate
from core.clock.hardware import cost_model
from core.kv.memory import MemoryConfig
from core.measure.lineup import lineup, parse_entries
from core.sched.engine import as_run, schedule
from core.sched.policies import get_policy
from core.sched.timed import simulate_timed
from core.workload.traffic import TrafficConfig, generate

PRIORITY_VLLM = get_policy("vllm").with_knobs(scheduling_policy="priority")


def test_a_preset_with_settings_travels_with_its_runs_on_both_clocks():
    """The engine's Schedule, its step Run and a timed run each hold the very object given, not the base preset."""
    requests = [Request(str(i), i % 3, 4 + i, prompt_tokens=8, priority=i % 2) for i in range(8)]
    s = schedule(requests, 2, PRIORITY_VLLM, MemoryConfig(kv_blocks=40, block_size=4), token_budget=16)
    assert s.rules is PRIORITY_VLLM and s.policy == "vllm"
    run = as_run(s)
    assert run.rules is PRIORITY_VLLM and run.rules.orders_by_class
    timed = simulate_timed(requests, 2, PRIORITY_VLLM, cost_model(), token_budget=16)
    assert timed.rules is PRIORITY_VLLM and timed.rules.ordered
    assert get_policy("vllm").orders_by_class is False  # the base preset, which a lookup by name would give


def test_a_run_given_a_name_carries_the_registered_object():
    run = simulate([Request("a", 0, 3)], 1, "continuous")
    assert run.policy == "continuous" and run.rules is get_policy("continuous")


def test_the_schedulers_tab_sends_a_priority_vllm_the_traits_of_a_priority_policy():
    """`vllm:scheduling_policy=priority` on the Schedulers tab: ordered and by class, as the run itself was."""
    requests = generate(TrafficConfig(seed=3, requests=20, arrivals="poisson", rate=0.05, high_priority_share=0.3))
    entries = parse_entries("vllm,vllm:scheduling_policy=priority")
    lines = lineup(requests, 4, entries, cost_model(), 300.0, 40.0, MemoryConfig(kv_blocks=400), token_budget=256)
    plain, priority = (run_json(line, "paged")["traits"] for line in lines)
    assert (plain["ordered"], plain["orders_by_class"]) == (False, False)
    assert (priority["ordered"], priority["orders_by_class"]) == (True, True)
