"""Small wording helpers shared by the page's texts."""


def plural(n: int, word: str) -> str:
    """Return "1 row", "2 rows": a count with its noun agreeing."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
