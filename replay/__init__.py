"""Real replay (optional, needs torch): the core's schedules run through a real transformer and timed."""

from .engine import Engine, ReplayResult, resolve_device
from .model import PRESETS, ModelConfig, Transformer

__all__ = ["PRESETS", "Engine", "ModelConfig", "ReplayResult", "Transformer", "resolve_device"]
