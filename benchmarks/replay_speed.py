"""The replay on this machine: measured continuous/static throughput beside the simulator's, and step time by batch."""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from core import generate
from core.batch.sequence import Sequence
from core.cli.parsers import COMPARE_SLOTS, COMPARE_TRAFFIC
from replay import Engine
from replay.cli import PRESET_NAMES
from replay.engine import BLOCK_SIZE
from replay.report import summary

BATCHES = (1, 2, 4, 8, 16, 32, 64, 128)


def decode_step_ms(engine: Engine, batch: int, context: int = 128, repeats: int = 15) -> float:
    """Return the median time of one decode step for `batch` sequences with `context` cached tokens each."""
    from core.batch.kv_blocks import BlockAllocator
    from core.batch.ragged import build_batch
    from replay.attention import PagedKVCache, ragged_attention

    blocks = batch * (context // BLOCK_SIZE + 2)
    allocator = BlockAllocator(blocks, BLOCK_SIZE)
    cache = PagedKVCache(engine.model.config, blocks, BLOCK_SIZE, engine.device, engine.dtype)
    seqs = []
    for i in range(batch):
        s = Sequence(str(i), i, [1] * (context + 1), context, 1 << 20, num_computed_tokens=context)
        allocator.allocate(s)
        seqs.append(s)
    times = []
    for _ in range(repeats):
        if engine.device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        b = build_batch(seqs, BLOCK_SIZE)
        tokens = torch.as_tensor(b.token_ids, device=engine.device)
        positions = torch.as_tensor(b.positions, device=engine.device)
        hidden = engine.model(tokens, positions, ragged_attention(cache, b, engine.device))
        engine.model.logits(hidden).argmax(-1).tolist()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _preset(text: str) -> str:
    if text not in PRESET_NAMES:  # a type, not choices: argparse 3.11 refuses an empty list against choices
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(PRESET_NAMES)}, got {text[:40]!r}")
    return text


def main(argv: list[str]) -> None:
    """Print, for each preset asked (default: tiny and small), the replay of the chapter's traffic and a batch sweep."""
    p = argparse.ArgumentParser(prog="./dev bench replay", description=__doc__)
    p.add_argument(
        "presets", nargs="*", type=_preset, help=f"model presets: {', '.join(PRESET_NAMES)} (default tiny small)"
    )
    presets = p.parse_args(argv).presets or ["tiny", "small"]
    requests = generate(COMPARE_TRAFFIC)
    for preset in presets:
        engine = Engine(preset)
        print(
            f"== {preset} ({engine.model.num_parameters / 1e6:.1f}M parameters) on {engine.device}, "
            f"{torch.get_num_threads()} thread(s); {len(requests)} chat-shaped requests, {COMPARE_SLOTS} slots"
        )
        doc = summary(*(engine.replay(requests, COMPARE_SLOTS, p) for p in ("static", "continuous")))
        s, c = doc["static"], doc["continuous"]
        print(f"  tokens/s      static {s['tokens_per_s']:8.0f}   continuous {c['tokens_per_s']:8.0f}")
        print(f"  wall time     static {s['wall_s']:8.2f}s  continuous {c['wall_s']:8.2f}s")
        print(
            f"  speedup       measured {doc['measured_speedup']:.2f}x   "
            f"simulator predicts {doc['predicted_speedup']:.2f}x"
        )
        print("  decode step time against batch size (128 cached tokens each):")
        for batch in BATCHES:
            ms = decode_step_ms(engine, batch)
            print(f"    batch {batch:4d}: {ms:7.2f} ms/step  {batch / ms * 1e3:9.0f} tokens/s")
