"""The Schedulers tab's fixed words: its opening, each scheduler's rules, what each lesson loads, its legend."""

from __future__ import annotations

import html
from collections.abc import Sequence

from app.page import palette
from app.page.policy_words import words as policy_words
from core.measure.lineup import parse_entry, settings_words
from core.sched.policies import REGISTRY

SOURCE_WORDS = (
    "<p><b>Traffic:</b> the tab's chat traffic (set below), or the simulator's: the chapter's, generated, or your "
    "upload (an Azure-format trace too), its first <i>Requests</i>, arrivals on the clock as the simulator's clock "
    "view places them.</p>"
)
# The opening, three lines for a reader of the chapter: what the tab compares, what it draws, what to try. Each
# engine's rules and its settings' own names are where the settings are shown (`rules_html`, the slots' and budget's
# line, the legend).
INTRO = (
    "<h3>Schedulers: real engines side by side</h3><p>The chapter ends asking on what basis, and how many, we "
    "admit each step. Here real engines' schedulers answer on the same requests, KV pool and GPU clock.<br>Each "
    "timeline draws one scheduler's run, a row per running request; once you guess, the table sets their latency, "
    "throughput and fairness side by side.<br>Guess which wins, then load a lesson or change the slots, the pool or "
    "the traffic, and guess again.</p>"
    "<details><summary>Terms: TTFT, ITL, TPOT, stall, p99, prefill, preempt, goodput</summary><p>TTFT: time to "
    "first token, from arrival (under load, much of it is the wait to be admitted). ITL: inter-token latency, the "
    "gap between one token and the next. TPOT: a request's time per output token after its first, its mean gap "
    "(DistServe's), what the ITL target is met on. Longest stall: a request's largest gap. p99: the value 99% of "
    "requests (or gaps) stay under. Prefill: the pass that computes a prompt; a chunk is part of one. Preempt: "
    "evict a running request's KV cache; it later recomputes it. Goodput: requests per second that met both "
    "targets. The clock is a roofline of the model on the accelerator.</p></details>"
)


def rules_html(entries: Sequence[str]) -> str:
    """Return how each scheduler on screen admits, in its engine's own names, and its settings, folded away."""
    rows, said = [], set()
    for text in dict.fromkeys(entries):
        entry = parse_entry(text)
        settings = ""
        if REGISTRY[entry.name].settings and entry.name not in said:  # an engine's settings once, however many
            said.add(entry.name)
            settings = f" <i>Its settings:</i> {html.escape(settings_words(entry.name))}"
        caption = html.escape(policy_words(entry.policy()).caption)
        rows.append(f"<li><b>{html.escape(entry.label())}</b>: {caption}{settings}</li>")
    return (
        '<details><summary>How each scheduler shown admits, and its settings (in a link: <code style="overflow-wrap: '
        'anywhere">schedulers=vllm:'
        "long_prefill_token_threshold=512,tgi</code>)</summary><ul>" + "".join(rows) + "</ul><p>Each scheduler's "
        "rules, and what this simulator leaves out, are in the project's docs (docs/schedulers.md in batchviz's "
        "repository).</p></details>"
    )


# Lesson -> (button, the settings it loads): each lesson's sentence under the table is computed from the runs.
LESSONS = {
    "ratio": (
        "TGI without chunking: waiting_served_ratio 0.3 against 1.2",
        {
            "entries": ["tgi:prefill_chunking=0", "tgi:prefill_chunking=0;waiting_served_ratio=1.2"],
            "rate_per_s": 40.0,
            "kv_blocks": 0,
            "priority_share": 0,
            "question": "tpot_p99",
        },
    ),
    "evict": (
        "TensorRT-LLM on a tight pool: no-evict against max-util",
        {
            "entries": ["trtllm-no-evict", "trtllm-max-util"],
            "rate_per_s": 40.0,
            "kv_blocks": 300,
            "priority_share": 0,
            "question": "throughput",
        },
    ),
    "priority": (
        "vLLM's priority queue on two classes",
        {
            "entries": ["vllm", "vllm:scheduling_policy=priority"],
            "rate_per_s": 40.0,
            "kv_blocks": 0,
            "priority_share": 30,
            "question": "goodput",
        },
    ),
    "sjf": (
        "Shortest first against arrival order",
        {
            "entries": ["continuous", "sjf"],
            "rate_per_s": 40.0,
            "kv_blocks": 0,
            "priority_share": 0,
            "question": "latency_p50",
        },
    ),
}
EDGE = f"{palette.GENERATING_COLOR} 0 8px,#FFFFFF 8px 10px,{palette.GENERATING_COLOR} 10px"  # two bars, an edge
HATCH = f"repeating-linear-gradient(45deg,{palette.PADDING_HATCH} 0 1px,transparent 1px 6px)"
# Every mark the lineup's timelines draw, once: (the core's states it stands for, none for a mark that is no state;
# its words; its colour; the swatch's mark and extra style). A prompt chunk (prefill) is drawn inside its request's bar.
LEGEND = (
    (("generating", "prefill"), "generating: its prompt (in chunks too), then a token a pass; its letter at its start",
     palette.GENERATING_COLOR, "", ""),
    (("paused",), "paused while a pass prefills others' prompts (SGLang; TGI without chunking, "
     "<code>tgi:prefill_chunking=0</code>)", palette.PAUSED_COLOR, "···", f"color:{palette.LABEL_COLOR}"),
    (("recompute",), "recomputing its KV after a preemption", palette.RECOMPUTE_COLOR, "", ""),
    (("padding",), "padding, hatched (static): finished, still holding its slot until its batch ends",
     palette.PADDING_COLOR, "", f"background-image:{HATCH}"),
    (("idle",), "idle slot", palette.IDLE_COLOR, "", ""),
    ((), "a white edge: one request's stay ends and the next begins", "#FFFFFF", "",
     f"background:linear-gradient(90deg,{EDGE})"),
    ((), "a black outline: the request under the mouse, in every timeline", palette.HIGHLIGHT_COLOR, "",
     f"background:{palette.IDLE_COLOR};box-shadow:inset 0 0 0 2px {palette.HIGHLIGHT_COLOR}"),
)  # fmt: skip


def legend_html() -> str:
    """Return every mark the lineup's timelines draw, as swatches with their words."""
    items = []
    for _states, words, colour, mark, style in LEGEND:
        items.append(
            f'<span class="bv-legend-item"><span class="bv-swatch" style="background:{colour};text-align:center;'
            f'line-height:13px;font-size:11px;{style}">{mark}</span><span>{words}</span></span>'
        )
    lead = (
        '<span class="bv-legend-item"><b>Each row is a slot (a running request), time runs left to right to the '
        "dashed line, where the last scheduler finishes:</b></span>"
    )
    return '<div class="bv-legend">' + lead + "".join(items) + "</div>"
