"""The Schedulers tab without a browser: guess first, then the core's figures; lessons true over a grid; links."""

import logging
import re

import pytest

from app.page.words import times, value_range
from app.schedulers.data import LineupKey, drawn_cells, shared_lineup
from app.schedulers.intro import LESSONS
from app.schedulers.view import DEFAULT_ENTRIES, SchedulersView
from app.schedulers.words import QUESTIONS, ROWS, column_label, lessons_html, shown_best
from app.shell import App
from core.clock.hardware import cost_model
from core.measure.lineup import THRESHOLD, best, lineup, parse_entries, parse_entry
from core.states import GENERATING, PAUSED, PREFILL, RECOMPUTE
from core.workload.traffic import generate

COST = cost_model()


def _view(**values) -> SchedulersView:
    view = SchedulersView(**values)
    view.__panel__()
    return view


def _figures_by_hand(key: LineupKey):
    """The key's lines computed afresh by the core, not through the page's shared cache."""
    return lineup(
        generate(key.traffic()), key.slots, key.entries, COST, key.ttft_ms, key.itl_ms, key.memory(), key.token_budget
    )


def test_the_table_waits_for_the_guess_then_shows_the_cores_figures_with_the_best_marked():
    view = _view()
    assert view.table.object == "" and 'data-lineup-guess="ask"' in view.verdict.object
    view.guess = 2
    lines = _figures_by_hand(view.key())
    table = view.table.object
    for field, _words, fmt in ROWS:
        row = re.search(f'<tr data-row="{field}">(.*?)</tr>', table).group(1)
        cells = re.findall(r'<td data-col="(\d)" data-best="(\d)">(?:<b>)?([^<★]+?)(?: ★</b>)?</td>', row)
        assert [c[2] for c in cells] == [fmt.format(getattr(line.figures, field)) for line in lines], field
        shown = [c[2] for c in cells]
        leaders = best(lines, field)  # the core's leaders, and whoever reads the same; nobody where all read alike
        expected = (
            set() if len(set(shown)) == 1 else {i for i in range(len(lines)) if shown[i] in {shown[j] for j in leaders}}
        )
        assert {int(c[0]) for c in cells if c[1] == "1"} == expected, field
    assert "You picked SGLang" in view.verdict.object


def test_a_new_lineup_asks_again():
    view = _view(guess=1)
    assert view.table.object
    view.entries = ["continuous", "sjf"]
    assert view.guess is None and view.table.object == ""
    view.guess = 0
    view.ttft_ms = 200.0  # a target changes the judging, not the question: the table stays
    assert view.guess == 0 and "at most 200 ms" in view.table.object


NUMBER = r"(-?[\d,]+(?:\.\d+)?)"


def _n(text: str) -> float:
    return float(text.replace(",", ""))


def _verb(a: float, b: float, lower: str, higher: str, same: str, time: bool = True) -> str:
    """The verb a sentence owes: `same` within the lineup's THRESHOLD (5%, 0.5 ms for a time), else the direction."""
    share, ms = THRESHOLD
    gap = abs(a - b)
    past = gap > 0 and gap >= share * max(abs(a), abs(b)) and (not time or gap >= ms)
    return same if not past else lower if a < b else higher


def _moves(a: float, b: float, time: bool = True) -> str:
    return _verb(a, b, "falls", "rises", "is alike", time)


def _check_ratio(html, lines):
    m = re.search(
        rf"the TPOT p99 \(a request's mean time per token after its first\) ((?:is )?\w+) \({NUMBER} ms against "
        rf"{NUMBER}\) and the TTFT p99 "
        rf"((?:is )?\w+) \({NUMBER} ms against {NUMBER}\); (.*?)</p>",
        html,
    )
    verb_itl, a_itl, b_itl, verb_ttft, a_ttft, b_ttft, verdict = m.groups()
    high, low = lines[1].figures, lines[0].figures  # the lesson's second entry has the higher ratio
    assert (_n(a_itl), _n(b_itl)) == (round(high.tpot_p99, 2), round(low.tpot_p99, 2))
    assert (_n(a_ttft), _n(b_ttft)) == (round(high.ttft_p99, 1), round(low.ttft_p99, 1))
    assert verb_itl == _moves(high.tpot_p99, low.tpot_p99)
    assert verb_ttft == _moves(high.ttft_p99, low.ttft_p99)
    trades = (verb_itl, verb_ttft) == ("falls", "rises")  # each past the threshold, the right way
    assert ("trade the ratio sets" in verdict) == trades and ("does not trade" in verdict) == (not trades)


def _check_evict(html, lines):
    ne, mu = lines
    pattern = r"GUARANTEED_NO_EVICT, each request holding its prompt plus ([\d,]+) tokens .* from its admission, "
    m = re.search(pattern + r"preempted (\d+ times|once|twice)", html)
    assert int(m.group(1).replace(",", "")) == max(r.output_tokens for r in ne.run.requests)  # no max_tokens here
    m = re.search(r"preempted (\d+) times .* MAX_UTILIZATION decoded ((?:about )?\w+ ?\w*) at once", html)
    assert int(m.group(1)) == ne.figures.preemptions == 0  # never, on any pool that fits: "0 times"
    spans = lambda run: run.pass_end_ms - run.pass_start_ms  # noqa: E731
    mean = lambda run: (run.pass_rows * spans(run)).sum() / spans(run).sum()  # noqa: E731
    assert m.group(2) == _verb(mean(mu.run), mean(ne.run), "fewer", "more", "about as many", time=False)
    assert f"preempted {times(mu.figures.preemptions)} and recomputed" in html
    events = [e for e in mu.run.schedule.events if e.kind == "preempt"]
    again = sum(mu.run.requests[e.request].prompt_tokens + e.tokens for e in events)
    assert f"generated tokens, {again:,} with their prompts" in html  # a readmission prefills its prompt again


def _check_priority(html, lines):
    fcfs, pri = lines
    m = re.search(rf"the high class's mean TTFT ((?:is )?\w+) \((\d+) requests: {NUMBER} ms against {NUMBER}\)", html)
    requests = fcfs.run.requests
    high = [i for i, r in enumerate(requests) if r.priority == 0]
    from core.measure.serving import per_request

    a, b = per_request(pri.run, COST).ttft[high].mean(), per_request(fcfs.run, COST).ttft[high].mean()
    assert int(m.group(2)) == len(high) and (_n(m.group(3)), _n(m.group(4))) == (round(a, 1), round(b, 1))
    assert m.group(1) == _moves(a, b)
    fair = _moves(pri.figures.fairness, fcfs.figures.fairness, time=False)
    assert f"slowdown {fair} ({pri.figures.fairness:.3f}" in html


def _check_sjf(html, lines):
    c, s = lines
    mean = lambda line: (line.run.finish_ms - line.run.arrival_ms).mean()  # noqa: E731
    m = re.search(rf"shortest-first the mean end-to-end latency ((?:is )?\w+) \({NUMBER} ms against {NUMBER}", html)
    assert m.group(1) == _moves(mean(s), mean(c))
    assert (_n(m.group(2)), _n(m.group(3))) == (round(mean(s)), round(mean(c)))
    longest = sorted(range(len(c.run.requests)), key=lambda i: -c.run.requests[i].output_tokens)[:6]
    late = lambda line: (line.run.finish_ms - line.run.arrival_ms)[longest].mean()  # noqa: E731
    words = _verb(late(s), late(c), "finish sooner", "finish later", "are alike")
    assert f"the 6 longest answers {words} ({late(s):,.0f} ms" in html


CHECKS = {"ratio": _check_ratio, "evict": _check_evict, "priority": _check_priority, "sjf": _check_sjf}


@pytest.mark.parametrize("lesson", list(LESSONS))
@pytest.mark.parametrize("seed,slots,rate", [(0, 8, 40.0), (4, 8, 40.0), (7, 4, 20.0), (2, 16, 80.0), (9, 2, 10.0)])
def test_each_lessons_sentence_says_what_its_runs_show(lesson, seed, slots, rate):
    """Over seeds, slots and loads a learner can reach: the sentence's numbers are the core's, its verbs theirs."""
    values = dict(LESSONS[lesson][1])
    values.update(seed=seed, slots=slots, rate_per_s=rate)
    if values["kv_blocks"]:
        values["kv_blocks"] = 300 if slots <= 8 else 600
    values.pop("question")  # what the guess asks
    key = LineupKey(parse_entries(",".join(values.pop("entries"))), **values)
    lines = _figures_by_hand(key)
    html = lessons_html(lines, COST)
    assert html.count("<p data-claim=") - html.count('<p data-claim="fairness">') == 1  # the fairness note: its own
    CHECKS[lesson](html, lines)


def test_a_lessons_sentence_shows_only_beside_its_pair():
    lines = shared_lineup(LineupKey(parse_entries(",".join(DEFAULT_ENTRIES))))
    assert lessons_html(lines, COST) == ""  # four engines, no lesson's pair among them
    lines = shared_lineup(LineupKey(parse_entries("vllm,vllm:scheduling_policy=priority")))
    assert lessons_html(lines, COST) == ""  # one class: nothing for a priority queue to order by


def test_the_lesson_buttons_load_their_settings_and_ask_first():
    view = _view(guess=0)
    for button, (label, values) in zip(view.lesson_buttons, LESSONS.values()):
        assert button.label == label
        button.clicks += 1
        assert view.entries == values["entries"] and view.kv_blocks == values["kv_blocks"]
        assert view.guess is None and view.table.object == ""
        view.guess = 1
        assert "data-claim=" in view.lessons.object
        assert [p.value for p in view.pickers[: len(view.entries)]] == view.entries


def test_a_link_round_trips_and_bad_values_are_named_and_kept_out():
    view = _view()
    entries = ["tgi:prefill_chunking=0;waiting_served_ratio=1.2", "sglang:schedule_policy=lof"]
    view.param.update(entries=entries, slots=4, seed=9)
    view.guess = 1
    query = {k: [v] for k, v in view.query().items()}
    assert query["schedulers"] == ["tgi:prefill_chunking=0;waiting_served_ratio=1.2,sglang:schedule_policy=lof"]
    again = SchedulersView()
    assert again.apply_query(query) == []
    assert again.key() == view.key() and again.guess == 1
    fresh = SchedulersView()
    messages = fresh.apply_query({"schedulers": ["tgi,nope"], "s_slots": ["2_0"], "s_kv": ["3"], "s_guess": ["7"]})
    assert any("schedulers='tgi,nope': policy must be one of" in m for m in messages)
    assert any("s_slots='2_0' is not a whole number" in m for m in messages)
    assert any(re.search(r"needs \d+ blocks", m) and "give the KV pool at least" in m for m in messages)
    assert any("s_guess is the index of a scheduler shown" in m for m in messages)
    assert fresh.key() == SchedulersView().key()  # nothing refused got in
    assert all("--kv-blocks" not in m for m in messages)


def test_a_pool_too_small_is_refused_in_place_and_the_last_lineup_kept():
    view = _view()
    before = view.timelines.payload
    view.kv_blocks = 3
    assert view.kv_blocks == 0 and view.timelines.payload == before
    assert view.messages.text.startswith("Not run: request ") and "Kept the last lineup." in view.messages.text
    view.slots = 4
    assert view.messages.text == ""


def test_a_scheduler_picked_twice_is_refused():
    view = _view()
    view.pickers[1].value = view.pickers[0].value
    assert view.messages.text == "Each scheduler once: that one is already shown."
    assert view.entries == list(DEFAULT_ENTRIES)


def test_two_sessions_keep_their_own_lineups():
    """A learner's schedulers never reach another's page (the runs are shared, the settings are not)."""
    first, second = App({"tab": ["schedulers"]}), App({"tab": ["schedulers"], "schedulers": ["continuous,sjf"]})
    first.schedulers.__panel__()
    second.schedulers.__panel__()
    first.schedulers.entries = ["tgi", "vllm"]
    assert second.schedulers.entries == ["continuous", "sjf"]
    assert '"order":["continuous","sjf"]' in second.schedulers.timelines.payload
    assert first.exercise_query()["schedulers"] == "tgi,vllm"


def test_the_clock_draws_a_bar_per_stay_with_the_paused_passes_over_it():
    """Generating, prefill and paused cells of one stay merge into one bar; the paused ones are drawn again on top."""
    import numpy as np

    cells = np.array(
        [
            [0, 0, 0, 2, PREFILL],
            [0, 0, 2, 5, GENERATING],
            [0, 0, 5, 6, PAUSED],
            [0, 0, 6, 9, GENERATING],
            [1, 1, 3, 4, GENERATING],
            [1, 1, 6, 7, RECOMPUTE],
            [1, 1, 7, 8, GENERATING],
        ]
    )
    drawn = drawn_cells(cells).tolist()
    assert drawn == [
        [0, 0, 0, 9, GENERATING],
        [1, 1, 3, 4, GENERATING],
        [1, 1, 6, 7, RECOMPUTE],
        [1, 1, 7, 8, GENERATING],
        [0, 0, 5, 6, PAUSED],
    ]


def test_the_lineup_runs_on_the_simulators_traffic_and_follows_it():
    """`s_source=page`: the simulator's traffic, followed as it changes.

    The chapter's twelve requests (arrivals turned to ms as the clock view turns them), then a new seed's; the first
    `requests` of a longer traffic; the link keeps the choice.
    """
    from app.page.runs import arrival_step_ms

    app = App({"tab": ["schedulers"], "s_source": ["page"]})
    view = app.schedulers
    view.__panel__()
    step = arrival_step_ms(view.key().accelerator, view.key().model)
    chapter = app.state.traffic_key()
    assert [r.arrival for r in view.key().arrivals()] == [round(r.arrival * step) for r in chapter]
    view.guess = 0
    app.state.seed = 7  # generated traffic now: the lineup follows and asks again
    assert view.key().page_traffic != chapter and view.guess is None
    assert '"order":["vllm","tgi","sglang","trtllm-no-evict"]' in view.timelines.payload
    app.state.requests = 200
    assert len(view.key().arrivals()) == view.requests == 64
    assert app.exercise_query()["s_source"] == "page"
    assert any("s_source='web' is not allowed" in m for m in SchedulersView().apply_query({"s_source": ["web"]}))


def test_the_clock_is_any_accelerator_and_model_the_knee_offers():
    """`s_accel` and `s_model` pick the roofline: the core's runs on that preset; a new preset asks again."""
    view = _view(guess=0)
    assert view.apply_query({"s_accel": ["a100-80gb"], "s_model": ["llama2-13b"]}) == []
    key = view.key()
    assert (key.accelerator, key.model) == ("a100-80gb", "llama2-13b") and view.guess is None
    slow = shared_lineup(key)[0].run.drain_ms
    assert slow > shared_lineup(LineupKey(key.entries))[0].run.drain_ms  # a bigger model on a slower GPU
    assert view.query()["s_accel"] == "a100-80gb"
    assert any("s_model='gpt5' is not allowed" in m for m in SchedulersView().apply_query({"s_model": ["gpt5"]}))


def test_the_load_sentence_is_the_runs_own():
    """How long the arrivals take, the drains, the wait for a slot against the TTFT: each number the core's."""
    from app.schedulers.words import load_html

    lines = _figures_by_hand(LineupKey(parse_entries("vllm,tgi")))
    text = load_html(lines)
    span = (lines[0].run.arrival_ms.max() - lines[0].run.arrival_ms.min()) / 1e3
    drains = sorted(line.run.drain_ms / 1e3 for line in lines)
    assert f"64 requests arrive over {span:,.1f} s on 8 slots" in text
    assert f"finish them in {value_range(drains[0], drains[-1], '{:,.1f}', ' s')}" in text
    ttft = [(line.run.first_token_ms - line.run.arrival_ms).mean() for line in lines]
    shares = [line.figures.wait_mean / t for line, t in zip(lines, ttft)]
    how = ["most" if x > 0.5 else "part" if x > 0.05 else "little" for x in shares]
    assert "The mean wait to be admitted (for a slot or for KV blocks)" in text
    if len(set(how)) == 1:
        assert f"{how[0]} of the time to first token here is that wait" in text
    else:  # said entry by entry: vLLM waits most of its TTFT, TGI (no request cap) little or part
        for line, h in zip(lines, how):
            assert re.search(rf"{h} of it for [^;]*{re.escape(column_label(line))}", text), (h, text)
    light = _figures_by_hand(LineupKey(parse_entries("vllm,tgi"), rate_per_s=1.0, slots=32))
    assert "most of the time" not in load_html(light)  # at 1 request/s on 32 slots a request waits only for a pass


def test_each_lesson_asks_its_own_question_and_the_verdict_reads_the_table():
    """The TGI lesson asks for the lowest TPOT p99, TensorRT-LLM's the highest throughput.

    The verdict names the leader the table stars, in the table's own figures.
    """
    view = _view()
    for button, (_label, values) in zip(view.lesson_buttons, LESSONS.values()):
        button.clicks += 1
        field = values["question"]
        words, unit, fmt = QUESTIONS[field]
        assert view.question == field and words in view.verdict.object
        view.guess = 0
        lines = shared_lineup(view.key())
        starred = shown_best(lines, field, fmt)
        verdict = view.verdict.object
        if not starred or 0 in starred:
            assert 'data-lineup-guess="right"' in verdict
        else:
            lead = min(starred)
            shown = fmt.format(getattr(lines[lead].figures, field)) + unit
            assert f"{column_label(lines[lead])} has {words}, {shown} against" in verdict
    assert view.query()["s_question"] == "latency_p50"
    assert any("s_question='mood' is not allowed" in m for m in SchedulersView().apply_query({"s_question": ["mood"]}))


def test_entries_that_look_alike_are_named_with_their_largest_difference_and_where_they_part():
    """Over seeds and rates: a pair is named wherever its timelines lie within ALIKE of the run, and only there.

    The gap quoted is every start, first token and finish compared afresh; where the sentence says the split prompts
    are where two entries part, the same pair with a budget above every prompt draws the same timeline.
    """
    import dataclasses
    import itertools

    from app.schedulers.alike import ALIKE
    from app.schedulers.data import budget_of
    from app.schedulers.words import load_html

    named = gaps = 0
    for seed, rate in itertools.product(range(8), (20.0, 40.0)):
        # A budget of 2,048 splits the longest prompts (the engines' defaults, 8,192, split almost none).
        key = LineupKey(entries=parse_entries(",".join(DEFAULT_ENTRIES)), seed=seed, rate_per_s=rate, token_budget=2048)
        lines = shared_lineup(key)
        text = load_html(lines, *budget_of(key))
        said = {
            tuple(map(int, m[0].split(","))): m
            for m in re.findall(r'data-alike="([\d,]+)" data-gap-ms="([\d.]+)"[^>]*>(.*?)</p>', text)
        }
        span = max(float(line.run.drain_ms) for line in lines)
        for i, j in itertools.combinations(range(len(lines)), 2):
            a, b = lines[i].run, lines[j].run
            same_slots = (a.slot == b.slot).all()
            gap = max(abs(getattr(a, c) - getattr(b, c)).max() for c in ("start_ms", "first_token_ms", "finish_ms"))
            alike = same_slots and gap <= ALIKE * span
            assert ((i, j) in said) == alike, (seed, rate, i, j, gap)
            if not alike:
                continue
            named += 1
            assert said[(i, j)][1] == (f"{gap:.1f}" if gap else "0")
            if "where they part" in said[(i, j)][2]:
                gaps += 1
                # Every budget above all the prompts at once: TensorRT-LLM's max_num_tokens as well as the tab's.
                pair = [parse_entry(f"{e.name}:max_num_tokens=1000000") if e.name.startswith("trtllm") else e
                        for e in (key.entries[i], key.entries[j])]  # fmt: skip
                roomy = dataclasses.replace(key, entries=tuple(pair), token_budget=1_000_000)
                x, y = (line.run for line in shared_lineup(roomy))
                for column in ("slot", "start_ms", "first_token_ms", "finish_ms"):
                    assert (getattr(x, column) == getattr(y, column)).all(), (seed, rate, i, j, column)
    assert named and gaps  # both sentences are reached on this grid


REFUSED_LINK = "trtllm-no-evict:max_num_tokens=2048,vllm"  # in range, but shorter than the traffic's longest prompt


@pytest.mark.parametrize("opened", [True, False], ids=["opened by the link", "opened later"])
def test_a_link_the_core_refuses_keeps_the_page_and_the_last_lineup(caplog, opened):
    """The core refuses the link's schedulers on this traffic: one message names why, the page keeps its tabs.

    The link's other settings run (its slots kept); the refused entries are dropped for the last lineup's (it showed
    "The app could not be built" with no tabs, or later an empty tab and two tracebacks).
    """
    query = {"schedulers": [REFUSED_LINK], "s_slots": ["4"], **({"tab": ["schedulers"]} if opened else {})}
    with caplog.at_level(logging.WARNING):
        app = App(query)
        app.tab = "schedulers"
        app.schedulers.__panel__()
    assert not [r for r in caplog.records if r.exc_info], "no traceback"
    assert app.chapter_widget.tab == "schedulers" and app.chapter_widget.tab_body.objects
    view = app.schedulers
    assert view.entries == list(DEFAULT_ENTRIES) and view.slots == 4
    assert '"order":["vllm","tgi","sglang","trtllm-no-evict"]' in view.timelines.payload
    message = app.messages.text
    assert message.count("URL:") == 1 and f"schedulers='{REFUSED_LINK}' was not run" in message
    assert "longer than trtllm-no-evict's 2,048 tokens a pass (max_num_tokens): give max_num_tokens at least" in message
    assert message.endswith("; kept vllm,tgi,sglang,trtllm-no-evict.")


def test_a_link_whose_settings_the_core_refuses_keeps_its_schedulers():
    """A pool too small for the traffic: the settings are dropped, the link's schedulers kept, in one message."""
    view = SchedulersView()
    messages = view.apply_query({"schedulers": ["continuous,sjf"], "s_kv": ["3"], "s_rate": ["20"]})
    assert view.entries == ["continuous", "sjf"] and view.kv_blocks == 0 and view.rate_per_s == KEY_RATE
    [message] = messages
    assert message.startswith("URL: the schedulers' settings were not run: request ")
    assert message.endswith("; kept the last settings.")


KEY_RATE = LineupKey.rate_per_s


def test_a_refusal_of_any_length_is_one_short_message():
    """A 30,000-character name or key, 500 unknown keys: one message, its echo cut short."""
    long = "x" * 30_000
    for text in (f"{long},vllm", f"tgi:{long}=1,vllm", "tgi:" + ";".join(f"k{i}=1" for i in range(500)) + ",vllm"):
        view = SchedulersView()
        [message] = view.apply_query({"schedulers": [text]})
        assert len(message) < 400 and long[:41] not in message, message[:100]
        assert view.entries == list(DEFAULT_ENTRIES)


def test_each_lineup_is_run_once_per_process(monkeypatch):
    """Opening the tab, a guess, a question, a slot move there and back, a second session alike: one run each.

    The runs are shared by every session (docs/app.md): the core's lineup runs once per distinct setting.
    """
    from collections import Counter

    from app.schedulers import data
    from app.server.byte_cache import CACHES

    for cache in CACHES:
        cache.cache_clear()
    runs, real = Counter(), data.lineup

    def counted(requests, slots, entries, *args, **kwargs):
        runs[(",".join(e.text() for e in entries), slots)] += 1
        return real(requests, slots, entries, *args, **kwargs)

    monkeypatch.setattr(data, "lineup", counted)
    first = App({"tab": ["schedulers"]})
    view = first.schedulers
    view.__panel__()
    view.guess = 1
    view.question = "goodput"
    view.slots = 9
    view.slots = 8
    second = App({"tab": ["schedulers"]})
    second.schedulers.__panel__()
    second.schedulers.guess = 0
    default = ",".join(DEFAULT_ENTRIES)
    assert runs == {(default, 8): 1, (default, 9): 1}


def test_an_address_says_numbers_as_written_and_keeps_every_digit():
    """`s_requests=1000000000` is named as written (not 1e+09); a target of 1234.5678 ms goes back whole."""
    view = _view()
    messages = view.apply_query({"s_requests": "1000000000", "s_ttft": "1234.5678"})
    said = " ".join(messages)
    assert "s_requests=1000000000 is out of range" in said and "e+" not in said
    assert view.query()["s_ttft"] == "1234.5678"


def test_an_engine_without_a_request_cap_is_said_to_run_more_at_once():
    """TGI has no request cap: the tab says how many it ran at once against the others' slots, from the runs."""
    from app.schedulers.words import load_html

    lines = shared_lineup(LineupKey(parse_entries("vllm,tgi")))
    most = int(lines[1].run.slot.max()) + 1
    text = load_html(lines)
    assert most > 8 and f"TGI has no request cap: it ran up to {most} requests at once" in text
    assert "on 8 slots" in text and f"give the others {most} slots" in text
    capped = shared_lineup(LineupKey(parse_entries("vllm,tgi:prefill_chunking=0;max_batch_size=8")))
    assert 'data-claim="uncapped"' not in load_html(capped) and int(capped[1].run.slot.max()) + 1 <= 8
