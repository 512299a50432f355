"""The command line's memory flags: the KV pool, its allocation, the reservation, and chunked prefill's budget."""

from __future__ import annotations

import argparse

from core.cli.args import UsageError, bounded_int
from core.clock.hardware import ACCELERATORS, DEFAULT_ACCELERATOR, MODEL_SHAPES, kv_pool_blocks
from core.kv.memory import ALLOCATIONS, MAX_BLOCK_SIZE, MAX_KV_BLOCKS, UNLIMITED, MemoryConfig
from core.sched.engine import entry_budget
from core.sched.policies import REGISTRY, get_policy

MAX_TOKEN_BUDGET = 10_000_000


def add_memory_args(parser: argparse.ArgumentParser) -> None:
    """Add --kv-preset, --kv-blocks, --block-size, --allocation, --reserve-tokens and --token-budget."""
    g = parser.add_argument_group("memory (docs/memory.md; default: an unlimited pool, where only slots decide)")
    presets = [f"{a}:{m}" for a in ACCELERATORS for m in MODEL_SHAPES]
    g.add_argument(
        "--kv-preset",
        choices=presets,
        default=None,
        metavar="ACCELERATOR:MODEL",
        help=f"size the pool from an accelerator's memory less a model's weights ({', '.join(presets[:2])}, ...; "
        "default: none)",
    )
    g.add_argument(
        "--kv-blocks",
        type=bounded_int(1, MAX_KV_BLOCKS),
        default=None,
        help="blocks in the KV pool (default: unlimited)",
    )
    g.add_argument(
        "--block-size", type=bounded_int(1, MAX_BLOCK_SIZE), default=None, help="tokens per block (default 16)"
    )
    g.add_argument("--allocation", choices=ALLOCATIONS, default=None, help="how requests take blocks (default paged)")
    g.add_argument(
        "--reserve-tokens",
        type=bounded_int(1, 1_000_000),
        default=None,
        help="what a contiguous reservation or a static row holds past the prompt (default: the longest output)",
    )
    add_token_budget_arg(g)


def add_token_budget_arg(parser) -> None:
    """Add --token-budget, chunked prefill's tokens per pass (the replay takes it without the pool flags)."""
    parser.add_argument(
        "--token-budget",
        type=bounded_int(1, MAX_TOKEN_BUDGET),
        default=None,
        help="tokens one pass may process, decoding rows first, for every policy with a token budget whose own "
        "setting is not given (vLLM's max_num_batched_tokens, SGLang's chunked_prefill_size; default: each engine's "
        "own for --accelerator; the chapter's chunked needs it)",
    )


def memory_from_args(args: argparse.Namespace, policies: tuple[str, ...]) -> MemoryConfig:
    """Return the pool the flags ask for; refuse flags that would change nothing, naming them."""
    if args.kv_preset is not None:
        if args.kv_blocks is not None:
            raise UsageError("give --kv-blocks or --kv-preset, not both")
        accelerator, model = args.kv_preset.split(":")
        args.kv_blocks = kv_pool_blocks(accelerator, model, args.block_size or 16)
    if args.kv_blocks is None:
        for flag in ("block_size", "allocation", "reserve_tokens"):
            if getattr(args, flag) is not None:
                name = "--" + flag.replace("_", "-")
                raise UsageError(f"{name} applies to a limited pool: give --kv-blocks N too")
        return UNLIMITED
    allocation = args.allocation or "paged"
    reserving = any(get_policy(p).reserves_whole_life(allocation) for p in policies)
    if args.reserve_tokens is not None and not reserving:
        raise UsageError(
            "--reserve-tokens applies to --allocation contiguous or to a policy that reserves whole rows "
            f"({', '.join(n for n, p in REGISTRY.items() if p.reserves_whole_life('paged'))}) only"
        )
    return MemoryConfig(args.kv_blocks, args.block_size or 16, allocation, args.reserve_tokens)


def _shares(policy) -> bool:
    """Return whether --token-budget applies to the policy (TGI's budget is its own max_batch_prefill_tokens)."""
    return policy.has_token_budget and policy.shares_budget


def token_budget(args: argparse.Namespace, policy, slots: int, asked: tuple = (), requests=()) -> int | None:
    """Return a budget policy's tokens a pass: its own setting, else --token-budget, else the engine's default.

    The engine's default is for --accelerator (default DEFAULT_ACCELERATOR); a policy without one (the chapter's
    chunked) needs --token-budget. Refused when no policy `asked` has a budget, and below the slots.
    """
    policy = get_policy(policy)  # a name or the policy object
    if not policy.has_token_budget:
        if args.token_budget is not None and not any(_shares(get_policy(p)) for p in asked or (policy,)):
            budgeted = ", ".join(n for n, p in REGISTRY.items() if _shares(p))
            raise UsageError(f"--token-budget applies to a policy with a token budget ({budgeted}) only")
        return None
    if args.token_budget is not None and args.token_budget < slots:
        raise UsageError(
            f"--token-budget {args.token_budget} is below --slots {slots}: every decoding row takes one token of a "
            "pass's budget, so it must be at least the slots"
        )
    accelerator = getattr(args, "accelerator", None) or DEFAULT_ACCELERATOR
    budget = entry_budget(policy, requests, slots, args.token_budget, accelerator)
    if budget is None:
        raise UsageError(
            f"--policy {policy.name} needs --token-budget T (tokens one pass may process, at least the slots)"
        )
    return budget
