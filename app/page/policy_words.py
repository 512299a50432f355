"""Each policy's page words, by name: its colour and captions; a policy registered later gets a plain fallback."""

from __future__ import annotations

from dataclasses import dataclass, replace

from app.page.palette import CONTINUOUS_COLOR, STATIC_COLOR
from core.sched.policies import STATIC_ROW, Policy


@dataclass(frozen=True)
class PolicyWords:
    """What the page shows of one policy beside its traits: its colour and its captions."""

    colour: str
    caption: str  # the timeline's caption on an unlimited pool
    caption_memory: str = ""  # on a limited pool ("" : the same)
    caption_paused: str = ""  # a mode whose prefill passes pause the batch (TGI without chunking; "" : the same)


# A policy registered later (a toy a test registers, a preset not yet written up): Paul Tol's purple, which no other
# policy or slot state wears, and its own label and summary as its caption.
FALLBACK_COLOUR = "#AA4499"

WORDS: dict[str, PolicyWords] = {
    "continuous": PolicyWords(
        CONTINUOUS_COLOR,  # Okabe-Ito bluish green; no slot state's colour
        "Continuous batching: between forward passes, finished requests leave and waiting ones take the "
        "free slots at once. No padding; a slot is idle only when nobody is waiting.",
        "Continuous batching: between forward passes, finished requests leave and waiting ones take the free "
        "slots, in arrival order, while the next one's KV fits; a request that needs a block when none is free "
        "preempts the one admitted last, which later recomputes its KV.",
    ),
    "static": PolicyWords(
        STATIC_COLOR,  # Okabe-Ito reddish purple
        "Static batching: a batch forms only when every slot is free, and runs until its longest request "
        "finishes. Finished requests keep their slot as padding; newcomers wait for the whole batch.",
        "Static batching reserves KV for whole rows, whatever the allocation: a batch forms only when every slot is "
        f"free, with as many members as whole rows fit the pool (each row {STATIC_ROW}); it runs until its "
        "longest request finishes.",
    ),
    "chunked": PolicyWords(
        "#56B4E9",  # Okabe-Ito sky blue
        "Chunked prefill: continuous batching whose passes hold at most a token budget: every decoding row first, "
        "then prompt chunks, oldest first; a long prompt is split over several passes.",
    ),
    "sjf": PolicyWords(
        "#D55E00",  # Okabe-Ito vermillion
        "Shortest job first: continuous batching whose waiting queue is ordered by answer length, shortest first. "
        "The simulator knows every answer's length, which no engine does: this is what ordering the queue by a "
        "perfect length prediction buys, without interrupting anyone running. Short requests overtake long ones; the "
        "longest wait longer and may finish alone at the end: the mean latency can fall while the drain grows.",
        "Shortest job first: between forward passes, finished requests leave and the shortest waiting answers take "
        "the free slots while the next one's KV fits; a request that needs a block when none is free preempts the "
        "one admitted last, which rejoins the queue by its length and later recomputes its KV.",
    ),
    "priority": PolicyWords(
        "#000000",
        "Priority scheduling (vLLM's policy=priority): continuous batching whose waiting queue is ordered by each "
        "request's priority, lower numbers first, then arrival. A high class overtakes a low one in the queue.",
        "Priority scheduling: between forward passes, finished requests leave and waiting ones take the free slots "
        "by priority (lower numbers first) while the next one's KV fits; a request that needs a block when none is "
        "free preempts the lowest class running, the newest of it, which rejoins the queue by its priority.",
    ),
    "vllm": PolicyWords(
        "#332288",
        "vLLM v1: continuous batching whose passes hold at most max_num_batched_tokens tokens, decoding rows first "
        "and then prompt chunks; a block shortage preempts the newest request, which later recomputes.",
    ),
    "trtllm-no-evict": PolicyWords(
        "#882255",
        "TensorRT-LLM's GUARANTEED_NO_EVICT: a request is admitted only when its prompt plus its maximum answer fits "
        "the free KV cache, so no running request is ever evicted; on a tight pool fewer run at once.",
    ),
    "trtllm-max-util": PolicyWords(
        "#117733",
        "TensorRT-LLM's MAX_UTILIZATION: requests are admitted by what they need now, so more run at once; when a "
        "block runs out the newest is paused and later recomputes its KV.",
    ),
    "tgi": PolicyWords(
        "#CC6677",  # Paul Tol's rose
        "TGI 3: at every pass the waiting join the running batch first come first served, their prompts in the same "
        "pass up to max_batch_prefill_tokens less the running rows' tokens, the last one cut into chunks. Each "
        "request reserves its prompt plus the answer cap, so none is preempted; no request cap but the KV pool.",
        caption_paused=(
            "TGI without chunking (TGI 2, or prefill_chunking=0): waiting requests join in a prefill pass that pauses "
            "the running batch; while it decodes, a prefill forms only when the waiting it would admit reach "
            "waiting_served_ratio times the running batch, or after max_waiting_tokens decode passes. Each request "
            "reserves its prompt plus the answer cap, so none is preempted."
        ),
    ),
    "sglang": PolicyWords(
        "#999933",  # Paul Tol's olive
        "SGLang: a pass either prefills or decodes. Whenever a prompt can start or is being chunked, the pass "
        "prefills at most chunked_prefill_size prompt tokens and the running requests wait. A request starts only if "
        "its prompt and max tokens fit beside an estimate of the running requests' tokens to come (a ratio from 0.7 "
        "down to 0.098); where a decode pass's blocks run out, those with the fewest tokens out are retracted at "
        "once, to the back of the queue, and later recompute.",
    ),
}


def words(policy: Policy) -> PolicyWords:
    """Return the policy's page words in the mode it runs in, its captions filled in (a later one: the fallback)."""
    found = WORDS.get(policy.name)
    if found is None:
        said = f"{policy.label[:1].upper()}{policy.label[1:]}: {policy.summary}."
        return PolicyWords(FALLBACK_COLOUR, said, said)
    caption = found.caption_paused if found.caption_paused and policy.pauses_decoders else found.caption
    return replace(found, caption=caption, caption_memory=found.caption_memory or caption)


def page_traits(policy: Policy) -> dict:
    """Return the traits the page receives: the core's, in their order, with the policy's colour after its label."""
    traits = {}
    for trait, value in policy.traits().items():
        traits[trait] = value
        if trait == "label":
            traits["colour"] = words(policy).colour
    return traits
