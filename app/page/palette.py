"""Colours and words for the slot states: Okabe-Ito (colour-blind safe), hatching so padding reads without colour."""

from dataclasses import dataclass

GENERATING_COLOR = "#0072B2"  # blue
PADDING_COLOR = "#E69F00"  # orange, hatched
IDLE_COLOR = "#D9D9D9"  # light grey
FUTURE_COLOR = "#FFFFFF"  # not yet played: the playback curtain
PADDING_HATCH = "#A86F00"  # darker orange: nearer to orange than to any other state colour
LABEL_COLOR = "#FFFFFF"
HIGHLIGHT_COLOR = "#000000"  # outline of the request under the mouse, in every timeline
RECOMPUTE_COLOR = "#F0E442"  # Okabe-Ito yellow: recomputing after a preemption (purple is static's mode colour)
# A dark red, dotted in white: a running request held while a pass prefills others' prompts. Okabe-Ito's vermillion
# read as padding's orange (a protanope cannot tell it from the hatching) and its sky blue as the white edge between
# two stays; every other Okabe-Ito colour already means something here. Simulated colour blindness keeps this one
# apart from every state's colour (tests/test_schedulers_claims.py).
PAUSED_COLOR = "#661100"
MEMORY_COLOR = "#4D4D4D"  # dark grey: KV blocks held, in the pools and the KV strips (never a slot state)

LEGEND = {
    "G": ("generating a token", GENERATING_COLOR),
    "P": ("padding — finished, still occupying the slot", PADDING_COLOR),
    ".": ("idle slot", IDLE_COLOR),
}


@dataclass(frozen=True)
class Theme:
    """Page colours around the state colours, which stay the same in both themes."""

    name: str
    background: str  # figure background, and the playback curtain over steps not yet played
    text: str
    muted: str
    # Each at least 4.5:1 on the page (white, or Panel's dark #121212); the focus ring at least 3:1.
    link: str = "#0072B2"
    focus: str = "#0072B2"
    right: str = "#007A5A"  # the quiz's "Right." and a passing assertion
    wrong: str = "#B84A00"  # "Not quite." and a failing one


THEMES = {
    "light": Theme("light", FUTURE_COLOR, "#222222", "#555555"),
    "dark": Theme("dark", "#1E1E1E", "#E6E6E6", "#B4B4B4", "#7CC4F0", "#7CC4F0", "#3DC49B", "#FF8C4D"),
}


def css_variables(theme: Theme) -> dict[str, str]:
    """Return the theme's page colours as CSS custom properties: they inherit into every shadow root."""
    return {
        "--bv-background": theme.background,
        "--bv-muted": theme.muted,
        "--bv-link": theme.link,
        "--bv-focus": theme.focus,
        "--bv-right": theme.right,
        "--bv-wrong": theme.wrong,
    }


# The two modes' colours are no state colour (blue generating, orange padding, grey idle): one colour, one meaning.
# Their bars also carry the mode's name, so colour is never the only cue.
STATIC_COLOR = "#CC79A7"  # reddish purple
CONTINUOUS_COLOR = "#009E73"  # bluish green

MEMORY_LEGEND = (
    ("recomputing its KV after a preemption, then its next token", RECOMPUTE_COLOR, ""),
    ("the slot the next request would take, empty while it waits for memory", "#FFFFFF", "⊘"),
    ("KV blocks held (static, contiguous: reserved), under each timeline", MEMORY_COLOR, ""),
)


def memory_legend_html() -> str:
    """Return the legend's memory entries, shown beside the states when the pool is limited."""
    items = [
        f'<span class="bv-legend-item"><span class="bv-swatch" style="background:{color}">{mark}</span>{words}</span>'
        for words, color, mark in MEMORY_LEGEND
    ]
    return '<div class="bv-legend bv-legend-memory">' + "".join(items) + "</div>"


def legend_html() -> str:
    """Return the legend: a swatch (hatched for padding) and the chapter's words for each state."""
    items = []
    for key, (words, color) in LEGEND.items():
        style = f"background:{color}"
        if key == "P":
            style += f";background-image:repeating-linear-gradient(45deg,{PADDING_HATCH} 0 1px,transparent 1px 6px)"
        items.append(f'<span class="bv-legend-item"><span class="bv-swatch" style="{style}"></span>{words}</span>')
    lead = '<span class="bv-legend-item"><b>Each row is a batch slot, each column one forward pass:</b></span>'
    return '<div class="bv-legend">' + lead + "".join(items) + "</div>"
