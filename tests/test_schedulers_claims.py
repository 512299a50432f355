"""The Schedulers tab's legend, opening and computed sentences (issue 47), each checked against the runs on screen."""

import itertools
import re
from collections import Counter

import numpy as np

from app.page import palette
from app.schedulers.command import knobs_html
from app.schedulers.data import LineupKey, budget_of, drawn_cells, shared_lineup
from app.schedulers.intro import INTRO, LEGEND, LESSONS, legend_html, rules_html
from app.schedulers.lessons import lessons_html
from app.schedulers.view import DEFAULT_ENTRIES
from app.schedulers.words import load_html, table_html
from core.clock.hardware import cost_model
from core.limits import LimitError
from core.measure.lineup import differs, parse_entries, parse_entry
from core.measure.serving import per_request
from core.sched.policies import REGISTRY
from core.states import IDLE, PADDING, PAUSED, PREFILL, STATE_NAMES

# Machado, Oliveira and Fernandes (2009): full protanopia, deuteranopia and tritanopia, on linear RGB.
VISION = {
    "normal": np.eye(3),
    "protan": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
    "deutan": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
    ),
    "tritan": np.array(
        [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]]
    ),
}


def _lab(colour: str, vision: np.ndarray) -> np.ndarray:
    """Return a #RRGGBB colour as CIELAB (D65), as an eye with `vision` sees it."""
    srgb = np.array([int(colour[k : k + 2], 16) for k in (1, 3, 5)]) / 255
    linear = np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)
    rgb = np.clip(vision @ linear, 0, 1)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ rgb
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > 0.008856, np.cbrt(t), 7.787 * t + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def seen_apart(a: str, b: str) -> float:
    """Return the least CIELAB distance between two colours over normal vision and the three full dichromacies."""
    return min(float(np.linalg.norm(_lab(a, m) - _lab(b, m))) for m in VISION.values())


def _states_drawn(key: LineupKey) -> set[str]:
    """Return the names of the cell states in the lineup's runs, as recorded and as drawn, idle and padding too."""
    states = {STATE_NAMES[IDLE]}
    for line in shared_lineup(key):
        run = line.run
        if run.schedule is not None and len(run.schedule.cells):
            states |= {STATE_NAMES[s] for s in run.schedule.cells[:, 4].tolist()}
            states |= {STATE_NAMES[s] for s in drawn_cells(run.schedule.cells)[:, 4].tolist()}
        if (run.release_ms > run.finish_ms).any():  # a run without cells: its padding, from finish to release
            states.add(STATE_NAMES[PADDING])
    return states


def _lesson_key(name: str, **values) -> LineupKey:
    settings = dict(LESSONS[name][1])
    settings.pop("question")
    return LineupKey(parse_entries(",".join(settings.pop("entries"))), **(settings | values))


LEGEND_KEYS = [
    LineupKey(parse_entries("vllm,tgi,sglang,trtllm-no-evict")),
    *(_lesson_key(name) for name in LESSONS),
    LineupKey(parse_entries("static,tgi:prefill_chunking=0,sglang,trtllm-max-util"), kv_blocks=600, seed=4),
]


def test_every_state_the_tabs_runs_draw_has_a_legend_entry_and_no_two_entries_share_a_colour():
    """Issue 47, item 1: paused wore padding's orange, and static's hatched padding had no entry.

    Every state in the tab's runs (default, each lesson's, static beside pausing and preempting engines on a tight
    pool) has an entry; no two entries share a colour; and a colour-blind eye keeps the states apart (paused most
    of all: it sat on the hatching's colour for a protanope).
    """
    covered = {state for states, *_ in LEGEND for state in states}
    seen = set().union(*(_states_drawn(key) for key in LEGEND_KEYS))
    assert {"paused", "padding", "recompute", "generating", "idle"} <= seen
    assert seen <= covered, seen - covered
    colours = [colour.upper() for _states, _words, colour, _mark, _style in LEGEND]
    assert len(set(colours)) == len(colours)
    # A state's colours as drawn: padding's hatching too.
    drawn = {states: [colour] + ([palette.PADDING_HATCH] if "padding" in states else [])
             for states, _words, colour, _mark, _style in LEGEND if states}  # fmt: skip
    for (a, ca), (b, cb) in itertools.combinations(drawn.items(), 2):
        apart = min(seen_apart(x, y) for x in ca for y in cb)
        assert apart >= (30 if "paused" in a + b else 15), (a, b, apart)


# The engines' own names the opening used to carry, besides each engine preset's declared settings.
ENGINE_NAMES = ("max_num_seqs", "max_running_requests", "max_batch_size", "GUARANTEED_NO_EVICT", "MAX_UTILIZATION")


def test_the_opening_is_three_plain_lines_and_each_knob_is_named_where_its_setting_is_shown():
    """Issue 47, item 5: the opening was one 130-word sentence naming seven knobs.

    Now three short lines (what the tab compares, what it draws, what to try) that name no engine setting; each
    setting's name shows where the setting is: the slots' and budget's line, the rules and settings of the
    schedulers on screen, or the legend.
    """
    opening = re.search(r"<p>(.*?)</p>", INTRO).group(1)
    lines = opening.split("<br>")
    assert len(lines) == 3 and all(len(line.split()) <= 30 for line in lines), [len(x.split()) for x in lines]
    engines = [name for name, pol in REGISTRY.items() if pol.engine]
    knobs = {*ENGINE_NAMES, *(knob for name in engines for knob in REGISTRY[name].knobs)}
    assert [knob for knob in knobs if knob in opening] == []
    lineups = [DEFAULT_ENTRIES, *(values["entries"] for _label, values in LESSONS.values())]
    seen = ""
    for entries in lineups:
        shown = knobs_html(LineupKey(parse_entries(",".join(entries)))) + rules_html(entries) + legend_html()
        for text in entries:
            assert all(knob in shown for knob in parse_entry(text).policy().knobs), text
        seen += shown
    assert [knob for knob in knobs if knob not in seen] == []


# The same-timeline sentence's reasons, each as the page words it, with what the runs must show for it to be true.
WHY = {
    "cap": r"(?P<free>.+), without a request cap, never ran more than (?P<most>\d+) at once, within (?P<capped>.+)'s "
    r"(?P<slots>\d+) slots",
    "shared": r"both reserve each request's prompt plus its answer cap at admission, so the (?P<pool>[\d,]+)-block "
    r"pool held the next request back at the same passes under each \((?P<times>\d+) times?\)",
    "unlimited": r"on an unlimited pool, (?P<keeps>.+)'s reserving each request's prompt plus its answer cap at "
    r"admission holds no one back",
    "roomy": r"the (?P<pool>[\d,]+)-block pool never held the next request back from a free slot under either, so "
    r"(?P<keeps>.+)'s reserving each request's prompt plus its answer cap at admission cost nothing and "
    r"(?P<takes>.+) preempted no one",
    "whole": r"no prompt was cut into chunks under either \(the longest, (?P<longest>[\d,]+) tokens, went into one "
    r"pass\)",
    "one-class": r"every request here is in one priority class, so (?P<own>.+)'s queue is in arrival order",
    "arrival": r"(?P<own>.+) admitted no later arrival ahead of an earlier one: its queue kept arrival order",
    "no-pause": r"(?P<own>.+) never paused its running requests for a prompt pass",
    "no-padding": r"(?P<own>.+)'s batches padded no slot: each request's slot came free as it finished",
}
SAME = re.compile(
    r'data-claim="same-timeline" data-alike="(\d+),(\d+)" data-gap-ms="0">Here (.+?) and (.+?) draw the same '
    r"timeline \(every request .*? match\) because (.*?)\.</p>"
)


def _peak(run) -> int:
    """Return the most requests a run held at once, from its stays (a stay frees its slot before the next starts)."""
    events = sorted([(t, 1) for t in run.start_ms] + [(t, -1) for t in run.release_ms], key=lambda e: (e[0], e[1]))
    return max(itertools.accumulate(step for _t, step in events))


def _blocked(line) -> list:
    s = line.run.schedule
    return [(e.step, e.request) for e in (s.events if s is not None else ()) if e.kind == "blocked"]


def _check_reason(kind: str, m: re.Match, a, b, key: LineupKey) -> None:
    """Assert what reason `kind` (matched as `m`) says of the identical runs of lines a and b."""
    by_name = {line.entry.label(): line for line in (a, b)}
    reserves = {line.entry.label(): line.entry.policy().reserves_whole_life("paged") for line in (a, b)}
    cells = [line.run.schedule.cells if line.run.schedule is not None else np.zeros((0, 5), int) for line in (a, b)]
    if kind == "cap":
        free, capped = by_name[m["free"]], by_name[m["capped"]]
        assert not free.run.rules.has_request_cap and capped.run.rules.has_request_cap
        assert int(m["most"]) == _peak(free.run) <= int(m["slots"]) == capped.run.slots
    elif kind == "shared":
        assert all(reserves.values()) and int(m["pool"].replace(",", "")) == key.kv_blocks
        assert _blocked(a) == _blocked(b) and len(_blocked(a)) == int(m["times"]) > 0
    elif kind == "unlimited":
        assert key.kv_blocks == 0 and reserves[m["keeps"]] and not all(reserves.values())
    elif kind == "roomy":
        assert int(m["pool"].replace(",", "")) == key.kv_blocks and reserves[m["keeps"]] and not reserves[m["takes"]]
        assert not _blocked(a) and not _blocked(b) and a.figures.preemptions == b.figures.preemptions == 0
    elif kind == "whole":
        assert not any((c[:, 4] == PREFILL).any() for c in cells)
        assert int(m["longest"].replace(",", "")) == max(r.prompt_tokens for r in a.run.requests)
    elif kind == "one-class":
        assert by_name[m["own"]].entry.policy().orders_by_class and len({r.priority for r in a.run.requests}) == 1
    elif kind == "arrival":
        run = by_name[m["own"]].run
        order = np.argsort(run.arrival_ms, kind="stable")
        assert by_name[m["own"]].entry.policy().ordered and (np.diff(run.start_ms[order]) >= 0).all()
    elif kind == "no-pause":
        assert not any((c[:, 4] == PAUSED).any() for c in cells)
    elif kind == "no-padding":
        run = by_name[m["own"]].run
        assert by_name[m["own"]].entry.policy().forms_batches and (run.release_ms == run.finish_ms).all()


SAME_GRID = [
    ("tgi,trtllm-no-evict,vllm,trtllm-max-util", {"kv_blocks": 500}),  # a tight pool: TGI runs as no-evict does
    ("tgi,trtllm-no-evict,vllm,trtllm-max-util", {"kv_blocks": 700}),
    ("vllm,tgi,sglang,trtllm-no-evict", {}),
    ("vllm,vllm:scheduling_policy=priority,trtllm-max-util,trtllm-no-evict", {}),
    ("vllm,vllm:scheduling_policy=priority,trtllm-no-evict,sglang", {"priority_share": 30, "rate_per_s": 10.0}),
    ("static,sglang,continuous,sjf", {"slots": 1}),
]


def test_where_two_runs_are_identical_one_sentence_says_so_and_why():
    """Issue 47, item 6: on a tight pool TGI's run equals TensorRT-LLM no-evict's, and the page said nothing of why.

    Over five seeds and two slot counts (one for static): every identical pair has its sentence and no other pair
    does; each reason it gives is what the runs show (TGI without a cap never ran more than the others' slots, both
    reserve each request's whole life on this pool, no prompt was cut into chunks, ...), and a difference of caps is
    always explained.
    """
    found = Counter()
    for (entries, values), seed, slots in itertools.product(SAME_GRID, range(5), (4, 8)):
        key = LineupKey(parse_entries(entries), seed=seed, **({"slots": slots} | values))
        try:
            lines = shared_lineup(key)
        except LimitError:  # a pool the traffic's longest request does not fit: the tab refuses it
            continue
        said = {(int(m[0]), int(m[1])): m for m in SAME.findall(load_html(lines, *budget_of(key)))}
        for i, j in itertools.combinations(range(len(lines)), 2):
            a, b = lines[i], lines[j]
            identical = all(np.array_equal(getattr(a.run, c), getattr(b.run, c)) for c in RUN_COLUMNS)
            assert ((i, j) in said) == identical, (entries, seed, slots, i, j)
            if not identical:
                continue
            _i, _j, name_a, name_b, because = said[(i, j)]
            assert (name_a, name_b) == (a.entry.label(), b.entry.label())
            prefix = "what parts their rules never came into play here: "
            reasons = re.split(r"; (?:and )?", because.removeprefix(prefix)) if because.startswith(prefix) else []
            kinds = []
            for reason in reasons:
                kind, m = next((k, re.fullmatch(p, reason)) for k, p in WHY.items() if re.fullmatch(p, reason))
                _check_reason(kind, m, a, b, key)
                kinds.append(kind)
            if a.run.rules.has_request_cap != b.run.rules.has_request_cap:
                assert "cap" in kinds
            found.update(kinds)
            found["pairs"] += 1
    assert found["cap"] and found["shared"] and found["whole"] and found["one-class"], found


RUN_COLUMNS = ("slot", "start_ms", "first_token_ms", "finish_ms", "release_ms")
FAIR = re.compile(
    r'<p data-claim="fairness">The fairness star reads how alike the requests\' slowdowns are \(each one\'s latency '
    r"over its latency alone\), not how small: (?P<fair>.+) is (?P<rank>the|among the) fairest here \((?P<f1>[\d.]+) "
    r"against (?P<f2>[\d.]+) for (?P<other>.+)\), yet its requests were slowed (?P<m1>[\d,.]+)× on average against "
    r"(?P<m2>[\d,.]+)×: more alike, but more\.</p>"
)


def _starred(lines, key: LineupKey) -> set[int]:
    """Return the columns the table on screen stars in its fairness row."""
    table = table_html(lines, key.ttft_ms, key.itl_ms)
    row = re.search(r'<tr data-row="fairness">(.*?)</tr>', table).group(1)
    return {int(c) for c in re.findall(r'data-col="(\d+)" data-best="1"', row)}


def test_a_fairness_star_that_could_mislead_is_explained():
    """Issue 47, item 7: static could take the fairness star only because everyone waits alike.

    Over five seeds and two slot counts: wherever the table stars an entry whose requests were slowed more on
    average than an unstarred one's (past the THRESHOLD), one sentence says what the figure measures, with the
    starred entry slowed most and the unstarred one slowed least, and their numbers; nowhere else.
    """
    cost, crowned = cost_model(), Counter()
    for entries, seed, slots in itertools.product(
        ("static,continuous,vllm,sglang", "vllm,tgi,sglang,trtllm-no-evict", "vllm,vllm:scheduling_policy=priority"),
        range(5),
        (4, 8),
    ):
        key = LineupKey(parse_entries(entries), seed=seed, slots=slots, priority_share=30 * ("priority" in entries))
        lines = shared_lineup(key)
        stars = _starred(lines, key)
        mean = [float(per_request(line.run, cost).slowdown.mean()) for line in lines]
        plain = [i for i in range(len(lines)) if i not in stars]
        misleads = any(mean[s] > mean[o] and differs(mean[s], mean[o]) for s in stars for o in plain)
        m = FAIR.search(lessons_html(lines, cost))
        assert bool(m) == misleads, (entries, seed, slots, mean, stars)
        if not m:
            continue
        fair, other = max(stars, key=lambda i: mean[i]), min(plain, key=lambda i: mean[i])
        assert (m["fair"], m["other"]) == (lines[fair].entry.label(), lines[other].entry.label())
        assert (m["rank"] == "the") == (len(stars) == 1)
        assert (m["f1"], m["f2"]) == (f"{lines[fair].figures.fairness:.3f}", f"{lines[other].figures.fairness:.3f}")
        assert (m["m1"], m["m2"]) == (f"{mean[fair]:,.2f}", f"{mean[other]:,.2f}") and mean[fair] > mean[other]
        crowned[m["fair"]] += 1
    assert crowned["static"], crowned  # the learner's case: static starred, its requests slowed most
