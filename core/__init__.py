"""batchviz's batching core: traffic, trace files, static and continuous schedulers, metrics."""

from .metrics import Comparison, Metrics, compare, compute_metrics
from .request import Request
from .run import GENERATING, IDLE, PADDING, Decision, Run
from .schedule import simulate
from .traffic import TrafficConfig, generate

__all__ = [
    "GENERATING",
    "IDLE",
    "PADDING",
    "Comparison",
    "Decision",
    "Metrics",
    "Request",
    "Run",
    "TrafficConfig",
    "compare",
    "compute_metrics",
    "generate",
    "simulate",
]
