"""The cell states: what a slot does in a pass, one number each, and the letters the CLI and tests draw them with."""

# G and P as the chapter; R: a preempted request's readmission pass (its prompt and earlier tokens recomputed, then its
# next token); F: a prompt chunk that yields no token yet.
IDLE, GENERATING, PADDING, RECOMPUTE, PREFILL = 0, 1, 2, 3, 4
STATE_CHARS = ".GPRF"
STATE_NAMES = ("idle", "generating", "padding", "recompute", "prefill")
STATE_NUMBERS = {name: number for number, name in enumerate(STATE_NAMES)}  # what the renderer receives with a run
