"""Real replay (optional, needs torch): the core's schedules run through a real transformer and timed."""

__all__ = ["PRESETS", "Cancelled", "Engine", "ModelConfig", "ReplayResult", "Transformer", "resolve_device"]


class Cancelled(Exception):
    """An online replay was cancelled between passes (defined here, so catching it needs no torch)."""


def __getattr__(name: str):
    # Lazy, so `replay.cli` (and `batchviz --help`) load without importing torch.
    if name in ("Engine", "ReplayResult", "resolve_device"):
        from . import engine

        return getattr(engine, name)
    if name in ("PRESETS", "ModelConfig", "Transformer"):
        from . import model

        return getattr(model, name)
    raise AttributeError(f"module 'replay' has no attribute {name!r}")
