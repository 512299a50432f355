"""The per-request record: an id, an arrival step, an output length, a prompt length, a priority class, a cap."""

from __future__ import annotations

from dataclasses import dataclass

from core.limits import MAX_ARRIVAL_STEP, MAX_OUTPUT_TOKENS, MAX_PRIORITY, MAX_PROMPT_TOKENS, LimitError, show_number

# field -> (low, high); numpy integers are refused too: a Request holds plain ints, so sums never wrap around.
_BOUNDS = {
    "arrival": (0, MAX_ARRIVAL_STEP),
    "output_tokens": (1, MAX_OUTPUT_TOKENS),
    "prompt_tokens": (0, MAX_PROMPT_TOKENS),
    "priority": (-MAX_PRIORITY, MAX_PRIORITY),
    "max_tokens": (0, MAX_OUTPUT_TOKENS),
}


@dataclass(frozen=True)
class Request:
    """One inference request; times are in steps (forward passes)."""

    id: str
    arrival: int
    output_tokens: int
    prompt_tokens: int = 0
    priority: int = 0  # lower is served first under the priority policy (vLLM's convention); others ignore it
    # The client's cap on the answer (max_tokens), what an engine knows of a length before generating it; 0: none
    # given (the traffic's cap applies). SGLang's lof orders by it.
    max_tokens: int = 0

    def __post_init__(self) -> None:
        for name, (low, high) in _BOUNDS.items():
            value = getattr(self, name)
            if type(value) is not int or not low <= value <= high:
                error = LimitError if type(value) is int else ValueError
                raise error(
                    f"Request {self.id!r}: {name} must be an integer in {low:,}..{high:,}, got {show_number(value)}"
                )
        if self.max_tokens and self.max_tokens < self.output_tokens:
            raise ValueError(
                f"Request {self.id!r}: max_tokens {self.max_tokens:,} is below its output_tokens "
                f"{self.output_tokens:,}: an answer stops at its cap"
            )


def request_label(index: int) -> str:
    """Return the spreadsheet-style label for a request index: A, B, …, Z, AA, AB, …"""
    label = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        label = chr(ord("A") + rem) + label
    return label
