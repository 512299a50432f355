"""The memory view: one traffic and one KV pool, paged against contiguous against static; the pool at the cursor.

The chapter says continuous batching is pure scheduling, no extra memory, given a paged KV cache, and that with
contiguous caches a retired request leaves a hole. Here the core's block manager decides who runs: the learner
shrinks or grows the pool and steps through the passes, and every figure in the text is read from the runs shown.
"""

from __future__ import annotations

import html
from functools import lru_cache

import panel as pn
import param
from panel.custom import JSComponent

from app.memory.lesson import MAX_BLOCKS, claim, figures, lesson_html
from app.page import palette
from app.page.tabs import LazyViewer, query_number, text_pane
from app.page.url import query_value
from app.server.server_log import follow_widget
from app.web.bundle import bundle
from core.batch.step_batch import BLOCK_SIZE as STEP_BLOCK_SIZE
from core.chapter.chunked_example import ARRIVES_MS, DECODERS, HUGE_PROMPT, huge_prompt_runs, stall_figures
from core.chapter.memory_example import BLOCK_SIZE, BLOCKS, MIN_BLOCKS
from core.kv.memory import ENGINE_BLOCK_SIZE as LINEUP_BLOCK_SIZE
from core.sched.schedule_record import Schedule

RECOMPUTE_COLOR, MEMORY_COLOR = palette.RECOMPUTE_COLOR, palette.MEMORY_COLOR
MEMORY_CSS = f"""
.bv-mem-frame {{ overflow-x: auto; max-width: 100%; }}
.bv-mem-grid {{ border-collapse: separate; border-spacing: 1px; font: 12px/1 system-ui, sans-serif; }}
.bv-mem-grid th {{ font-weight: normal; padding: 0 6px 0 0; text-align: right; white-space: nowrap; }}
.bv-mem-grid td {{ width: 16px; min-width: 16px; height: 18px; text-align: center; padding: 0; }}
.bv-mem-grid td.gen {{ background: {palette.GENERATING_COLOR}; color: #FFFFFF; }}
.bv-mem-grid td.pad {{ background: {palette.PADDING_COLOR}; color: #000000;
  background-image: repeating-linear-gradient(45deg, {palette.PADDING_HATCH} 0 1px, transparent 1px 6px); }}
.bv-mem-grid td.rec {{ background: {RECOMPUTE_COLOR}; color: #000000; font-weight: bold; }}
.bv-mem-grid td.pre {{ background: #56B4E9; color: #000000; }}
.bv-mem-grid td.idle {{ background: {palette.IDLE_COLOR}; color: #000000; }}
.bv-mem-grid td.blocked {{ outline: 2px dashed #000000; outline-offset: -2px; }}
.bv-mem-grid td.cursor {{ box-shadow: inset 0 -3px 0 #000000; }}
.bv-mem-grid td.future {{ background: #FFFFFF; background-image: none; color: transparent; outline: none;
  box-shadow: inset 0 0 0 1px #D9D9D9; }}
.bv-mem-grid td.kv {{ vertical-align: bottom; background: transparent; height: 28px; }}
.bv-mem-grid td.kv span {{ display: block; background: {MEMORY_COLOR}; }}
.bv-pool {{ display: flex; flex-wrap: wrap; gap: 2px; margin: 4px 0; }}
.bv-pool span {{ width: 22px; height: 22px; line-height: 22px; text-align: center; font: 12px system-ui; }}
.bv-pool .held {{ background: {MEMORY_COLOR}; color: #FFFFFF; }}
.bv-pool .free {{ background: #FFFFFF; color: #000000; border: 1px solid #767676; box-sizing: border-box; }}
.bv-scroll-hint {{ display: none; }}
@media (max-width: 640px) {{ .bv-scroll-hint {{ display: block; }} }}
.bv-mem-mode {{ margin: 10px 0 16px; }}
.bv-strip {{ position: relative; height: 26px; background: #F2F2F2; margin: 4px 0 12px; }}
.bv-strip span {{ position: absolute; top: 2px; bottom: 2px; box-shadow: inset -1px 0 0 #FFFFFF; }}
.bv-strip .gen {{ background: {palette.GENERATING_COLOR}; }}
.bv-strip .pre {{ background: #56B4E9; }}
.bv-strip-axis {{ position: relative; height: 16px; margin: -10px 0 12px; font: 12px system-ui, sans-serif; }}
.bv-strip-axis span {{ position: absolute; white-space: nowrap; }}
.bv-mem-mode h3 {{ margin: 0 0 4px; font-size: 1rem; }}
"""


BUDGETS = (256, 512, 1024, 2048)
STRIP_MS = (60.0, 320.0)  # the stretch of the clock the pass strips show, around the huge prompt's arrival


@lru_cache(maxsize=len(BUDGETS))
def chunked_runs(budget: int) -> dict[str, Schedule]:
    """Return the huge-prompt traffic without and with a token budget (shared by every session)."""
    return huge_prompt_runs(budget)


def pass_strip_html(name: str, s: Schedule) -> str:
    """Return the passes between STRIP_MS on a time line: each as wide as it lasts, prefill work marked."""
    lo, hi = STRIP_MS
    scale = 100 / (hi - lo)  # percent of the strip per ms
    huge = len(s.requests) - 1
    first, last = int(s.start_pass[huge]), int(s.first_pass[huge])
    items = []
    for p, (a, b) in enumerate(zip(s.pass_start.tolist(), s.pass_end.tolist())):
        if b <= lo or a >= hi:
            continue
        a, b = max(a, lo), min(b, hi)
        kind = "pre" if first <= p <= last else "gen"
        title = f"pass {p}: {s.pass_end[p] - s.pass_start[p]:.1f} ms" + (
            f", {s.pass_prefill[p]:,} prompt tokens" if kind == "pre" else ", decoding"
        )
        items.append(
            f'<span class="{kind}" style="left:{(a - lo) * scale:.3f}%;width:{(b - a) * scale:.3f}%" '
            f'title="{html.escape(title)}"></span>'
        )
    arrival = (ARRIVES_MS - lo) * scale
    return (
        f'<div class="bv-strip" data-strip="{name}" role="img" aria-label="passes from {lo:.0f} to {hi:.0f} ms">'
        f"{''.join(items)}</div>"
        f'<div class="bv-strip-axis"><span style="left:0">{lo:.0f} ms</span>'
        f'<span style="left:{arrival:.3f}%">▲ {ARRIVES_MS:.0f} ms: the prompt arrives</span>'
        f'<span style="right:0">{hi:.0f} ms</span></div>'
    )


def decode_pass_medians(s: Schedule) -> tuple[float, float]:
    """Return the median decode-only pass before the big prompt arrives, and while it decodes beside the others."""
    import numpy as np

    huge = len(s.requests) - 1
    ms = s.pass_end - s.pass_start
    decode = s.pass_prefill == 0
    early = decode & (s.pass_end <= s.requests[huge].arrival)
    passes = np.arange(s.passes)
    late = decode & (passes > s.first_pass[huge]) & (passes < s.finish_pass[huge])
    return float(np.median(ms[early])), float(np.median(ms[late]))


CHUNKED_INTRO = (
    f"<h3>A huge prompt arrives</h3><p>{DECODERS} requests are decoding on a Llama-2 7B on an H100 (the roofline "
    f"clock) when a {HUGE_PROMPT:,}-token prompt arrives at {ARRIVES_MS:.0f} ms. Chunked prefill gives each pass a "
    "token budget: the decoding rows first, then as much of the prompt as fits.</p>"
)


def chunked_html(budget: int) -> str:
    """Return the huge-prompt lesson at one budget: both pass strips and the claims on their figures."""
    runs = chunked_runs(budget)
    c, k = stall_figures(runs["continuous"]), stall_figures(runs["chunked"])
    late = c.longest_decode_pass_ms / c.typical_pass_ms
    before, after = decode_pass_medians(runs["continuous"])
    return (
        "<p>"
        + claim(
            "chunk-stall",
            f"Without a budget, continuous batching prefills it in one pass of {c.longest_decode_pass_ms:.1f} ms; "
            f"the decoders beside it wait that pass out for their next token, {late:.0f}x the median pass of the "
            f"whole run ({c.typical_pass_ms:.1f} ms).",
        )
        + " "
        + claim(
            "chunk-context",
            f"Decode passes lengthen with the context they read: the median is {before:.1f} ms before the prompt "
            f"arrives and {after:.1f} ms while the big request decodes beside the others (its {HUGE_PROMPT:,} "
            "tokens of KV are read every pass).",
        )
        + f"</p><p class='bv-muted'>Continuous batching, {STRIP_MS[0]:.0f} to {STRIP_MS[1]:.0f} ms: each box a "
        "pass, as wide as it lasts; pale blue passes carry the big prompt.</p>"
        + pass_strip_html("continuous", runs["continuous"])
        + "<p>"
        + claim(
            "chunk-budget",
            f"Chunked prefill with a budget of {budget:,} tokens per pass splits the prompt over "
            f"{k.chunk_passes} passes; the longest pass a decoder sits through is {k.longest_decode_pass_ms:.1f} ms, "
            f"and the big request's first token comes {k.huge_ttft_ms:.1f} ms after it arrives instead of "
            f"{c.huge_ttft_ms:.1f} ms.",
        )
        + "</p>"
        + f"<p class='bv-muted'>Chunked prefill, budget {budget:,}, the same stretch of the clock.</p>"
        + pass_strip_html("chunked", runs["chunked"])
    )


# The tab's opening words: what decides who runs, and why its blocks are smaller than the simulator's.
INTRO = (
    "<h2>Memory decides who runs</h2><p>A real engine admits a request only if its KV cache fits. "
    "With a <b>paged</b> cache a request holds blocks for the tokens it has, taken one at a time from "
    "anywhere in the pool. With a <b>contiguous</b> cache it must reserve one unbroken run for the longest "
    "answer it might give, and a retired request leaves a hole of that size. Move the pool and the "
    "step; each row is a slot, each column a pass. The chapter leaves these decisions (what happens when "
    "memory runs out mid-generation, or when a huge prompt arrives) to the next chapter, S10, which builds "
    f"the scheduler: this tab previews them. Blocks here hold {BLOCK_SIZE} tokens ({STEP_BLOCK_SIZE} on the "
    f"simulator tab, {LINEUP_BLOCK_SIZE} on the Schedulers tab: vLLM's default, for prompts of hundreds of tokens), "
    "so a few short requests fill a pool small enough to draw box by box.</p>"
)


LEGEND = (
    "<p class='bv-muted'>Letters are requests. Blue: generating; orange, hatched: padding; yellow, bold: "
    "recomputing after a preemption; pale blue: a prompt chunk; light grey: idle; ⊘ in a dashed cell: a "
    "request waited for memory while this slot stood empty. A black bar under a column marks the step at "
    "the cursor; white cells with a grey edge are steps not yet played. Under each timeline the dark grey "
    "bars are the KV blocks in use (full height: the whole pool); the row of boxes below is the pool "
    "at the cursor, one box per block, dark grey with its owner's letter when held, white when free.</p>"
    "<p class='bv-muted bv-scroll-hint'>The timelines scroll sideways inside their frames.</p>"
)


class MemoryModes(JSComponent):
    """The three modes' timelines, pools and decisions at the step, drawn in the browser (app/web/tabs/memory.js).

    The server sends the pool's runs (app/memory/data.py) when the pool changes; the step is one number.
    """

    payload = param.String(default="{}", doc="JSON: the pool's three runs (app/memory_data.memory_json)")
    step = param.Integer(default=0, doc="The pass at the cursor")

    _esm = bundle("words.js", "tabs/memory.js", "tabs/memory_host.js")
    _stylesheets = [MEMORY_CSS]


class MemoryView(LazyViewer):
    """The pool slider, a step cursor, and the three modes' timelines and pools on the same traffic."""

    blocks = param.Integer(default=BLOCKS, bounds=(MIN_BLOCKS, MAX_BLOCKS), doc="Blocks in the KV pool (?blocks=)")
    step = param.Integer(default=0, bounds=(0, None), doc="The pass at the cursor")
    budget = param.Selector(default=512, objects=list(BUDGETS), doc="Chunked prefill's tokens per pass (?budget=)")

    def width(self) -> int:
        """Return the steps shown: up to the slowest mode's drain, where every request is done and the pool empty."""
        return max(f.drain for f in figures(self.blocks).values()) + 1

    def _build(self) -> None:
        self.pool_slider = pn.widgets.IntSlider(
            label="KV pool (blocks of 4 tokens)", start=MIN_BLOCKS, end=MAX_BLOCKS, value=self.blocks, width=320
        )
        follow_widget(self.pool_slider, "value_throttled", self, "blocks")
        self.param.watch(lambda e: setattr(self.pool_slider, "value", e.new), "blocks")
        self.step_slider = pn.widgets.IntSlider(label="Step", start=0, end=self.width() - 1, value=self.step, width=320)
        follow_widget(self.step_slider, "value", self, "step")
        self.back = pn.widgets.Button(label="◂ Back", description="The previous pass")
        self.forward = pn.widgets.Button(label="Step ▸", description="The next pass")
        self.back.on_click(lambda _e: setattr(self, "step", max(0, self.step - 1)))
        self.forward.on_click(lambda _e: setattr(self, "step", min(self.width() - 1, self.step + 1)))
        self.lesson = text_pane("")
        self.modes = MemoryModes(sizing_mode="stretch_width")
        self.param.watch(self._redraw, ["blocks", "step"])
        self._redraw()
        self.budget_choice = pn.widgets.RadioButtonGroup(
            label="Token budget per pass",
            options={f"{b:,}": b for b in BUDGETS},  # short labels: the four fit a phone's width
            value=self.budget,
            width=300,
        )
        follow_widget(self.budget_choice, "value", self, "budget")
        self.param.watch(lambda e: setattr(self.budget_choice, "value", e.new), "budget")
        self.chunked = pn.pane.HTML(chunked_html(self.budget), sizing_mode="stretch_width", stylesheets=[MEMORY_CSS])
        self.param.watch(lambda e: setattr(self.chunked, "object", chunked_html(e.new)), "budget")

    def _redraw(self, *_events) -> None:
        width = self.width()
        if self.step > width - 1:
            self.step = width - 1  # watchers redraw again
            return
        self.step_slider.param.update(end=width - 1, value=self.step)
        self.lesson.object = lesson_html(self.blocks)
        from app.memory.data import memory_json  # it reads this module's runs and words

        self.modes.param.update(payload=memory_json(self.blocks), step=self.step)

    def _compose(self) -> pn.viewable.Viewable:
        intro = text_pane(INTRO)
        legend = text_pane(LEGEND)
        return pn.Column(
            intro,
            pn.FlexBox(self.pool_slider, self.step_slider, self.back, self.forward, sizing_mode="stretch_width"),
            self.lesson,
            legend,
            self.modes,
            text_pane(CHUNKED_INTRO),
            text_pane("<p>Token budget per pass, in tokens:</p>"),
            self.budget_choice,
            self.chunked,
            sizing_mode="stretch_width",
        )

    def apply_query(self, query: dict) -> list[str]:
        """Take ?blocks= from a deep link; return the messages for values refused."""
        value, message = query_number(query, "blocks", MIN_BLOCKS, MAX_BLOCKS, self.blocks, integer=True)
        if value is not None:
            self.blocks = int(round(value))
        messages = [message] if message else []
        if "budget" in query:
            text = query_value(query["budget"]).strip()
            if text in {str(b) for b in BUDGETS}:
                self.budget = int(text)
            else:
                allowed = ", ".join(str(b) for b in BUDGETS)
                messages.append(f"URL: budget={text[:40]!r} is not allowed (use {allowed}); kept {self.budget}.")
        return messages
