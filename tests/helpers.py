"""Shared builders for the tests: small request lists and hypothesis strategies."""

from hypothesis import strategies as st

from core import Request
from core.request import request_label


def make_requests(*pairs: tuple[int, int]) -> list[Request]:
    """Return requests A, B, … from (arrival, output_tokens) pairs."""
    return [Request(request_label(i), a, n) for i, (a, n) in enumerate(pairs)]


requests_strategy = st.lists(st.tuples(st.integers(0, 30), st.integers(1, 25)), min_size=0, max_size=40).map(
    lambda pairs: make_requests(*pairs)
)
