"""The exercises' core: presets, the knee on a hand-built cost model, the length-spread study, the temperature bug."""

import re
from dataclasses import replace

import numpy as np
import pytest

from app.exercises.knee import cached_sweep, verdict_html
from app.exercises.knee_words import latency_html
from core import compare, generate, simulate
from core.chapter.spread import SPREAD_SLOTS, SPREAD_TRAFFIC, spread_study
from core.chapter.temperature_bug import ROWS, run_rows
from core.clock.hardware import ACCELERATORS, MODEL_SHAPES, cost_model
from core.measure.lineup import differs
from core.measure.sweep import (
    DEFAULT_BATCHES,
    SWEEP_TRAFFIC,
    CostModel,
    decode_knee,
    knee,
    mean_context,
    poisson_requests,
    retarget,
    same_run_from,
    sweep,
    without_prefill,
)
from core.sched.timed import simulate_timed, timed_metrics
from core.stats import weighted_percentiles

# One weight byte per parameter, 1 GB at 1,000 GB/s is 1 ms; 2 FLOP per parameter per token computed at 0.4 TFLOP/s is
# 5 ms per token. A full batch of b rows decoding steps in max(1, 5b) = 5b ms: at a 50 ms target the knee is batch 8.
HAND = CostModel(params_b=1, bytes_per_param=1, kv_bytes_per_token=0, mem_bw_gbs=1000, tflops=0.4, overhead_ms=0)
BATCHES = (1, 2, 4, 8, 16, 32)
# No prompt: an admitted request's prefill is one token, so a full pass always computes b tokens (5b ms).
NO_PROMPTS = replace(SWEEP_TRAFFIC, requests=300, mean_prompt_tokens=0)
SMALL = replace(SWEEP_TRAFFIC, requests=300)


def test_the_default_cost_model_is_the_default_presets():
    """CostModel() is Llama-2 7B on an H100 SXM; KV bytes per token follow the shapes (GQA included)."""
    assert CostModel() == cost_model()
    assert MODEL_SHAPES["llama2-7b"].kv_bytes_per_token == 2 * 32 * 32 * 128 * 2 == 524_288
    assert MODEL_SHAPES["llama3-8b"].kv_bytes_per_token == 131_072  # 8 KV heads: a quarter of the cache
    assert len(ACCELERATORS) >= 3 and len(MODEL_SHAPES) >= 2
    with pytest.raises(ValueError, match="accelerator must be one of"):
        cost_model("TPU v9")


def test_the_knee_on_a_hand_built_cost_model():
    """Saturated, ITL p99 is 5b ms and the knee is 8; a light load never fills a big batch, so the knee moves up."""
    saturated = sweep(1e4, BATCHES, HAND, NO_PROMPTS, itl_target_ms=50)
    assert [p.step_ms for p in saturated] == [5.0 * b for b in BATCHES]
    assert [p.itl_p99_ms for p in saturated] == [5.0 * b for b in BATCHES]
    assert knee(saturated).batch == decode_knee(saturated).batch == 8
    assert knee(sweep(1e4, BATCHES, HAND, NO_PROMPTS, itl_target_ms=100)).batch == 16  # a looser target pushes it up
    assert knee(sweep(1e4, BATCHES, HAND, NO_PROMPTS, itl_target_ms=4)) is None
    light = sweep(0.5, BATCHES, HAND, NO_PROMPTS, itl_target_ms=50)
    assert max(p.itl_p99_ms for p in light) <= 50  # every size meets it: the largest would be 32
    # The sizes from the knee up are one run (the cap never turned anyone away): the first of them is named, not 32.
    first = same_run_from(light)
    assert knee(light) is first and 1 < first.batch < 32 and light[-1].peak_rows < 32
    same = [(p.itl_p99_ms, p.tokens_per_s, p.p99_latency_ms) for p in light if p.batch >= first.batch]
    below = light[light.index(first) - 1]
    assert len(set(same)) == 1 and (below.itl_p99_ms, below.tokens_per_s, below.p99_latency_ms) != same[0]


def test_prefill_stalls_pull_the_knee_below_decode_alone():
    """With 100-token prompts a pass that admits one costs 500 ms more: decode alone still says 8, the clock 2."""
    prompts = replace(NO_PROMPTS, prompt_lengths="fixed", mean_prompt_tokens=100)
    points = sweep(1e4, BATCHES, HAND, prompts, itl_target_ms=50)
    assert [p.decode_itl_p99_ms for p in points] == [5.0 * b for b in BATCHES]
    assert decode_knee(points).batch == 8
    assert knee(points).batch == 2  # from 4 up, more than 1% of the tokens wait beside a prefill
    assert all(p.itl_p99_ms > 500 for p in points if p.batch >= 4)  # a pass beside a 100-token prefill


def test_the_sweep_is_the_timed_simulation_of_the_same_requests():
    """Each point's ITL, tokens/s and end-to-end latency are timed_metrics of simulate_timed on the same requests."""
    cost = cost_model("a100-80gb", "llama3-8b")
    requests = poisson_requests(SMALL, 80.0)
    assert [r.arrival for r in requests] == [r.arrival for r in generate(replace(SMALL, rate=80.0 / 1e3))]  # in ms
    for point in sweep(80.0, (1, 8, 64, 512), cost, SMALL):
        run = simulate_timed(requests, point.batch, "continuous", cost)
        timed = timed_metrics(run)
        assert (point.itl_p50_ms, point.itl_p99_ms) == (timed.itl_ms["p50"], timed.itl_ms["p99"])
        assert point.tokens_per_s == timed.tokens_per_s
        assert (point.p99_latency_ms, point.avg_latency_ms) == (timed.e2e_ms["p99"], timed.e2e_ms["mean"])
        assert point.decode_itl_p99_ms == timed_metrics(without_prefill(run, cost)).itl_ms["p99"]


def test_the_knee_is_the_largest_batch_meeting_the_target_on_the_clock():
    """At the defaults (80 requests/s, 50 ms): ITL p99 44.1 ms at 32 and 134.0 at 256 on the clock; knees 32 and 128."""
    points = sweep()
    cost, requests = cost_model(), poisson_requests(SWEEP_TRAFFIC, 80.0)
    itl = {b: timed_metrics(simulate_timed(requests, b, "continuous", cost)).itl_ms["p99"] for b in (32, 64, 256)}
    assert [round(itl[b], 1) for b in (32, 256)] == [44.1, 134.0]
    assert itl[32] <= 50 < itl[64]
    assert knee(points).batch == max(p.batch for p in points if p.itl_p99_ms <= 50) == 32
    assert decode_knee(points).batch == max(p.batch for p in points if p.decode_itl_p99_ms <= 50) == 128
    assert [p.batch for p in points] == list(DEFAULT_BATCHES)
    for target in (10.0, 30.0, 100.0):
        judged = retarget(points, target)
        assert [p.meets_target for p in judged] == [p.itl_p99_ms <= target for p in points]
        assert knee(judged) == knee(sweep(itl_target_ms=target))


@pytest.mark.parametrize("rate", [5.0, 80.0, 500.0])
@pytest.mark.parametrize("accelerator,shape", [("h100-sxm", "llama2-7b"), ("a100-80gb", "llama2-13b")])
def test_decode_alone_is_never_above_the_clock(rate, accelerator, shape):
    """Prefill only adds: decode alone's ITL p99 is never above the clock's, so its knee is never below."""
    points = sweep(rate, DEFAULT_BATCHES, cost_model(accelerator, shape), SMALL)
    assert all(p.decode_itl_p99_ms <= p.itl_p99_ms for p in points)
    assert all(p.step_ms <= q.step_ms for p, q in zip(points, points[1:]))
    best, decode = knee(points), decode_knee(points)
    assert best is None or (decode is not None and decode.batch >= best.batch)


def test_weighted_percentiles():
    """Each value counts its weight's times; zero weights count for nothing."""
    values, weights = np.array([3.0, 1.0, 2.0, 9.0]), np.array([1, 97, 2, 0])
    assert weighted_percentiles(values, weights, (50, 99, 100)) == (1.0, 2.0, 3.0)
    assert weighted_percentiles(np.array([]), np.array([]), (50,)) == (0.0,)


def test_the_spread_study_equals_compare_on_the_same_traffic():
    """Each kind's ratios are compare's on that kind's requests; the arrivals are shared; fixed lengths pad nothing."""
    cases = spread_study(1.2)
    arrivals = None
    for case in cases:
        requests = generate(SPREAD_TRAFFIC.__class__(**{**vars(SPREAD_TRAFFIC), "lengths": case.kind}))
        result = compare(simulate(requests, SPREAD_SLOTS, "static"), simulate(requests, SPREAD_SLOTS, "continuous"))
        assert case.drain_ratio == result.drain_ratio
        assert case.padding_share == result["static"].padding_share
        assert case.lengths.tolist() == [r.output_tokens for r in requests]
        mine = [r.arrival for r in requests]
        assert arrivals is None or mine == arrivals
        arrivals = mine
    heavy, uniform, fixed = cases
    assert fixed.padding_share == 0 and np.all(fixed.batch_ratios == 1)
    assert heavy.drain_ratio > uniform.drain_ratio > fixed.drain_ratio


def test_a_narrower_spread_pays_less():
    """The heavy-tailed advantage shrinks with sigma."""
    ratios = [spread_study(sigma)[0].drain_ratio for sigma in (2.0, 1.2, 0.5, 0.1)]
    assert ratios == sorted(ratios, reverse=True)


def test_one_temperature_breaks_the_greedy_row():
    """Without the bug the greedy row draws one token every time; with it, it samples. The first row is unchanged."""
    correct, buggy = run_rows(bug=False), run_rows(bug=True)
    greedy = [label for label, _ in ROWS].index("greedy")
    assert len(set(correct.draws[:, greedy])) == 1
    assert len(set(buggy.draws[:, greedy])) > 1
    assert buggy.changed_rows(correct) == [1, 2]
    assert np.array_equal(correct.draws[:, 0], buggy.draws[:, 0])  # its own temperature either way
    again = run_rows(bug=False)
    assert np.array_equal(again.draws, correct.draws)  # seeded: the same draws every time


def test_the_spread_guess_is_judged_on_the_cores_ratios():
    """The right guess is the offered distribution with the largest drain ratio (the wide tail); the page says so."""
    from app.exercises.spread import GUESSES, best_guess, guess_html, guess_ratios, spread_case

    ratios = guess_ratios()
    for key, (_, kind, sigma) in GUESSES.items():
        assert ratios[key] == spread_case(kind, sigma if kind == "heavy" else SPREAD_TRAFFIC.tail).drain_ratio
    assert best_guess() == max(ratios, key=ratios.get) == "wide"
    assert 'data-verdict="right"' in guess_html("wide") and 'data-verdict="wrong"' in guess_html("uniform")
    assert guess_html("fixed").count("data-guess-ratio") == len(GUESSES)


def test_the_spread_view_asks_before_it_shows():
    """The ratios stay hidden until a guess is made and revealed; revealing without a guess does nothing."""
    from app.exercises.spread import SpreadView

    view = SpreadView()
    view.__panel__()
    view.reveal()
    assert not view.revealed and not view.numbers.visible and view.reveal_button.disabled
    view.choice.value = "narrow"
    assert view.guess == "narrow" and not view.reveal_button.disabled
    view.reveal_button.clicks += 1
    assert view.revealed and view.numbers.visible and view.curve_pane.visible and view.choice.disabled
    assert 'data-verdict="wrong"' in view.verdict.object


def test_exactly_one_offered_assertion_catches_the_temperature_bug():
    """Each assertion is run on both samplers: only the greedy row's argmax check fails on the buggy one alone."""
    from app.exercises.temperature import ASSERTIONS, assertion_html, catches_bug, run_assertion

    catching = [code for code in ASSERTIONS if catches_bug(code)]
    assert len(catching) == 1 and "argmax" in catching[0]
    assert all(run_assertion(code, bug=False) for code in ASSERTIONS)  # every candidate holds on the fixed sampler
    assert not run_assertion(catching[0], bug=True)
    html = assertion_html(catching[0])
    assert 'data-sampler="fixed" data-pass="1"' in html and 'data-sampler="buggy" data-pass="0"' in html
    assert 'data-catches="0"' in assertion_html(ASSERTIONS[0])


def test_the_verdicts_come_from_running_the_assertion():
    """A line that fails on both, or one that raises, is judged by running it, not by a table."""
    from app.exercises.temperature import run_assertion

    assert not run_assertion("assert draws.shape == (1, 1)", bug=False)
    assert run_assertion("assert len(set(draws[:, 1])) > 1", bug=True)
    assert not run_assertion("assert len(set(draws[:, 1])) > 1", bug=False)


KNEE_RATES = (1.0, 5.0, 14.0, 20.0, 40.0, 80.0, 300.0)  # across the slider (1-300), the page's default among them


def _queue_grows(rate: float, batch: int) -> bool:
    """Whether the wait for a slot grows through the sweep's run: the last quarter of arrivals waits far longer."""
    from core.measure.sweep import SWEEP_TRAFFIC, poisson_requests

    run = simulate_timed(poisson_requests(SWEEP_TRAFFIC, rate), batch, "continuous", cost_model())
    wait = run.pass_start_ms[run.start_pass] - run.arrival_ms
    n = len(wait)
    return bool(wait[3 * n // 4 :].mean() > 1.5 * wait[n // 4 : n // 2].mean() + 1000.0)


# Rates across the slider and either side of the largest batch's capacity (about 22.6 requests/s kept full).
LOAD_RATES = (1.0, 3.0, 8.0, 14.0, 18.0, 20.0, 24.0, 40.0, 80.0, 300.0)


def test_the_knee_page_says_where_the_queue_grows_as_the_runs_show_it():
    """The sentences-true issue, item 6: the default offers what the batches serve; the page says where queues grow.

    At the old default (80 requests/s, ~15,500 tokens/s against at most ~4,380 kept full) the p99 latency fell to batch
    256 and nothing said the queue grew without bound; later the page judged capacity by the run's own throughput (at
    most the offered load), and said the queue grew without bound at 18 and 20 requests/s, where batch 128 and up keep
    every request's wait for a slot flat. The oracle here is the run itself: does the last quarter of the arrivals wait
    far longer for a slot than the second? Checked at every batch size whose capacity is not within 15% of the load.
    """
    import re

    from app.exercises.knee import KneeView
    from app.exercises.knee_words import PAGE_RATE_PER_S, kept_full, load_html, mean_output_tokens

    assert KneeView().rate_per_s == PAGE_RATE_PER_S
    full = dict(kept_full(cost_model()))
    checked = {True: 0, False: 0}
    for rate in LOAD_RATES:
        words = load_html(rate, cost_model())
        # The sentence's own arithmetic holds on the figures it shows (14 x 193 was said to be 2,707).
        shown_rate, shown_mean, shown = re.search(r"Offered load: ([\d.]+) requests?/s x ([\d.]+) tokens each = "
                                                  r"([\d,]+) tokens/s", words).groups()  # fmt: skip
        assert round(float(shown_rate) * float(shown_mean)) == int(shown.replace(",", "")), words
        offered = rate * round(mean_output_tokens(), 1)
        first = re.search(r'data-first="(\w+)"', words).group(1)
        assert ('data-load="over"' in words) == (first == "none"), words
        for batch, tokens_per_s in full.items():
            said_to_grow = first == "none" or batch < int(first)
            if abs(tokens_per_s / offered - 1) < 0.15:
                continue
            assert _queue_grows(rate, batch) == said_to_grow, (rate, batch, words)
            checked[said_to_grow] += 1
            # Each figure the sentence names is that batch's capacity.
            if f"batch {batch} serves" in words or f"batch {batch} only" in words:
                assert f"{tokens_per_s:,.0f} tokens/s" in words or f"only {tokens_per_s:,.0f}" in words
    assert min(checked.values()) >= 10, checked  # both sides of the claim were checked, many times
    page = load_html(PAGE_RATE_PER_S, cost_model())
    assert 'data-load="under"' in page and knee(list(cached_sweep(PAGE_RATE_PER_S, cost_model()))).batch < 512


def test_past_every_batchs_capacity_a_queue_grows_only_where_requests_wait_for_a_slot():
    """Where no size keeps up, a queue is said to grow only below the size from which every request gets a slot.

    From there up the backlog is the batch's (rate 28 said "the queue grows without bound" beside "from batch 512 up
    every request gets a slot as it arrives", issue 47). The knee's own verdict says it alike.
    """
    from app.exercises.knee_words import keeps_up_html, kept_full, load_html, offered_tokens_per_s

    full, seen = dict(kept_full(cost_model())), set()
    for rate in (*LOAD_RATES, 28.0, 50.0, 120.0):
        points = tuple(cached_sweep(rate, cost_model()))
        words = load_html(rate, cost_model(), points)
        if 'data-load="over"' not in words:
            continue
        free = same_run_from(list(points))
        if free is None:
            assert "the queue grows without bound" in words, rate
            assert all(p.peak_rows == p.batch for p in points[-1:]), rate  # the largest size fills: they queue
        else:
            assert "queue grows" not in words.replace("as a queue for a slot", ""), rate
            assert f"from batch {free.batch} up, where every request gets a slot as it arrives" in words, rate
            assert all(p.peak_rows < p.batch for p in points if p.batch >= free.batch), rate
        for target in (20.0, 50.0, 200.0):
            best = knee(retarget(list(points), target))
            if best is not None:
                said = keeps_up_html(best.batch, offered_tokens_per_s(rate), full, best.one_run)
                assert ("its queue grows" in said) == (not best.one_run), (rate, target)
        seen.add(free is None)
    assert seen == {True, False}  # both sentences were reached


@pytest.mark.parametrize("target", [20.0, 50.0, 120.0])
def test_what_moves_the_knee_is_read_from_the_sweeps(target):
    """The rate's and the target's effect on the knee is stated from the sweeps, true at every rate offered."""
    from app.exercises.knee_words import moves_html

    for rate in KNEE_RATES:
        points = tuple(retarget(list(cached_sweep(rate, cost_model())), target))
        other = rate * 2
        faster = cached_sweep(other, cost_model())
        words = moves_html(points, target, rate, faster, other)
        here, looser = knee(list(points)), knee(retarget(list(points), min(target * 1.5, 500.0)))
        at_rate = knee(retarget(list(faster), target))
        name = lambda p: "no batch size" if p is None else f"batch {p.batch}"  # noqa: E731
        assert f"Here the knee is {name(here)}." in words
        assert f"{name(looser)};" in words and f"{name(at_rate)} at {target:g} ms" in words
        if (here and here.batch) == (at_rate and at_rate.batch):
            assert f"instead of {rate:g} keeps it at" in words


def test_the_motivation_is_the_roofline_s_own_step_times():
    """A decode pass at 1 row and at 32: the times the knee's roofline gives, and the tokens per ms between them."""
    from app.exercises.knee_words import motivation_html

    model = cost_model()
    context = mean_context(generate(SWEEP_TRAFFIC))
    one, many = model.step_ms(1, context), model.step_ms(32, context)
    words = motivation_html(model)
    assert f"1 row takes {one:.1f} ms" in words and f"32 rows takes {many:.1f} ms" in words
    assert f"{32 * one / many:.1f}x the tokens per millisecond" in words and 32 * one / many > 10


def test_the_exercise_plots_name_every_line_and_outline():
    """Item 8: exercise 2's dashed and dotted reference lines and exercise 3's outlined bars are in a legend."""
    from app.exercises.spread import curve_spec
    from app.exercises.temperature import CORRECT, row_specs

    spec = curve_spec(1.0)
    assert [s["label"] for s in spec["series"]] == ["heavy-tailed, by sigma"]
    assert [(h["dash"], h["legend"].split(" (")[0]) for h in spec["hlines"]] == [
        ("dashed", "uniform lengths"),
        ("dotted", "fixed lengths"),
    ]
    for row in row_specs(CORRECT):
        assert [s["label"] for s in row["series"]] == ["what the row samples from", "its own temperature's (outlined)"]
        assert [s.get("outline", False) for s in row["series"]] == [False, True]


@pytest.mark.parametrize("target", [20.0, 50.0, 120.0])
def test_what_happens_past_the_knee_is_read_from_the_sweep(target):
    """Past the knee a request's time once admitted (the chapter's single-request latency) rises, as the words say.

    From the sweep's numbers, with where the end-to-end p99 is lowest, where nobody waits for a slot and where it
    rises again, at every rate offered. A learner's read (issue 47): "from batch 512 up ... the end-to-end p99 stops
    falling" at 28 requests/s, where it was lowest at 128 and rose.
    """
    from app.exercises.knee_words import PAGE_RATE_PER_S, latency_html

    for rate in (*KNEE_RATES, 4.0, 28.0):
        points = tuple(retarget(list(cached_sweep(rate, cost_model())), target))
        words = re.sub(r"<[^>]+>", "", latency_html(points))
        here = knee(list(points))
        assert "stops falling" not in words
        if here is None or here.batch == DEFAULT_BATCHES[-1]:
            assert "No batch size here lies past the knee" in words
            continue
        lowest = min(points, key=lambda p: p.p99_latency_ms)
        tied = [p.batch for p in points if f"{p.p99_latency_ms / 1e3:.2f}" == f"{lowest.p99_latency_ms / 1e3:.2f}"]
        assert f"lowest at batch {tied[0]}" in words and f"({lowest.p99_latency_ms / 1e3:.2f} s)" in words
        last = points[-1]
        rises = last.batch > lowest.batch and differs(last.p99_latency_ms, lowest.p99_latency_ms, time=True)
        assert ("the slower passes take the end-to-end p99 to" in words) == rises, (rate, target)
        # Nobody waits for a slot only where the cap turns nobody away: the sizes that all run the uncapped run.
        free = same_run_from(list(points))
        assert ("at every size some requests wait for a slot" in words) == (free is None)
        if free is not None:
            assert f"from batch {free.batch} up every request gets a slot as it arrives" in words
            # the two p99s both said: arriving mid-pass, a request still waits for the next pass (7.90 against 7.89)
            assert f"({free.p99_latency_ms / 1e3:.2f} s there) is the time once admitted " \
                f"({free.p99_admitted_ms / 1e3:.2f} s)" in words
            assert 0 <= free.p99_latency_ms - free.p99_admitted_ms <= max(p.step_ms for p in points) * 2
            assert points[-1].peak_rows < points[-1].batch and free.peak_rows <= free.batch
        if here.one_run:  # the first of the sizes that run one run: every larger one is its run
            assert f"at most {here.peak_rows} rows ever run at once, so a batch larger than {here.batch}" in words
            same = {(p.itl_p99_ms, p.p99_latency_ms, p.tokens_per_s) for p in points if p.batch >= here.batch}
            assert len(same) == 1, (rate, target)
            continue
        after = points[DEFAULT_BATCHES.index(here.batch) + 1]
        assert (
            f"{here.p99_admitted_ms / 1e3:.2f} s from admission to last token at batch {here.batch} against "
            f"{after.p99_admitted_ms / 1e3:.2f} s at {after.batch}" in words
        )
        longer = after.p99_admitted_ms > here.p99_admitted_ms
        assert ("takes longer" in words) == (longer and differs(after.p99_admitted_ms, here.p99_admitted_ms, True))
        for p in points:  # a request's own time never shrinks as the batch grows: the passes only get slower
            assert p.p99_admitted_ms >= points[0].p99_admitted_ms
        if rate == PAGE_RATE_PER_S and target == 50.0:
            assert "takes longer" in words and "from batch 128 up every request gets a slot" in words


@pytest.mark.parametrize("target", [8.0, 20.0, 50.0, 75.0, 120.0])
def test_sizes_that_run_one_run_are_one_knee_the_first_of_them(target):
    """Where the cap turns nobody away, every larger size is the same run: the knee is named by the first of them.

    Learners' reads (issue 47): at 4 requests/s "the knee is batch 512 ... you guessed batch 8: 6 sizes below",
    while batches 32 to 512 ran the same 21 rows at most, with the same figures; at 8 requests/s "the knee is batch
    64" beside a batch 32 equal to it in every column; "from batch 16 up every request gets a slot" at 4 requests/s
    beside 21 rows at most (batch 16 turns requests away: its decode-alone p99 differs).
    """
    for rate in (*KNEE_RATES, 4.0, 8.0, 28.0):
        points = tuple(retarget(list(cached_sweep(rate, cost_model())), target))
        best, decode = knee(list(points)), decode_knee(list(points))
        first = same_run_from(list(points))
        if first is not None:  # the same run from it up: its figures, to the bit; the one below differs
            same = {(p.itl_p99_ms, p.decode_itl_p99_ms, p.p99_latency_ms, p.tokens_per_s, p.peak_rows)
                    for p in points if p.batch >= first.batch}  # fmt: skip
            assert len(same) == 1 and points[-1].peak_rows < points[-1].batch, (rate, target)
            i = points.index(first)
            if i:
                p = points[i - 1]
                assert (p.itl_p99_ms, p.decode_itl_p99_ms, p.p99_latency_ms, p.tokens_per_s, p.peak_rows) not in same
        meeting = [p.batch for p in points if p.meets_target]
        if best is not None:
            assert best.batch == (first.batch if first and first.batch <= max(meeting) else max(meeting))
        verdict = re.sub(r"<[^>]+>", "", verdict_html(best, decode, target, 128))
        one = best is not None and best.one_run
        assert ("up every size is this same run" in verdict) == one, (rate, target)
        if one:
            assert f"at most {best.peak_rows} rows ever run at once" in verdict and best is first
            for guess in DEFAULT_BATCHES[DEFAULT_BATCHES.index(best.batch):]:
                assert 'data-guess="right"' in verdict_html(best, decode, target, guess)
    four = tuple(retarget(list(cached_sweep(4.0, cost_model())), 50.0))
    assert knee(list(four)).batch == 32 and "batch 512" not in verdict_html(knee(list(four)), None, 50.0, 8)
    assert "from batch 16 up" not in re.sub(r"<[^>]+>", "", latency_html(four))
    eight = tuple(retarget(list(cached_sweep(8.0, cost_model())), 50.0))
    assert knee(list(eight)).batch == 32  # equal to 64 in every column


def test_the_verdict_says_when_the_knee_it_names_does_not_keep_up():
    """The verdict says it wherever the knee it names cannot keep up with the load, and only there.

    A learner's read, 2026-12-04: the default page named batch 32 the knee under a load sentence saying batch 32
    cannot keep up. The clause agrees with the load sentence beside it (its first batch that keeps up) at every rate
    offered and target, and its figures are the sentence's own.
    """
    import re

    from app.exercises.knee import KneeView
    from app.exercises.knee_words import PAGE_RATE_PER_S, kept_full, load_html, offered_tokens_per_s

    full = dict(kept_full(cost_model()))
    seen = set()
    for rate in KNEE_RATES:
        first = re.search(r'data-first="(\w+)"', load_html(rate, cost_model()))[1]
        view = KneeView(rate_per_s=rate, guess=64)
        view.__panel__()
        for target in (20.0, 50.0, 120.0):
            view.itl_target_ms = target
            verdict, here = view.verdict.object, knee(list(view.points()))
            short = here is not None and (first == "none" or here.batch < int(first))
            assert ('data-keeps-up="no"' in verdict) == short, (rate, target, verdict)
            if short:
                offered = offered_tokens_per_s(rate)
                assert f"batch {here.batch} does not keep up" in verdict
                assert f"serves {full[here.batch]:,.0f} tokens/s against the {offered:,.0f} offered" in verdict
                assert f"{offered:,.0f} tokens/s" in load_html(rate, cost_model())  # the load sentence's figure
                assert (f"batch {first} is the first that does" if first != "none" else "no batch size does") in verdict
            seen.add(short)
    assert seen == {True, False}
    default = KneeView(guess=64)
    default.__panel__()
    assert default.rate_per_s == PAGE_RATE_PER_S and 'data-keeps-up="no"' in default.verdict.object


def test_the_knee_intro_describes_the_sweeps_own_requests():
    """The intro's figures are the sweep traffic's as drawn.

    It said "mean 200 output tokens, 1,000-token prompts" beside a load sentence of 193.3 tokens each, and the
    prompts run from 18 to 16,000 tokens.
    """
    from app.exercises.knee import INTRO
    from app.exercises.knee_words import mean_output_tokens

    requests = generate(SWEEP_TRAFFIC)
    prompts = [r.prompt_tokens for r in requests]
    assert f"{len(requests):,} heavy-tailed chat requests" in INTRO
    assert f"answers of {mean_output_tokens():.1f} output tokens" in INTRO
    assert f"prompts of {sum(prompts) / len(prompts):,.0f} tokens on average" in INTRO
    assert f"from {min(prompts):,} to {max(prompts):,} tokens" in INTRO


def test_a_served_knee_computes_its_sweep_off_the_event_loop_and_only_the_latest(monkeypatch):
    """Served, the knee's sweep runs in a worker thread, the latest settings only, and the tab says what it computes.

    Round 5: a rate not computed yet left the tab blank for 9-12 s on a busy server, and each typed value cost a
    sweep of its own. Now the tab shows its controls and a line saying what is computed; settings changed meanwhile
    cost one sweep, the latest's; the views then fill.
    """
    import asyncio
    import threading

    import app.exercises.knee as knee_module
    from app.exercises.knee import KneeView

    calls, real, loop_thread = [], knee_module.sweep, []

    def counted(rate, batches, model):
        calls.append((rate, threading.get_ident() in loop_thread))
        return real(rate, batches, model)

    ticks = []

    class Document:  # what a session's document does for the view: run a callback with the document held
        def add_next_tick_callback(self, callback):
            ticks.append(callback)

    monkeypatch.setattr(knee_module, "sweep", counted)
    monkeypatch.setattr(knee_module, "served_document", Document)
    knee_module.cached_sweep.cache_clear()

    async def learner() -> KneeView:
        loop_thread.append(threading.get_ident())
        view = KneeView(rate_per_s=13)
        view.__panel__()
        assert view.status.visible and "Computing the sweep at 13 requests/s" in view.status.object
        assert view.verdict.object == ""  # not computed on the event loop
        view.rate_per_s, view.rate_per_s = 17, 19  # typed in a row, before the worker starts
        await view._task
        for tick in ticks:
            tick()
        return view

    done: list = []  # a thread of its own: Playwright's sync API may hold a running loop in this one
    thread = threading.Thread(target=lambda: done.append(asyncio.run(learner())))
    thread.start()
    thread.join(120)
    view = done[0]
    assert calls == [(19, False)]  # one sweep, the latest rate's, off the event loop's thread
    assert "knee" in view.verdict.object and not view.status.visible
    knee_module.cached_sweep.cache_clear()


def test_the_spread_says_what_equal_lengths_leave_to_reclaim():
    """Fixed lengths: no padding, a ratio close to 1 but above it (the boundary wait), as the words now say.

    A learner's read (issue 47): "continuous batching has nothing to reclaim" beside a fixed-lengths ratio of 1.03x.
    """
    from app.exercises.spread import WHY, case

    fixed = case("fixed", 1.0)
    assert fixed.padding_share == 0 and 1.0 < fixed.drain_ratio < 1.1
    assert "nothing to reclaim" not in WHY and "only saves the wait for a batch boundary" in WHY
    assert "its ratio stays close to 1" in WHY


def test_a_guess_just_below_the_knee_with_the_knees_figures_is_told_so():
    """At rate 14 and 100 ms, batch 64's row shows batch 128's figures: "one size below" says why (issue 47).

    Over rates and targets: the remark stands exactly where a smaller guess's figures on the clock equal the knee's.
    """
    from app.exercises.knee_words import _shown, guess_html

    said = set()
    for rate in (2.0, 14.0, 28.0):
        for target in (20.0, 50.0, 100.0):
            points = tuple(retarget(list(cached_sweep(rate, cost_model())), target))
            best = knee(list(points))
            if best is None:
                continue
            for p in points:
                if p.batch >= best.batch:
                    continue
                alike = _shown(p) == _shown(best)
                assert ("data-guess-alike" in guess_html(p.batch, best, points)) == alike, (rate, target, p.batch)
                said.add(alike)
    assert said == {True, False}
    points = tuple(retarget(list(cached_sweep(14.0, cost_model())), 100.0))
    assert "data-guess-alike" in guess_html(64, knee(list(points)), points)
