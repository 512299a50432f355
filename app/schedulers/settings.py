"""The Schedulers tab's settings: their URL keys and ranges, their widgets, and what the core refuses of them."""

from __future__ import annotations

import panel as pn

from app.schedulers.data import MAX_BUDGET, LineupKey, shared_lineup
from core.clock.hardware import ACCELERATOR_OPTIONS, MODEL_OPTIONS
from core.limits import LimitError
from core.measure.lineup import parse_entry

SOURCES = {  # ?s_source= -> the traffic choice's words (short: a phone shows them side by side)
    "chat": "Chat traffic",
    "page": "The simulator's traffic",
}
KEY = LineupKey  # the settings' defaults are the shared key's, in one place
NONE = "none"
# URL key -> (parameter, low, high, whole number)
NUMBERS = {
    "s_seed": ("seed", 0, 99, True),
    "s_requests": ("requests", 8, 256, True),
    "s_rate": ("rate_per_s", 1.0, 200.0, False),
    "s_share": ("priority_share", 0, 100, True),
    "s_slots": ("slots", 1, 64, True),
    "s_kv": ("kv_blocks", 0, 100_000, True),
    "s_budget": ("token_budget", 0, MAX_BUDGET, True),  # 0: each engine's default; else data.MIN_BUDGET up
    "s_ttft": ("ttft_ms", 1.0, 60_000.0, False),
    "s_itl": ("itl_ms", 1.0, 1_000.0, False),
}
# The view's parameters a lineup's key reads: what a refusal puts back together.
SETTINGS = ("entries", *(name for name, *_ in NUMBERS.values()), "accelerator", "model", "source")
# Parameter -> (widget, label, its own settings): the tab's settings under the pickers, in the page's order.
INPUTS = {
    "seed": (pn.widgets.IntSlider, "Traffic seed", {}),
    "requests": (pn.widgets.IntSlider, "Requests", {}),
    "rate_per_s": (pn.widgets.FloatSlider, "Arrivals, requests/s", {"step": 1}),
    "priority_share": (pn.widgets.IntSlider, "High priority class, %", {}),
    "slots": (pn.widgets.IntSlider, "Slots (each engine's request cap)", {"width": 250}),
    "kv_blocks": (pn.widgets.IntInput, "KV pool, 16-token blocks (0: unlimited)", {"width": 270}),
    "token_budget": (pn.widgets.IntInput, "Token budget (0: each engine's default)", {"width": 270}),
    "ttft_ms": (pn.widgets.FloatInput, "TTFT target, ms", {"width": 160}),
    "itl_ms": (pn.widgets.FloatInput, "ITL target (mean TPOT), ms", {"width": 200}),
    "accelerator": (pn.widgets.Select, "Accelerator", {"options": ACCELERATOR_OPTIONS}),
    "model": (pn.widgets.Select, "Model", {"options": MODEL_OPTIONS}),
}
CHAT_INPUTS = ("seed", "rate_per_s", "priority_share")  # the chat traffic's own settings: shown on it only
MAX_REFUSAL = 300  # characters of a refusal's words in a message (they may repeat what was refused)


def refusal(key: LineupKey) -> str:
    """Return why the core refuses to run `key` (in the page's words), or "" when it runs."""
    try:
        shared_lineup(key)
    except (ValueError, LimitError) as exc:
        return cut(str(exc).replace("give --kv-blocks", "give the KV pool"))
    return ""


def values_of(key: LineupKey) -> dict:
    """Return the view's settings that give `key`: its entries as a link writes them, its traffic's source."""
    values = {name: getattr(key, name) for name in SETTINGS if name not in ("entries", "source")}
    source = "chat" if key.page_traffic is None else "page"
    return values | {"entries": [e.text() for e in key.entries], "source": source}


def cut(text: str) -> str:
    """Return a refusal's words at most MAX_REFUSAL characters long, an ellipsis where they were cut."""
    return text if len(text) <= MAX_REFUSAL else text[: MAX_REFUSAL - 3] + "..."


def entry_words(text: str) -> str:
    """Return an entry's words from its link text."""
    return parse_entry(text).label()
