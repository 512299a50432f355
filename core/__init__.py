"""batchviz's batching core: traffic, trace files, static and continuous schedulers, metrics."""

from .limits import LimitError
from .metrics import Comparison, Metrics, compare, compute_metrics
from .request import Request
from .run import GENERATING, IDLE, PADDING, Decision, Run
from .schedule import simulate
from .traces import TraceError, TraceOptions, load_trace, parse_trace
from .traffic import TrafficConfig, generate

__all__ = [
    "GENERATING",
    "IDLE",
    "PADDING",
    "Comparison",
    "Decision",
    "LimitError",
    "Metrics",
    "Request",
    "Run",
    "TraceError",
    "TraceOptions",
    "TrafficConfig",
    "compare",
    "compute_metrics",
    "generate",
    "load_trace",
    "parse_trace",
    "simulate",
]
