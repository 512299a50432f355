"""The per-request record: an id, an arrival step, an output length and a prompt length."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Request:
    """One inference request; times are in steps (forward passes)."""

    id: str
    arrival: int
    output_tokens: int
    prompt_tokens: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.arrival, int) or self.arrival < 0:
            raise ValueError(f"Request {self.id!r}: arrival must be an integer >= 0, got {self.arrival!r}")
        if not isinstance(self.output_tokens, int) or self.output_tokens < 1:
            raise ValueError(f"Request {self.id!r}: output_tokens must be an integer >= 1, got {self.output_tokens!r}")
        if not isinstance(self.prompt_tokens, int) or self.prompt_tokens < 0:
            raise ValueError(f"Request {self.id!r}: prompt_tokens must be an integer >= 0, got {self.prompt_tokens!r}")


def request_label(index: int) -> str:
    """Return the spreadsheet-style label for a request index: A, B, …, Z, AA, AB, …"""
    label = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        label = chr(ord("A") + rem) + label
    return label
