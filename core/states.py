"""The cell states: what a slot does in a pass, one number each, and the letters the CLI and tests draw them with."""

# G and P as the chapter; R: a preempted request's readmission pass (its prompt and earlier tokens recomputed, then its
# next token); F: a prompt chunk that yields no token yet; Z: a running request paused while a pass prefills others'
# prompts (TGI and SGLang run a prompt pass without the decoding rows).
IDLE, GENERATING, PADDING, RECOMPUTE, PREFILL, PAUSED = 0, 1, 2, 3, 4, 5
STATE_CHARS = ".GPRFZ"
STATE_NAMES = ("idle", "generating", "padding", "recompute", "prefill", "paused")
STATE_NUMBERS = {name: number for number, name in enumerate(STATE_NAMES)}  # what the renderer receives with a run
