"""The batching policies, each written once as a small object in a registry; a name not in it is refused."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Policy:
    """What a policy decides: when requests join, whether a batch waits for a timeout, what one pass may hold.

    Requests join between any two passes (continuous) or a whole batch at a time (static); a pass holds every
    running row, or at most a token budget (chunked).
    """

    name: str
    between_passes: bool  # admit and retire between any two passes (iteration-level scheduling)
    has_timeout: bool  # a batch forms when the slots fill or the oldest has waited the timeout
    token_budget: bool  # a pass processes at most `token_budget` tokens: decoding rows first, then prompt chunks
    summary: str


STATIC = Policy("static", False, True, False, "form a batch, run it until its longest member finishes")
CONTINUOUS = Policy("continuous", True, False, False, "admit and retire between passes")
CHUNKED = Policy("chunked", True, False, True, "continuous, with prompts split into chunks under a token budget")

REGISTRY: dict[str, Policy] = {p.name: p for p in (STATIC, CONTINUOUS, CHUNKED)}


def get_policy(name: str) -> Policy:
    """Return the registered policy called `name`, or refuse the name with the ones allowed."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"policy must be one of {', '.join(REGISTRY)}, got {name!r}") from None
