"""Exercise 1's sentences computed from the sweep beside them: the offered load, the motivation, what moves the knee."""

from __future__ import annotations

from functools import lru_cache

from core.measure.lineup import differs
from core.measure.sweep import (
    DEFAULT_BATCHES,
    SWEEP_TRAFFIC,
    CostModel,
    SweepPoint,
    capacities,
    knee,
    mean_context,
    retarget,
    same_run_from,
)
from core.workload.traffic import generate

# The page opens below capacity: 14 requests/s of the sweep's traffic offer about 2,700 tokens/s, which batch 64 and
# up serve kept full (the CLI's default, 80/s, offers about 3.5 times what any batch size serves: a queue that grows).
PAGE_RATE_PER_S = 14.0


@lru_cache(maxsize=1)
def mean_output_tokens() -> float:
    """Return the sweep traffic's mean output tokens (what each request asks the batch to generate)."""
    requests = generate(SWEEP_TRAFFIC)
    return sum(r.output_tokens for r in requests) / len(requests)


@lru_cache(maxsize=16)
def kept_full(model: CostModel) -> tuple[tuple[int, float], ...]:
    """Return each batch size's tokens/s kept full on the sweep's traffic, for this cost model (~0.5 s, cached)."""
    return tuple(capacities(model).items())


def load_html(rate_per_s: float, model: CostModel, points: tuple[SweepPoint, ...] = ()) -> str:
    """Return the offered load against what each batch size serves kept full, and where the queue grows without bound.

    A batch keeps up with Poisson arrivals when it serves more tokens/s kept full than they offer; a finite run's own
    throughput cannot tell (it is at most the offered load, less its start and its drain). Where no size keeps up
    but the sweep's run (`points`) gives every request a slot from some size up, the backlog there is the batch's,
    not a queue's (a learner read "the queue grows" beside "every request gets a slot", issue 47).
    """
    mean = round(mean_output_tokens(), 1)
    offered = offered_tokens_per_s(rate_per_s)
    full = kept_full(model)
    head = (
        f"Offered load: {rate_per_s:g} request{'' if rate_per_s == 1 else 's'}/s x {mean:.1f} "
        f"tokens each = {offered:,.0f} tokens/s."
    )
    first = first_keeping_up(offered, dict(full))
    if first is None:
        b, t = full[-1]
        free = same_run_from(list(points))
        grows = (
            "the queue grows without bound for as long as they keep coming"
            if free is None
            else "the unfinished work grows for as long as they keep coming: below batch "
            f"{free.batch} as a queue for a slot; from batch {free.batch} up, where every request gets a slot as it "
            "arrives, as a batch that holds more rows, and so runs slower passes, the longer they keep coming"
        )
        return (
            f'<p class="bv-load" data-load="over" data-first="none">{head} Kept full (a queue that never empties), '
            f"the largest batch, {b}, serves {t:,.0f} tokens/s. <b>The requests arrive faster than any batch size "
            f"serves them, so {grows}</b>.</p>"
        )
    served = dict(full)[first]
    if first == full[0][0]:
        return (
            f'<p class="bv-load" data-load="under" data-first="{first}">{head} Kept full, even batch {first} serves '
            f"{served:,.0f} tokens/s: every batch size keeps up with the arrivals, so no queue grows; a bigger batch "
            "only adds rows when the load fills them.</p>"
        )
    below, short = next((b, t) for b, t in reversed(full) if b < first)
    return (
        f'<p class="bv-load" data-load="under" data-first="{first}">{head} Kept full (a queue that never empties), '
        f"batch {first} serves {served:,.0f} tokens/s and batch {below} only {short:,.0f}: every batch size from "
        f"{first} up keeps up with the arrivals, so no queue grows there; below it the queue grows for as long as "
        "they keep coming. Past that, a bigger batch only adds rows when the load fills them.</p>"
    )


def offered_tokens_per_s(rate_per_s: float) -> float:
    """Return the tokens/s that `rate_per_s` requests of the sweep's traffic offer, as the load sentence computes it."""
    return rate_per_s * round(mean_output_tokens(), 1)  # the product of the figures the sentence shows


def first_keeping_up(offered: float, full: dict[int, float]) -> int | None:
    """Return the smallest batch that serves more than `offered` tokens/s kept full, or None where none does."""
    return next((b for b, t in full.items() if t > offered), None)


def keeps_up_html(batch: int, offered: float, full: dict[int, float], slot_for_all: bool = False) -> str:
    """Return, for the knee's batch, that it does not keep up with the offered load; "" where it does.

    The knee is the largest batch meeting the per-token target; whether it serves the arrivals is another question,
    and where it cannot, the verdict says so beside the load sentence that already shows it (`load_html`).
    `slot_for_all`: the sweep's run at this size gives every request a slot as it arrives (no queue forms).
    """
    served = full.get(batch)
    if served is None or served > offered:
        return ""
    first = first_keeping_up(offered, full)
    others = f"batch {first} is the first that does" if first is not None else "no batch size does"
    grows = "the batch holds more rows" if slot_for_all else "its queue grows"
    return (
        f' <span data-keeps-up="no">At this load batch {batch} does not keep up: kept full it serves '
        f"{served:,.0f} tokens/s against the {offered:,.0f} offered, so {grows} for as long as the "
        f"requests keep coming ({others}).</span>"
    )


def motivation_html(model: CostModel) -> str:
    """Return the chapter's motivation from the roofline: a decode pass reads the whole model, so rows are cheap."""
    context = mean_context(generate(SWEEP_TRAFFIC))
    one, many = model.step_ms(1, context), model.step_ms(32, context)
    return (
        f'<p class="bv-motivation" data-motivation="32">Why batch at all: a decode pass reads every weight once, '
        f"whatever it holds. On this roofline a pass of 1 row takes {one:.1f} ms for 1 token; a pass of 32 rows takes "
        f"{many:.1f} ms for 32 tokens: {32 * one / many:.1f}x the tokens per millisecond.</p>"
    )


def moves_html(points: tuple[SweepPoint, ...], target_ms: float, rate_per_s: float, faster: tuple[SweepPoint, ...],
               faster_rate: float) -> str:  # fmt: skip
    """Return what a looser target and a higher rate do to the knee here, each from a sweep, not in general."""
    here = knee(list(points))
    looser_ms = min(target_ms * 1.5, 500.0)
    looser = knee(retarget(list(points), looser_ms))
    at_rate = knee(retarget(list(faster), target_ms))

    def name(p: SweepPoint | None) -> str:
        return "no batch size" if p is None else f"batch {p.batch}"

    def move(new: SweepPoint | None) -> str:
        a, b = (-1 if here is None else here.batch), (-1 if new is None else new.batch)
        return "keeps it at" if a == b else ("raises it to" if b > a else "lowers it to")

    return (
        f'<p class="bv-moves" data-knee-here="{here.batch if here else "none"}">Here the knee is {name(here)}. A '
        f"looser target, {looser_ms:g} ms, {move(looser)} {name(looser)}; {faster_rate:g} requests/s instead of "
        f"{rate_per_s:g} {move(at_rate)} {name(at_rate)} at {target_ms:g} ms.</p>"
    )


def latency_html(points: tuple[SweepPoint, ...]) -> str:
    """Return what happens to latency past the knee here: each request once admitted, and end to end, from the sweep.

    The chapter's "past a point batching makes single-request latency worse" is a request's time once it has a slot
    (slower passes); the end-to-end figure also counts the wait for a slot, which a bigger batch shortens.
    """
    here = knee(list(points))
    batches = [p.batch for p in points]
    if here is None or here.batch == batches[-1]:
        return '<p class="bv-latency-words" data-past-knee="none">No batch size here lies past the knee.</p>'
    if here.one_run:  # the knee is the first of the sizes that all run one run: past it, the same run
        return (
            '<p class="bv-latency-words" data-past-knee="same">Past the knee every size is this same run: at most '
            f"{here.peak_rows} rows ever run at once, so a batch larger than {here.batch} only adds slots nobody uses; "
            f"{end_to_end(points)}.</p>"
        )
    after = points[batches.index(here.batch) + 1]
    change = after.p99_admitted_ms - here.p99_admitted_ms
    longer = "longer" if change > 0 else "no longer"
    if not differs(after.p99_admitted_ms, here.p99_admitted_ms, time=True):
        longer = "about as long"
    admitted = (
        f"past the knee each request, once it has a slot, takes {longer}: p99 "
        f"{here.p99_admitted_ms / 1e3:.2f} s from admission to last token at batch {here.batch} against "
        f"{after.p99_admitted_ms / 1e3:.2f} s at {after.batch}"
    )
    direction = "up" if longer == "longer" else "flat"
    return f'<p class="bv-latency-words" data-past-knee="{direction}">Here {admitted}; {end_to_end(points)}.</p>'


def end_to_end(points: tuple[SweepPoint, ...]) -> str:
    """Return where the end-to-end p99 is lowest and, where it exists, the size from which nobody waits for a slot."""
    lowest = min(points, key=lambda p: p.p99_latency_ms)
    shown = lambda p: f"{p.p99_latency_ms / 1e3:.2f}"  # noqa: E731 - as the sentence and the table show it
    tied = [p for p in points if shown(p) == shown(lowest)]
    larger = " and every larger size" if len(tied) > 1 and tied == list(points[points.index(tied[0]) :]) else ""
    words = f"the end-to-end p99 is lowest at batch {tied[0].batch}{larger} ({shown(lowest)} s)"
    free = same_run_from(list(points))  # from it up the cap turns nobody away: nobody waits for a slot
    if free is None:
        words += ", and at every size some requests wait for a slot"
    else:
        words += (
            f"; from batch {free.batch} up every request gets a slot as it arrives, so the end-to-end p99 "
            f"({free.p99_latency_ms / 1e3:.2f} s there) is the time once admitted ({free.p99_admitted_ms / 1e3:.2f} s) "
            "plus at most the wait for the next pass to begin"
        )
    last = points[-1]
    if last.batch > lowest.batch and differs(last.p99_latency_ms, lowest.p99_latency_ms, time=True):
        words += (
            f"; past batch {lowest.batch} the slower passes take the end-to-end p99 to "
            f"{last.p99_latency_ms / 1e3:.2f} s at {last.batch}"
        )
    return words


def _sizes(n: int) -> str:
    return "one size" if n == 1 else f"{n} sizes"


def _shown(p: SweepPoint) -> tuple[str, ...]:
    """Return a size's figures on the clock as the table shows them."""
    seconds = f"{p.p99_latency_ms / 1e3:.2f}", f"{p.p99_admitted_ms / 1e3:.2f}"
    return f"{p.itl_p99_ms:.1f}", f"{p.tokens_per_s:.0f}", *seconds


def guess_html(guess: int, best: SweepPoint | None, points: tuple[SweepPoint, ...] = ()) -> str:
    """Return how the learner's guess compares with the knee on the clock, in batch sizes (each double the last).

    `points`: the sweep, to say where a smaller guess's figures show the same as the knee's (issue 47: batch 64 was
    "one size below" beside a row identical to batch 128's).
    """
    if best is None:
        return f"You guessed batch {guess}; on the clock no batch size meets the target."
    steps = DEFAULT_BATCHES.index(guess) - DEFAULT_BATCHES.index(best.batch)
    if steps == 0:
        return f'You guessed batch {guess}: <b data-guess="right">right</b>.'
    if steps > 0 and best.one_run:  # a larger size running the knee's own run
        return f'You guessed batch {guess}: <b data-guess="right">right</b>, the same run as batch {best.batch}.'

    where = "above" if steps > 0 else "below"
    said = f'You guessed batch {guess}: <b data-guess="{where}">{_sizes(abs(steps))} {where}</b> the knee.'
    mine = next((p for p in points if p.batch == guess), None)
    if steps < 0 and mine is not None and _shown(mine) == _shown(best):
        said += (
            f' <span data-guess-alike="{guess}">Its figures on the clock match the knee\'s to the digits shown: at '
            f"batch {guess} the cap holds back so few passes that it does not show, and the knee is the largest size "
            "meeting the target.</span>"
        )
    return said
