"""The chapter's other parts, from the core's own code and figures: the loop, build_batch, costs, production, next."""

from __future__ import annotations

import contextlib
import html
import inspect
import io
from functools import lru_cache

import numpy as np

from app.page.words import plural
from core import compare, generate, simulate
from core.batch.ragged import build_batch
from core.chapter.reference import simulate_per_step
from core.cli.commands import main
from core.cli.parsers import COMPARE_SLOTS, COMPARE_TRAFFIC

SPREAD_BATCH = 32  # the chapter's "in a batch of 32"


def source_slice(fn, first: str, last: str) -> list[str]:
    """Return the lines of `fn`'s source from the one containing `first` to the one containing `last`, dedented."""
    return list(_source_slice(fn, first, last))


@lru_cache(maxsize=64)
def _source_slice(fn, first: str, last: str) -> tuple[str, ...]:
    # Reading source tokenizes the whole file: once per function and slice, not once per step drawn.
    lines = inspect.getsource(fn).splitlines()
    lo = next(i for i, line in enumerate(lines) if first in line)
    hi = next(i for i, line in enumerate(lines) if i >= lo and last in line)
    chunk = lines[lo : hi + 1]
    indent = min(len(line) - len(line.lstrip()) for line in chunk if line.strip())
    return tuple(line[indent:] for line in chunk)


def _code_block(
    lines: list[str], marks: dict[int, str], title: str, name: str, notes: dict[str, str] | None = None
) -> str:
    notes = notes or {}

    def row(i: int, line: str) -> str:
        mark = marks.get(i)
        attrs = f' data-mark="{mark}"' if mark else ""
        note = f'<span class="bv-note" data-note="{mark}">{html.escape(notes[mark])}</span>' if mark in notes else ""
        return f'<div class="bv-src-line{" bv-marked" if mark else ""}"{attrs}>{html.escape(line)}{note}</div>'

    rows = "".join(row(i, line) for i, line in enumerate(lines))
    return f'<div class="bv-source" data-code="{name}"><div class="bv-loop-title">{title}</div>{rows}</div>'


def _marked(lines: list[str], words: dict[str, str]) -> dict[int, str]:
    return {i: mark for i, line in enumerate(lines) for word, mark in words.items() if word in line}


def restructured_loop_html() -> str:
    """Return the core's per-step scheduler loop with the two steps that moved inside it (retire, admit) marked."""
    lines = source_slice(simulate_per_step, "while done < n:", "t += 1")
    block_of = {}
    current = None
    for i, line in enumerate(lines):
        if "# retire" in line:
            current = "retire"
        elif "if continuous or all(o is None" in line:
            current = "admit"
        elif "# one forward pass" in line:
            current = None
        if current:
            block_of[i] = current
    code = _code_block(lines, block_of, "core/chapter/reference.py: simulate_per_step, the loop", "loop")
    return (
        "<h3>The loop, restructured</h3>"
        "<p>This is the simulator's own scheduler, written one step at a time (the timelines above come from the "
        "core's memory engine, <code>core/sched/engine.py</code>, tested to give exactly this loop's schedules with "
        "unlimited memory; on a limited KV pool it adds memory's rules, which the lit loop above shows). The two "
        "marked steps, <b>retire</b> "
        "and <b>admit</b>, are the whole technique: under static batching a member retires only once every member "
        "has finished (<code>batch_over</code>), and a new batch is admitted only when every slot is free; under "
        "continuous batching both run before every forward pass. Nothing else changes. (The marks show where the "
        "steps are, not what ran: the loop lit above the batch view shows what ran at the cursor.)</p>"
        # Shut at first: the page's first screens are the views; the code is one click away.
        '<details class="bv-card bv-code-details"><summary>The loop\'s code, retire and admit marked '
        "(core/chapter/reference.py)</summary>" + code + "</details>"
    )


BUILD_MARKS = {"token_ids.extend": "token_ids", "positions.extend": "positions", "cu_seqlens.append": "cu_seqlens"}


def _short(values: list[int], limit: int = 12) -> str:
    shown = ", ".join(map(str, values[:limit]))
    return f"[{shown}{', …' if len(values) > limit else ''}]"


def build_batch_at(batch, step: int) -> str:
    """Return the core's build_batch beside the batch it built at `step`: each marked line with what it produced."""
    lines = source_slice(build_batch, "def build_batch", "slot_mapping.extend")
    marks = _marked(lines, BUILD_MARKS)
    n = len(batch.cu_seqlens) - 1
    notes = (
        {
            "token_ids": f"  ← {plural(len(batch.token_ids), 'new token')} from {plural(n, 'request')}, end to end",
            "positions": f"  ← positions {_short(batch.positions.tolist())}",
            "cu_seqlens": f"  ← cu_seqlens {_short(batch.cu_seqlens.tolist())}",
        }
        if n
        else {}
    )
    when = f"as it ran at step {step}" if n else f"not run at step {step}: nobody is running"
    title = f"core/batch/ragged.py: build_batch, {when}"
    return _code_block(lines, marks if n else {}, title, "build_batch", notes)


def build_batch_html() -> str:
    """Return why the batch is ragged: the shape build_batch makes (its code is lit beside the batch view)."""
    return (
        "<h3>Why the batch is ragged</h3>"
        "<p>Every running request sits at its own position with its own context length, so there is no rectangle "
        "to fill. The batch view above is built by <code>build_batch</code>: each request appends only its new "
        "tokens to one flat "
        "<code>token_ids</code> buffer (its whole prompt on its first step, one token after), their "
        "<code>positions</code>, and one entry to <code>cu_seqlens</code>, the cumulative offsets that say where "
        "each request's tokens start. FlashAttention's variable-length API and PagedAttention take exactly this "
        "shape, which is why continuous batching cannot be bolted onto an engine that builds padded "
        "rectangles. The code beside the ragged batch above is the core's own, and its marked lines say what they "
        "produced at the cursor's step.</p>"
    )


@lru_cache(maxsize=1)
def compare_output() -> str:
    """Return what `batchviz compare` prints on its defaults, run in this process (so the page never goes stale)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["compare"])
    return out.getvalue()


@lru_cache(maxsize=1)
def compare_figures() -> dict[str, float]:
    """Return compare's default figures: drain ratio, static's padding share, and the max/mean of batches of 32."""
    requests = generate(COMPARE_TRAFFIC)
    result = compare(simulate(requests, COMPARE_SLOTS, "static"), simulate(requests, COMPARE_SLOTS, "continuous"))
    lengths = np.array([r.output_tokens for r in requests])
    groups = lengths[: len(lengths) // SPREAD_BATCH * SPREAD_BATCH].reshape(-1, SPREAD_BATCH)
    ratios = groups.max(axis=1) / groups.mean(axis=1)
    return {
        "drain_ratio": result.drain_ratio,
        "static_padding": result["static"].padding_share,
        "continuous_padding": result["continuous"].padding_share,
        "batch_max_mean_median": float(np.median(ratios)),
        "batch_max_mean_max": float(ratios.max()),
        "batches": len(ratios),
    }


def affordable_html() -> str:
    """Return why continuous batching is affordable, and the chapter's three stat cards with the core's figures."""
    f = compare_figures()
    cards = (
        (
            "gain",
            "typical throughput gain",
            "2–4×",
            f"here {f['drain_ratio']:.2f}× on compare's 256 chat-shaped requests",
        ),
        ("latency", "latency", "↓", "no wait for the next batch boundary"),
        ("memory", "extra memory", "0", "given a paged KV cache: this is pure scheduling"),
    )
    body = "".join(
        f'<div class="bv-card" data-card="{key}"><div class="bv-card-label">{label}</div>'
        f'<div class="bv-card-value">{value}</div><div class="bv-card-note">{note}</div></div>'
        for key, label, value, note in cards
    )
    return (
        "<h3>Why it is affordable</h3>"
        "<p>Retiring a request must free its KV memory at once, and admitting one must find memory without moving "
        "anyone else. A paged KV cache gives both: memory comes in small fixed-size blocks from anywhere in a pool "
        "(the batch view's block pool shows them). With one contiguous cache per request, a request retired "
        "mid-batch would leave a hole of its size that a larger newcomer could not use.</p>"
        f'<div class="bv-cards">{body}</div>'
        '<p>The <a href="?tab=memory">Memory tab</a> runs the same requests on one small pool, paged against '
        "contiguous against static, and shows the block manager deciding who runs.</p>"
    )


def spread_argument_html() -> str:
    """Return the chapter's spread argument (equal lengths; max/mean in a batch of 32) with the core's figures."""
    f = compare_figures()
    return (
        "<p>If every request generated the same number of tokens and all were queued at once, every static batch "
        "would be full and finish together, and there would be nothing for continuous batching to reclaim (the "
        "queued fixed-lengths lesson above shows it; arriving over time, even equal lengths wait for a boundary). "
        "Real output lengths are heavy-tailed. In <code>batchviz compare</code>'s default traffic, cut into "
        f"{f['batches']} batches of {SPREAD_BATCH} in arrival order, the longest request is "
        f'<b data-figure="max-mean-median">{f["batch_max_mean_median"]:.1f}×</b> the batch mean at the median and up '
        f'to <b data-figure="max-mean-max">{f["batch_max_mean_max"]:.1f}×</b> (the chapter quotes 10× or more on '
        "production traffic): padding every member to the longest wastes most of each batch.</p>"
    )


def run_locally_html() -> str:
    """Return the command and what it prints, computed by the core when the page is built."""
    f = compare_figures()
    return (
        "<h3>Run it locally</h3>"
        "<p><code>batchviz compare</code> runs 256 heavy-tailed requests through both schedulers on the same "
        f'arrivals: continuous drains <b data-figure="drain-ratio">{f["drain_ratio"]:.2f}×</b> faster, padding falls '
        f'from <b data-figure="static-padding">{f["static_padding"]:.0%}</b> of slot-time to '
        f'<b data-figure="continuous-padding">{f["continuous_padding"]:.0%}</b>, and every latency percentile '
        "improves at once.</p>"
        '<details class="bv-card bv-code-details"><summary>What it prints (run when this page was built)</summary>'
        f'<pre class="bv-pre" data-figure="compare-output">$ batchviz compare\n{html.escape(compare_output())}</pre>'
        "</details>"
    )


PRODUCTION = (
    "<h3>In production</h3><ul>"
    "<li><b>Orca</b> (OSDI '22) introduced iteration-level scheduling, and selective batching: the operations that "
    "need no per-request shape (the matrix multiplies) run over the flattened batch, attention per request.</li>"
    "<li><b>vLLM</b>: the scheduler runs once per <code>step()</code> and produces a fresh set of running requests "
    "every iteration.</li>"
    "<li><b>TGI</b>, <b>SGLang</b> and <b>LMDeploy</b> all ship it; <b>TensorRT-LLM</b> calls it in-flight "
    "batching, a better name.</li>"
    "<li><b>llama.cpp</b> supports it through parallel sequences in its server. Its main use is one user on one "
    "machine, where the batch is 1 and none of this applies (try slots = 1 above).</li></ul>"
)

WHATS_NEXT = (
    "<h3>What's next</h3>"
    "<p>Requests are now admitted every step, but on what basis, and how many? The next chapter builds the "
    "scheduler that decides. What this page already shows of it: how large a batch can get before each step is too "
    'slow for a latency target (<a href="?tab=knee">Exercise 1, the knee</a>), and what a long prompt\'s prefill '
    'does to the decoders beside it (<a href="?clock=ms">the clock view</a>, where a prefill pass is wider), what '
    "happens when KV memory runs out mid-generation (preemption), and what a huge prompt does with and without "
    'chunked prefill: both are on <a href="?tab=memory">the Memory tab</a>.</p>'
)
