"""A compact decoder-only transformer (RMSNorm, rotary positions, SwiGLU), randomly initialised from a seed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn
from torch.nn import functional as F


@dataclass(frozen=True)
class ModelConfig:
    """Sizes of the model; `head_dim` is d_model / n_heads."""

    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    max_positions: int = 8192
    rope_base: float = 10000.0

    @property
    def head_dim(self) -> int:
        """Return the width of one attention head."""
        return self.d_model // self.n_heads


PRESETS = {
    "tiny": ModelConfig(vocab_size=512, d_model=64, n_layers=2, n_heads=4, d_ff=176),  # CPU tests
    "small": ModelConfig(vocab_size=4096, d_model=256, n_layers=4, n_heads=8, d_ff=704),  # CPU benchmark
    "gpt2": ModelConfig(vocab_size=50257, d_model=768, n_layers=12, n_heads=12, d_ff=2048),  # GPT-2-small scale
}


class Attention(Protocol):
    """How a forward pass attends: the paged ragged cache, or a dense padded one (see replay.attention)."""

    def __call__(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Store k, v for these tokens; return each query's attention output, (T, H, D)."""
        ...


class RMSNorm(nn.Module):
    """Root-mean-square norm with a learned scale."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalise the last dimension."""
        return F.rms_norm(x, self.weight.shape, self.weight, self.eps)  # (..., d)


class Dense(nn.Module):
    """A bias-free linear layer whose weight is stored (in, out), so the forward is one plain matmul.

    On the CPU's BLAS a few rows times an (in, out) weight ran 1.7-2.4x faster than nn.Linear's (out, in) at the
    replay's decode sizes (8 rows); on a GPU either layout is fine.
    """

    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(d_in, d_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return x (..., in) times the weight: (..., out)."""
        return x @ self.weight


def rotary_tables(config: ModelConfig, device, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Return cos and sin, each (max_positions, head_dim / 2)."""
    half = config.head_dim // 2
    inv_freq = 1.0 / config.rope_base ** (torch.arange(half, dtype=torch.float32) / half)  # (half,)
    angles = torch.outer(torch.arange(config.max_positions, dtype=torch.float32), inv_freq)  # (P, half)
    return angles.cos().to(device, dtype), angles.sin().to(device, dtype)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate x (T, H, D) by its tokens' angles; cos and sin are (T, D / 2)."""
    x1, x2 = x[..., 0::2], x[..., 1::2]  # (T, H, D/2) each
    cos, sin = cos[:, None, :], sin[:, None, :]  # (T, 1, D/2)
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)  # (T, H, D)


class Block(nn.Module):
    """Pre-norm attention and SwiGLU feed-forward, each with a residual."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.attn_norm = RMSNorm(config.d_model)
        self.qkv = Dense(config.d_model, 3 * config.d_model)
        self.out = Dense(config.d_model, config.d_model)
        self.mlp_norm = RMSNorm(config.d_model)
        self.gate_up = Dense(config.d_model, 2 * config.d_ff)
        self.down = Dense(config.d_ff, config.d_model)

    def forward(self, x, layer: int, cos, sin, attention: Attention) -> torch.Tensor:
        """Run one layer over the flattened tokens x (T, d)."""
        c = self.config
        T = x.shape[0]
        q, k, v = self.qkv(self.attn_norm(x)).view(T, 3, c.n_heads, c.head_dim).unbind(1)  # (T, H, D) each
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)  # (T, H, D)
        x = x + self.out(attention(layer, q, k, v).reshape(T, c.d_model))  # (T, d)
        gate, up = self.gate_up(self.mlp_norm(x)).chunk(2, dim=-1)  # (T, d_ff) each
        return x + self.down(F.silu(gate) * up)  # (T, d)


class Transformer(nn.Module):
    """Embeddings, blocks, final norm and a tied output head; forward takes flattened tokens and positions."""

    def __init__(self, config: ModelConfig, seed: int = 0, device: str | torch.device = "cpu", dtype=torch.float32):
        super().__init__()
        self.config = config
        generator = torch.Generator().manual_seed(seed)
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.d_model)
        with torch.no_grad():  # seeded init, independent of the global RNG, scaled by 1/sqrt(fan-in)
            for module in self.modules():
                if isinstance(module, Dense):
                    d_in, d_out = module.weight.shape
                    module.weight.copy_(torch.randn(d_out, d_in, generator=generator).T / d_in**0.5)
                elif isinstance(module, nn.Embedding):
                    d = module.weight.shape[-1]
                    module.weight.copy_(torch.randn(module.weight.shape, generator=generator) / d**0.5)
        self.to(device=device, dtype=dtype)
        # The output head is the embedding, tied; its transpose is kept contiguous for the same matmul speed. The
        # replay never trains, so the copy cannot go stale.
        self.register_buffer("head", self.embed.weight.detach().T.contiguous(), persistent=False)  # (d, V)
        cos, sin = rotary_tables(config, device, dtype)
        self.register_buffer("cos", cos, persistent=False)  # (P, D/2)
        self.register_buffer("sin", sin, persistent=False)  # (P, D/2)

    @torch.no_grad()
    def forward(self, token_ids: torch.Tensor, positions: torch.Tensor, attention: Attention) -> torch.Tensor:
        """Return the final hidden states (T, d) of the flattened tokens (T,) at their positions (T,)."""
        x = self.embed(token_ids)  # (T, d)
        cos, sin = self.cos[positions], self.sin[positions]  # (T, D/2) each
        for layer, block in enumerate(self.blocks):
            x = block(x, layer, cos, sin, attention)  # (T, d)
        return self.norm(x)  # (T, d)

    @torch.no_grad()
    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Return next-token logits (N, V) in fp32 for hidden states (N, d), through the tied embedding."""
        return (hidden @ self.head).float()  # (N, V)

    @property
    def num_parameters(self) -> int:
        """Return the parameter count."""
        return sum(p.numel() for p in self.parameters())
