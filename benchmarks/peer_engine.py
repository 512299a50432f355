"""The peer: transformers' continuous batching and its `generate`, on a Llama with our replay model's exact weights."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from core import Run
from replay.engine import Engine, prompt_ids


def _rotary_order(head_dim: int) -> torch.Tensor:
    # Ours rotates interleaved pairs (2i, 2i+1); Llama rotates halves (i, i + D/2). Listing each head's even output
    # dimensions first, then the odd ones, makes the two conventions the same function.
    return torch.cat([torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)])


def peer_model(engine: Engine):
    """Return a LlamaForCausalLM (fp32, SDPA, eval) computing the same function as the engine's model."""
    from transformers import LlamaConfig, LlamaForCausalLM

    ours = engine.model
    c = ours.config
    config = LlamaConfig(
        vocab_size=c.vocab_size,
        hidden_size=c.d_model,
        intermediate_size=c.d_ff,
        num_hidden_layers=c.n_layers,
        num_attention_heads=c.n_heads,
        num_key_value_heads=c.n_heads,
        max_position_embeddings=c.max_positions,
        rms_norm_eps=ours.norm.eps,
        rope_theta=c.rope_base,
        tie_word_embeddings=True,
        attention_bias=False,
        mlp_bias=False,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=0,
    )
    config._attn_implementation = "sdpa"
    peer = LlamaForCausalLM(config).to(engine.device, engine.dtype).eval()
    d, dff = c.d_model, c.d_ff
    heads = (torch.arange(c.n_heads)[:, None] * c.head_dim + _rotary_order(c.head_dim)[None, :]).reshape(-1)
    with torch.no_grad():
        peer.model.embed_tokens.weight.copy_(ours.embed.weight)
        peer.model.norm.weight.copy_(ours.norm.weight)
        for mine, theirs in zip(ours.blocks, peer.model.layers):
            qkv = mine.qkv.weight  # (d, 3d): x @ qkv = [q | k | v]
            theirs.self_attn.q_proj.weight.copy_(qkv[:, :d][:, heads].T)
            theirs.self_attn.k_proj.weight.copy_(qkv[:, d : 2 * d][:, heads].T)
            theirs.self_attn.v_proj.weight.copy_(qkv[:, 2 * d :].T)
            theirs.self_attn.o_proj.weight.copy_(mine.out.weight.T)
            theirs.mlp.gate_proj.weight.copy_(mine.gate_up.weight[:, :dff].T)
            theirs.mlp.up_proj.weight.copy_(mine.gate_up.weight[:, dff:].T)
            theirs.mlp.down_proj.weight.copy_(mine.down.weight.T)
            theirs.input_layernorm.weight.copy_(mine.attn_norm.weight)
            theirs.post_attention_layernorm.weight.copy_(mine.mlp_norm.weight)
    peer.tie_weights()
    return peer


@dataclass
class PeerResult:
    """What one peer run measured: wall time, generated tokens, forward passes and each request's tokens."""

    wall_s: float
    tokens: int
    passes: int
    outputs: dict[str, list[int]] = field(default_factory=dict)

    @property
    def throughput(self) -> float:
        """Return generated tokens per second of wall-clock time."""
        return self.tokens / self.wall_s if self.wall_s else 0.0


class _PassCounter:
    """Counts the peer's forward passes (one per scheduled step), through a hook on its decoder."""

    def __init__(self, peer):
        self.passes = 0
        self.handle = peer.model.register_forward_pre_hook(self._count)

    def _count(self, *_):
        self.passes += 1


def run_continuous(peer, run: Run, engine: Engine, page_size: int = 16) -> PeerResult:
    """Return the peer's continuous batching of the run's requests, FCFS, greedy, each with its own output length."""
    from transformers import ContinuousBatchingConfig, GenerationConfig

    generation = GenerationConfig(do_sample=False, eos_token_id=None, pad_token_id=0, max_new_tokens=1)
    vocab = peer.config.vocab_size
    prompts = [prompt_ids(r, vocab, engine.seed) for r in run.requests]  # the engine's own prompts
    # Every request's pages at once, and a page per slot to spare: left to size itself, transformers' cache takes a
    # share of the machine's memory (about 14 GB on a 24 GB machine for a 3.7M-parameter model).
    pages = sum(-(-(len(p) + r.output_tokens) // page_size) for p, r in zip(prompts, run.requests)) + run.slots
    batching = ContinuousBatchingConfig(page_size=page_size, num_blocks=pages, max_requests_per_batch=run.slots)
    order = sorted(range(len(run.requests)), key=lambda i: (run.requests[i].arrival, i))  # arrival order, FCFS
    counter = _PassCounter(peer)
    outputs: dict[str, list[int]] = {}
    try:
        with torch.inference_mode():
            manager_cm = peer.continuous_batching_context_manager(
                generation_config=generation, continuous_batching_config=batching, block=True, timeout=30
            )
            with manager_cm as manager:
                counter.passes = 0  # the manager's warm-up is not the workload
                t0 = time.perf_counter()
                for i in order:
                    r = run.requests[i]
                    manager.add_request(prompts[i], request_id=r.id, max_new_tokens=r.output_tokens)
                while len(outputs) < len(order):
                    result = manager.get_result(timeout=60)
                    if result is None:
                        raise RuntimeError("the peer's continuous batcher stopped answering")
                    if result.is_finished():
                        outputs[result.request_id] = list(result.generated_tokens)
                wall = time.perf_counter() - t0
    finally:
        counter.handle.remove()
    return PeerResult(wall, sum(map(len, outputs.values())), counter.passes, outputs)


def run_static(peer, run: Run, engine: Engine) -> PeerResult:
    """Return the peer's `generate` over the run's static batches: left-padded, each batch to its longest output."""
    batches: dict[int, list[int]] = {}
    for i, start in enumerate(run.start.tolist()):
        batches.setdefault(start, []).append(i)
    vocab = peer.config.vocab_size
    prompts = [prompt_ids(r, vocab, engine.seed) for r in run.requests]  # built before the clock starts, as ours
    counter = _PassCounter(peer)
    outputs: dict[str, list[int]] = {}
    try:
        t0 = time.perf_counter()
        for start in sorted(batches):
            members = sorted(batches[start], key=lambda i: run.slot[i])
            prompts_in = [prompts[i] for i in members]
            width = max(map(len, prompts_in))
            ids = torch.tensor([[0] * (width - len(p)) + p for p in prompts_in], device=engine.device)
            mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts_in], device=engine.device)
            steps = max(run.requests[i].output_tokens for i in members)
            with torch.inference_mode():
                out = peer.generate(
                    input_ids=ids,
                    attention_mask=mask,
                    max_new_tokens=steps,
                    min_new_tokens=steps,
                    do_sample=False,
                    eos_token_id=None,
                    pad_token_id=0,
                )
            for row, i in zip(out[:, width:].tolist(), members):
                outputs[run.requests[i].id] = row[: run.requests[i].output_tokens]  # the rest was padding work
        wall = time.perf_counter() - t0
    finally:
        counter.handle.remove()
    return PeerResult(wall, sum(map(len, outputs.values())), counter.passes, outputs)
