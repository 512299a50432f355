"""Per-request sampling in torch: each row with its own temperature, top-k, top-p and generator."""

from __future__ import annotations

import torch

from core.batch.sampling import SamplingParams


def make_generator(params: SamplingParams, device) -> torch.Generator:
    """Return the request's own generator: seeded when it has a seed, else seeded from the OS."""
    generator = torch.Generator(device=device)
    if params.seed is None:
        generator.seed()
    else:
        generator.manual_seed(params.seed)
    return generator


def filter_row(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """Return one row's probabilities (V,) after its temperature, top-k and top-p."""
    scaled = logits / params.temperature  # (V,)
    if 0 < params.top_k < scaled.numel():
        kth = torch.topk(scaled, params.top_k).values[-1]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    probs = torch.softmax(scaled, dim=-1)  # (V,)
    if params.top_p < 1.0:
        ranked, order = torch.sort(probs, descending=True)  # (V,) each
        before = torch.cumsum(ranked, dim=-1) - ranked  # mass ahead of each token; the first always stays
        ranked = ranked * (before < params.top_p)
        probs = torch.zeros_like(probs).scatter(0, order, ranked)
    return probs / probs.sum()


def sample_rows(logits: torch.Tensor, params: list[SamplingParams], generators: list[torch.Generator]) -> list[int]:
    """Return one token per row of logits (n, V): greedy rows take the argmax, the others draw with their own RNG."""
    tokens = logits.argmax(dim=-1).tolist()  # (n,)
    for i, p in enumerate(params):
        if p.temperature > 0:
            probs = filter_row(logits[i].float(), p)
            tokens[i] = int(torch.multinomial(probs, 1, generator=generators[i]).item())
    return tokens
