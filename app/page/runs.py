"""What every tab sends about a run: its arrival step on a clock, its policy's traits and its loop's lines.

The Simulator and Schedulers tabs each draw runs of the same traffic; what they send the renderer about a run's
policy (its traits, its loop in the page's words) is one function here, read from the policy object the run carries.
"""

from __future__ import annotations

from app.page import policy_words
from core.clock.hardware import cost_model
from core.sched.policies import Policy, get_policy
from core.states import STATE_NUMBERS

MIN_LABEL_CELLS = 2  # the fewest cells a request's bar needs before the timeline writes its id on it


def arrival_step_ms(accelerator: str, model: str) -> float:
    """Return how long one arrival step lasts on a clock: a one-row decode pass on the preset (~5 ms on an H100).

    So the traffic keeps the load it has in steps: requests arrive about as fast, per pass, as in the chapter's view.
    """
    return float(cost_model(accelerator, model).pass_ms(1, 0, 0))


def policy_fields(policy: Policy, allocation: str) -> dict:
    """Return what the renderer reads about a run's policy (the object the run carries) instead of its name.

    Its traits, whether a request reserves its whole life, and the keys of its loop's lines (without memory, with).
    """
    return {
        "policy": policy.name,
        "traits": policy_words.page_traits(policy),  # the core's traits, and the page's colour after the label
        "reserves": policy.reserves_whole_life(allocation),
        "loop": [list(line) for line in loop_lines(policy)],
        "loop_memory": [list(line) for line in loop_lines(policy, allocation)],
        "states": STATE_NUMBERS,  # the cell states, defined once (core/states.py)
    }


def _code(statement: str, comment: str = "") -> str:
    return f"    {statement:<38}# {comment}" if comment else f"    {statement}"


LOOPS = {
    "continuous": (
        ("head", "while serving:"),
        ("retire", _code("retire the finished", "their slots and KV blocks are free now")),
        ("admit", _code("admit waiting into free slots", "a newcomer's prompt joins as prefill")),
        ("build", _code("batch = build_batch(running)", "ragged: only each row's new tokens")),
        ("forward", _code("forward(batch)", "one new token for every row")),
    ),
    "static": (
        ("head", "while serving:"),
        ("retire", _code("if every member finished: retire all", "the whole batch leaves at once")),
        ("admit", _code("if every slot is free: admit a batch", "up to one waiting request per slot")),
        ("build", _code("batch = pad(members)", "finished members stay as padding")),
        ("forward", _code("forward(batch)", "one token per row, padding included")),
    ),
}


# On a limited KV pool memory decides too: admission waits for the head's KV, and a row short of a block preempts.
ADMIT_WHILE_FITS = (
    "admit",
    _code("admit waiting while their KV fits", "in arrival order: a head that does not fit waits"),
)
LOOPS_MEMORY = {  # keyed by policy, and "contiguous" for continuous batching's contiguous reservations
    "continuous": (
        LOOPS["continuous"][0],
        LOOPS["continuous"][1],
        ("preempt", _code("preempt the last admitted", "when a row needs a block and none is free")),
        ADMIT_WHILE_FITS,
        *LOOPS["continuous"][3:],
    ),
    "contiguous": (*LOOPS["continuous"][:2], ADMIT_WHILE_FITS, *LOOPS["continuous"][3:]),  # reserved: no growth
    "static": (
        *LOOPS["static"][:2],
        ("admit", _code("if every slot is free: admit a batch", "as many rows as whole rectangles fit")),
        *LOOPS["static"][3:],
    ),
}


def loop_lines(policy: str, allocation: str | None = None) -> tuple:
    """Return the loop a policy follows, from its traits and words; `allocation` given: with memory's lines.

    A batch policy runs static's loop; the others continuous's, admitting in their own order, preempting whom they
    preempt when blocks grow one by one, and without the preempt line when a request reserves its whole life.
    """
    rules = get_policy(policy)
    if rules.forms_batches:
        return LOOPS_MEMORY["static"] if allocation else LOOPS["static"]
    head, retire, admit, *rest = LOOPS["continuous"]
    if rules.ordered:
        admit = ("admit", _code("admit waiting into free slots", f"{rules.queue_words}; prompts join as prefill"))
    if allocation is None:
        return (head, retire, admit, *rest)
    fits = ("admit", _code("admit waiting while their KV fits", f"{rules.queue_words}: a head that does not fit waits"))
    if rules.reserves_whole_life(allocation):
        return (head, retire, fits, *rest)  # reserved: nobody grows, nobody is preempted
    preempt = ("preempt", _code(f"preempt {rules.victim_words}", "when a row needs a block and none is free"))
    return (head, retire, preempt, fits, *rest)
