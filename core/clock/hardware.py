"""Named accelerators and model shapes for the step-time cost model: published figures, editable once chosen."""

from __future__ import annotations

from dataclasses import dataclass

from core.clock.cost import Roofline


@dataclass(frozen=True)
class Accelerator:
    """An accelerator's memory bandwidth and dense bf16 compute, as its maker publishes them (no sparsity)."""

    key: str  # what the CLI and the URL take
    name: str
    mem_bw_gbs: float  # HBM bandwidth, GB/s
    tflops: float  # dense bf16 tensor throughput, TFLOP/s
    memory_gb: float = 80.0  # HBM capacity, GB


@dataclass(frozen=True)
class ModelShape:
    """A decoder's size for the cost model: its parameters and the KV-cache bytes one token costs."""

    key: str
    name: str
    params_b: float
    layers: int
    kv_heads: int
    head_dim: int
    bytes_per_param: float = 2.0  # bf16

    @property
    def kv_bytes_per_token(self) -> float:
        """Return K and V for every layer and KV head, in the weights' precision."""
        return 2 * self.layers * self.kv_heads * self.head_dim * self.bytes_per_param


ACCELERATORS = {
    a.key: a
    for a in (
        Accelerator("a100-80gb", "A100 80GB SXM", mem_bw_gbs=2_039.0, tflops=312.0),
        Accelerator("h100-sxm", "H100 SXM", mem_bw_gbs=3_350.0, tflops=989.0),
        Accelerator("h200", "H200 SXM", mem_bw_gbs=4_800.0, tflops=989.0, memory_gb=141.0),
    )
}

MODEL_SHAPES = {
    m.key: m
    for m in (
        ModelShape("llama2-7b", "Llama-2 7B", params_b=6.74, layers=32, kv_heads=32, head_dim=128),
        ModelShape("llama3-8b", "Llama-3 8B", params_b=8.03, layers=32, kv_heads=8, head_dim=128),  # grouped-query
        ModelShape("llama2-13b", "Llama-2 13B", params_b=13.0, layers=40, kv_heads=40, head_dim=128),
    )
}

# For a select widget: display name -> key.
ACCELERATOR_OPTIONS = {a.name: k for k, a in ACCELERATORS.items()}
MODEL_OPTIONS = {m.name: k for k, m in MODEL_SHAPES.items()}

DEFAULT_ACCELERATOR = "h100-sxm"
DEFAULT_MODEL_SHAPE = "llama2-7b"
DEFAULT_OVERHEAD_MS = 1.0


def cost_model(
    accelerator: str = DEFAULT_ACCELERATOR, model: str = DEFAULT_MODEL_SHAPE, overhead_ms: float = DEFAULT_OVERHEAD_MS
) -> Roofline:
    """Return the cost model of a named model on a named accelerator."""
    if accelerator not in ACCELERATORS:
        raise ValueError(f"accelerator must be one of {', '.join(ACCELERATORS)}, got {accelerator!r}")
    if model not in MODEL_SHAPES:
        raise ValueError(f"model must be one of {', '.join(MODEL_SHAPES)}, got {model!r}")
    a, m = ACCELERATORS[accelerator], MODEL_SHAPES[model]
    return Roofline(
        params_b=m.params_b,
        bytes_per_param=m.bytes_per_param,
        kv_bytes_per_token=m.kv_bytes_per_token,
        mem_bw_gbs=a.mem_bw_gbs,
        tflops=a.tflops,
        overhead_ms=overhead_ms,
    )


def kv_pool_blocks(
    accelerator: str = DEFAULT_ACCELERATOR, model: str = DEFAULT_MODEL_SHAPE, block_size: int = 16
) -> int:
    """Return the KV blocks a named accelerator holds once a named model's weights are loaded (nothing else kept)."""
    from core.kv.memory import pool_for

    a, m = ACCELERATORS[accelerator], MODEL_SHAPES[model]
    weights_gb = m.params_b * m.bytes_per_param * 1e9 / 2**30
    return pool_for(a.memory_gb, weights_gb, m.kv_bytes_per_token / 2**20, block_size)
