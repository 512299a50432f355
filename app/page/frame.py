"""The page's frame: its header, its tabs in order, the simulator's disclosures and the traffic buttons' words."""

# The subtitle holds on every tab; how to read a timeline is said beside the timelines (palette.legend_html).
HEADER = (
    "<h1>Static vs continuous batching</h1><p>The chapter's simulator, its exercises and engines.</p>"
)
WORKED_NAME = "the chapter's worked example"
CHAPTER_BUTTON = "The chapter's traffic (12 requests)"
GENERATED_NOTE = (
    "Now showing generated traffic (seed {seed}): the chapter's twelve requests are not a generator seed. "
    '"The chapter\'s traffic" brings them back.'
)
# The settings the first lesson does not need, each behind a disclosure in the widget's row (app/simulator/widget.py).
SETTINGS_TITLES = {
    "more": "More traffic",
    "memory": "Memory and timeout",
    "clock": "On a clock",
    "trace": "Your own trace",
}
TABS = {  # ?tab= value -> tab title, in page order
    "simulator": "Simulator",
    "knee": "Exercise 1: the knee",
    "spread": "Exercise 2: length spread",
    "temperature": "Exercise 3: one temperature",
    "memory": "Memory",
    "schedulers": "Schedulers",
    "quiz": "Check yourself",
}
