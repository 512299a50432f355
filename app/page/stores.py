"""Stores beside SimState that more than one view reads: a view writes its results here, never into another view."""

from __future__ import annotations

import param


class Measurements(param.Parameterized):
    """What the real replay measured in this session; the knee view draws it beside the cost model."""

    step_ms_by_batch = param.Dict(default={}, doc="The last replay's continuous step time (ms) by batch size")
