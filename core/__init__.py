"""batchviz's batching core: traffic, trace files, static and continuous schedulers, metrics."""

from core import engines  # noqa: F401 - first: registers the engines' presets beside the chapter's policies
from core.limits import LimitError
from core.measure.metrics import Comparison, Metrics, compare, compute_metrics
from core.sched.run import GENERATING, IDLE, PADDING, Decision, Run
from core.sched.schedule import simulate
from core.workload.request import Request
from core.workload.traces import TraceError, TraceOptions, load_trace, parse_trace
from core.workload.traffic import TrafficConfig, generate

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
