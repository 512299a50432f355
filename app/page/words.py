"""Small wording helpers shared by the page's texts."""


def times(n: int) -> str:
    """Return how often, in words: "once", "twice", "3 times", "0 times"."""
    return {1: "once", 2: "twice"}.get(n, f"{n:,} times")


def value_range(low: float, high: float, fmt: str, unit: str = "") -> str:
    """Return a range as it reads: "39.8 s" where both ends read the same, else "39.1 to 39.8 s"."""
    a, b = fmt.format(low), fmt.format(high)
    return f"{a}{unit}" if a == b else f"{a} to {b}{unit}"


def plural(n: int, word: str) -> str:
    """Return "1 row", "2 rows": a count with its noun agreeing."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
