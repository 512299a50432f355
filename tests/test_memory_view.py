"""The memory view says what its runs show: every claim and every cell checked against the core at each pool size."""

import re

import pytest

from app.memory.lesson import MAX_BLOCKS, MIN_BLOCKS, lesson_html, runs_for
from app.memory.lesson import figures as _figures
from app.memory.view import MemoryView
from core.chapter.memory_example import BLOCK_SIZE, SLOTS, memory_requests
from core.kv.memory import MemoryConfig
from core.sched.engine import as_run, memory_waits, schedule
from core.states import PREFILL
from tests.oracles.memory_view import events_text, mode_html


def _core(blocks: int) -> dict:
    """The three runs, computed here from the core alone (not through the view's cache)."""
    reqs = memory_requests()
    pool = dict(kv_blocks=blocks, block_size=BLOCK_SIZE)
    return {
        "paged": schedule(reqs, SLOTS, "continuous", MemoryConfig(**pool)),
        "contiguous": schedule(reqs, SLOTS, "continuous", MemoryConfig(**pool, allocation="contiguous")),
        "static": schedule(reqs, SLOTS, "static", MemoryConfig(**pool)),
    }


def _claims(text: str) -> dict[str, str]:
    return {k: re.sub("<[^>]+>", "", v) for k, v in re.findall(r'data-claim="([\w-]+)">(.*?)</span>', text)}


def _most_running(s) -> int:
    grid = as_run(s).timeline_strings()
    return max(sum(row[t] != "." for row in grid) for t in range(len(grid[0])))


def check_memory_claims(blocks: int) -> None:
    """Each mode's sentence states its own drain and most requests running; the gap sentence their differences."""
    core = _core(blocks)
    drains = {m: as_run(s).drain for m, s in core.items()}
    claims = _claims(lesson_html(blocks))
    for mode, s in core.items():
        assert f"done at step {drains[mode]}" in claims[f"memory-{mode}"]
        n = _most_running(s)
        assert f"up to {n} request{'s' if n != 1 else ''}" in claims[f"memory-{mode}"]
    paged = claims["memory-paged"]
    unlimited = as_run(schedule(memory_requests(), SLOTS, "continuous")).drain
    assert ("as with unlimited memory" in paged) == (drains["paged"] == unlimited)
    preempts = core["paged"].preemptions
    times = {1: "once", 2: "twice"}.get(preempts, f"{preempts} times")  # not "1 time"
    assert (f"preempts {times} when" in paged) == (preempts > 0)
    for mode, words in (("paged", "waits for memory at {} step"), ("contiguous", "waits for memory at {} step")):
        rec = schedule(memory_requests(), SLOTS, "continuous", core[mode].memory, record_pool=True)
        n = len(memory_waits(rec))
        assert (words.format(n) in claims[f"memory-{mode}"]) == (n > 0)
        if mode == "contiguous" and n:
            holes = sum(w.hole for w in memory_waits(rec))
            words = claims["memory-contiguous"]
            assert (f"{n - holes} for want of free blocks" in words) == (n > holes)  # never "0 for want of"
            assert (f"{holes} with enough blocks free but not in one run" in words) == (holes > 0)
    if drains["paged"] < drains["contiguous"]:
        gap = claims["memory-gap"]
        assert f"{drains['contiguous'] - drains['paged']} steps before contiguous" in gap
        assert f"{drains['static'] - drains['paged']} before static" in gap
    else:
        assert drains["paged"] == drains["contiguous"]
        assert f"done at step {drains['contiguous']} too, as paged is" in claims["memory-gap"]
        peaks = {m: int(core[m].pass_blocks.max()) for m in ("paged", "contiguous")}
        assert (
            f"contiguous holds {peaks['contiguous']} blocks where paged holds {peaks['paged']}" in claims["memory-gap"]
        )
        assert peaks["contiguous"] >= peaks["paged"]
    assert drains["paged"] <= drains["contiguous"] and drains["paged"] <= drains["static"]


@pytest.mark.parametrize("blocks", range(MIN_BLOCKS, MAX_BLOCKS + 1))
def test_every_claim_holds_on_the_runs_shown(blocks):
    """The lesson's sentences are true on the runs of that pool size."""
    check_memory_claims(blocks)


def test_the_hole_sentence_names_a_real_hole():
    """At 12 blocks: the request named waits at that step needing blocks that are free, but in no one run."""
    text = _claims(lesson_html(12))["memory-contiguous"]
    found = re.search(r"At step (\d+), (\w) needs (\d+) blocks, (\d+) are free, but the longest run is (\d+)", text)
    step, who, needed, free, longest = found.groups()
    s = schedule(memory_requests(), SLOTS, "continuous", _core(12)["contiguous"].memory, record_pool=True)
    p = [p for p, start in enumerate(s.pass_start.tolist()) if int(start) == int(step)][0]
    owners = s.pool_maps[p]
    runs = "".join("." if o < 0 else "x" for o in owners).split("x")
    assert sum(o < 0 for o in owners) == int(free) >= int(needed) > max(len(r) for r in runs) == int(longest)
    assert who in {r.id for r in s.requests} and who not in {s.requests[o].id for o in owners if o >= 0}


@pytest.mark.parametrize("blocks", [MIN_BLOCKS, 8, 12])
def test_each_cell_and_pool_box_is_the_cores(blocks):
    """The table's letters are the core's timeline; the pool boxes held are the blocks the core counts at the step."""
    core = _core(blocks)
    width = max(as_run(s).drain for s in core.values())
    for mode, s in core.items():
        run = as_run(s)
        grid = run.timeline_strings(width)
        for step in (0, 3, width - 1):
            out = mode_html(mode, runs_for(blocks)[mode], step, width, blocks)
            rows = re.findall(r'<tr><th scope="row">slot (\d+)</th>(.*?)</tr>', out)
            assert len(rows) == SLOTS
            for slot, cells in rows:
                states = re.findall(r'<td class="(\w+)', cells)
                chars = "".join({"gen": "G", "pad": "P", "idle": ".", "rec": "R", "pre": "F"}[c] for c in states)
                assert chars == grid[int(slot)]
            pool = re.search(rf'data-pool="{mode}"[^>]*>(.*?)</div>', out).group(1)  # not the "before" pool
            held = len(re.findall(r'<span class="held"', pool))
            at = [p for p, start in enumerate(s.pass_start.tolist()) if int(start) == step]
            assert held == (int(s.pass_blocks[at[0]]) if at else 0)
            assert len(re.findall(r'class="(?:held|free)"', pool)) == blocks
        played = mode_html(mode, runs_for(blocks)[mode], width - 1, width, blocks)  # every step played
        waits = memory_waits(runs_for(blocks)[mode])
        assert len(re.findall(r'class="[^"]*blocked', played)) == len(waits)  # one ⊘ per wait, at its slot
        future = mode_html(mode, runs_for(blocks)[mode], 0, width, blocks)  # at step 0: the rest behind the curtain
        assert len(re.findall(r'class="[^"]*future', future)) == SLOTS * (width - 1)


def test_the_log_says_who_was_preempted_and_why():
    """On the first pool where paged preempts, the log names the request that needed a block and the one thrown out."""
    blocks = next(b for b in range(MIN_BLOCKS, MAX_BLOCKS + 1) if runs_for(b)["paged"].preemptions)
    s = runs_for(blocks)["paged"]
    event = next(e for e in s.events if e.kind == "preempt")
    step = int(s.pass_start[event.step])
    names = [r.id for r in s.requests]
    freed = sum(1 for o in s.pool_maps[event.step - 1] if o == event.request)  # what it held the pass before
    assert freed > 0
    prompt = s.requests[event.request].prompt_tokens
    line = events_text(s, step)[0]
    assert line.startswith(f"step {step}: {names[event.needed_by]} needs a new block and none is free; ")
    assert f"{names[event.request]}, admitted last, is preempted: its {freed} blocks freed" in line
    assert f"its prompt ({prompt} tokens) and of the {event.tokens} token" in line
    assert "R" in "".join(as_run(s).timeline_strings())


def test_a_deep_link_sets_the_pool_and_a_bad_one_is_named():
    """?blocks=8 opens on 8 blocks; ?blocks=0 is clamped with a message naming the range."""
    view = MemoryView()
    assert view.apply_query({"blocks": "8"}) == [] and view.blocks == 8
    (message,) = view.apply_query({"blocks": "0"})
    assert f"{MIN_BLOCKS}..{MAX_BLOCKS}" in message and view.blocks == MIN_BLOCKS
    (message,) = MemoryView().apply_query({"blocks": "nan"})
    assert "not a whole number" in message


def check_chunk_claims(budget: int) -> None:
    """The huge-prompt sentences state the core's passes: the one long pass, and the chunks that replace it."""
    from app.memory.view import chunked_html
    from core.chapter.chunked_example import SLOTS as CHUNK_SLOTS
    from core.chapter.chunked_example import huge_prompt_requests
    from core.clock.hardware import cost_model

    reqs, cost = huge_prompt_requests(), cost_model()
    plain = schedule(reqs, CHUNK_SLOTS, "continuous", cost=cost)
    chunked = schedule(reqs, CHUNK_SLOTS, "chunked", cost=cost, token_budget=budget)
    claims = _claims(chunked_html(budget))

    def longest(s):
        return max(e - a for a, e, rows in zip(s.pass_start, s.pass_end, s.pass_rows) if rows > 0)

    big = len(reqs) - 1
    assert f"one pass of {longest(plain):.1f} ms" in claims["chunk-stall"]
    assert plain.pass_prefill.max() >= reqs[big].prompt_tokens  # the whole prompt in one pass
    # The big request's chunk cells (F), then the pass of its first token, which carries the last chunk.
    f_cells = sum(hi - lo for i, _, lo, hi, state in chunked.cells.tolist() if i == big and state == PREFILL)
    chunks = f_cells + 1
    assert f"over {chunks} passes" in claims["chunk-budget"]
    assert chunks >= -(-reqs[big].prompt_tokens // budget)  # at most `budget` of its tokens per pass
    assert f"sits through is {longest(chunked):.1f} ms" in claims["chunk-budget"]
    assert longest(chunked) < longest(plain)
    ttft = lambda s: s.pass_end[s.first_pass[big]] - reqs[big].arrival  # noqa: E731
    assert f"comes {ttft(chunked):.1f} ms after it arrives instead of {ttft(plain):.1f} ms" in claims["chunk-budget"]
    assert ttft(chunked) > ttft(plain)  # the price: the big request waits a little longer
    ms = plain.pass_end - plain.pass_start
    early = [
        m for m, a, e, pre in zip(ms, plain.pass_start, plain.pass_end, plain.pass_prefill) if pre == 0 and e <= 100
    ]
    late = [
        m
        for p, (m, pre) in enumerate(zip(ms, plain.pass_prefill))
        if pre == 0 and plain.first_pass[big] < p < plain.finish_pass[big]
    ]
    import statistics

    b, a = statistics.median(early), statistics.median(late)
    assert f"the median is {b:.1f} ms before the prompt arrives and {a:.1f} ms while" in claims["chunk-context"]
    assert a > b  # more context to read: longer passes


@pytest.mark.parametrize("budget", [256, 512, 1024, 2048])
def test_the_huge_prompt_claims_hold(budget):
    """At each budget the page offers, the stall and the chunks are what the core's timed runs show."""
    check_chunk_claims(budget)


def test_a_bad_budget_in_the_url_is_named():
    """?budget=7 is refused naming the budgets allowed; the default stays."""
    view = MemoryView()
    (message,) = view.apply_query({"budget": "7"})
    assert "256, 512, 1024, 2048" in message and view.budget == 512
    assert MemoryView().apply_query({"budget": "1024"}) == []


@pytest.mark.parametrize("blocks", range(MIN_BLOCKS, MAX_BLOCKS + 1))
def test_every_wait_for_memory_is_marked_and_real(blocks):
    """Continuous: each listed step has an empty slot and its request waiting.

    Every such step is listed, except a boundary that preempted (no admission is tried there).
    """
    for mode, s in runs_for(blocks).items():
        if mode == "static":
            continue
        run = as_run(s)
        grid = run.timeline_strings(run.drain)
        if run.cells is not None:
            spans = [(i, lo, hi) for i, _, lo, hi, state in run.cells.tolist() if state != 2]
        else:  # one interval per request
            spans = [(i, int(run.start[i]), int(run.finish[i])) for i in range(len(s.requests))]
        running = {t: {i for i, lo, hi in spans if lo <= t < hi} for t in range(run.drain)}
        listed = {w.step: w for w in memory_waits(s)}
        preempted = {int(s.pass_start[e.step]) for e in s.events if e.kind == "preempt"}
        done = {i: int(run.finish[i]) for i in range(len(s.requests))}
        for t in range(run.drain):
            empty = any(row[t] == "." for row in grid)
            waiting = [i for i in range(len(s.requests)) if run.arrival[i] <= t < done[i] and i not in running[t]]
            if t in listed:
                assert empty and listed[t].request in waiting
            elif empty and waiting:
                assert t in preempted, (mode, t)


def test_the_log_speaks_at_every_step_a_request_waits_with_its_reason():
    """Every ⊘ on a timeline has its line in the log at that step, naming the request and why.

    Why: too few blocks free, or enough free in holes (the longest run named). At 12 blocks, contiguous's E waited
    from step 3 to 8 and the log spoke only at step 3, and G's wait at step 10 ("needs 4 blocks, 4 free") hid the hole.
    """
    for blocks in range(MIN_BLOCKS, MAX_BLOCKS + 1):
        for mode, s in runs_for(blocks).items():
            names = [r.id for r in s.requests]
            waits = memory_waits(s)
            for step in range(max(f.drain for f in _figures(blocks).values()) + 1):
                lines = events_text(s, step)
                here = [w for w in waits if w.step == step]
                waiting = {w.request for w in here}
                spoken = [line for line in lines if " waits for memory" in line]
                assert len(spoken) == len(waiting), (blocks, mode, step, lines)
                for w in here:
                    [line] = [x for x in spoken if x.startswith(f"step {step}: {names[w.request]} waits for memory")]
                    if w.hole:
                        assert f"{w.free} are free but in holes, the longest free run {w.longest_run}" in line
                    else:
                        assert "in holes" not in line and (f"only {w.free} " in line or "none is free" in line)
                    assert f"needs {w.needed} block" in line
    s = runs_for(12)["contiguous"]
    assert [line for t in range(3, 9) for line in events_text(s, t)] == [
        f"step {t}: E waits for memory: it needs 4 blocks"
        + ("; 4 are free but in holes, the longest free run 3 (a contiguous cache needs them in one run)"
           if t >= 5 else " and only 1 is free")
        for t in range(3, 9)
    ]  # fmt: skip


def test_the_server_sends_the_pools_runs_once_and_a_step_is_one_number():
    """The tab's modes are drawn in the browser: a step changes one number, a new pool sends that pool's JSON."""
    from app.memory.data import memory_json

    view = MemoryView()
    view.__panel__()
    assert view.modes.payload == memory_json(view.blocks)
    payload = view.modes.payload
    view.step = 3
    assert view.modes.step == 3 and view.modes.payload is payload
    view.blocks = MIN_BLOCKS
    assert view.modes.payload == memory_json(MIN_BLOCKS)


def test_each_tabs_block_size_is_said_with_why_and_the_others():
    """Three tabs, three block sizes (4, 8, 16): the Memory tab and the simulator's memory lesson say each, and why.

    A learner's read (issue 47): "three block sizes on three tabs with no word why". The numbers are the tabs' own.
    """
    import re

    from app.memory.view import BLOCK_SIZE as MEMORY_BLOCKS
    from app.memory.view import INTRO
    from app.schedulers.data import BLOCK_SIZE as LINEUP_BLOCKS
    from app.simulator import memory_lesson
    from app.simulator.state import BLOCK_SIZE as STEP_BLOCKS

    words = re.sub(r"<[^>]+>", "", INTRO)
    assert f"Blocks here hold {MEMORY_BLOCKS} tokens ({STEP_BLOCKS} on the simulator tab, {LINEUP_BLOCKS} on the " \
        "Schedulers tab: vLLM's default" in words
    lesson = re.sub(r"<[^>]+>", "", memory_lesson.lesson_html())
    assert f"in blocks of {STEP_BLOCKS} tokens (small, for requests of tens of tokens; the Schedulers tab uses " \
        f"vLLM's {LINEUP_BLOCKS})" in lesson
    assert len({MEMORY_BLOCKS, STEP_BLOCKS, LINEUP_BLOCKS}) == 3
