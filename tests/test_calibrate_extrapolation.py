"""Calibrate's profile under noise: extrapolated along the context, never below the last measured point (issue 46)."""

import numpy as np

from core.clock.cost import Fitted
from replay import calibrate as cal
from replay import synthetic


def test_extrapolation_along_the_context_never_falls_below_the_last_point():
    """Noise that makes the nearer point slower (3.0 then 2.0 ms) no longer extrapolates to a negative time."""
    rows, prefill, context = (0, 1), (0, 64), (0, 512, 2048, 6144)
    measured = {(1, 0, 0): 1.0, (1, 0, 512): 3.0, (1, 0, 2048): 2.0, (0, 64, 0): 1.5}
    grid = cal._fill(measured, rows, prefill, context)
    assert grid[1][0][3] == 2.0  # not 2 - 1 * 4096 / 1536 = -0.67
    Fitted(rows, prefill, context, grid)  # a profile calibrate made is one Fitted accepts


def test_calibrate_under_load_keeps_a_profile_fitted_accepts(monkeypatch):
    """Forced timings, the nearer of the last two measured contexts the slower: calibrate still returns a profile."""
    slower_nearer = {0: 1.0, 512: 1.2, 2048: 4.0, 6144: 2.5}  # a burst of load while 2,048 was timed

    def forced(engine, rows, prefill, context, repeats=synthetic.REPEATS):
        return slower_nearer.get(context, 3.0) + 0.01 * rows + 0.001 * prefill

    monkeypatch.setattr(cal, "time_pass", forced)
    monkeypatch.setattr(cal, "time_wake", lambda engine, path: (0.0, 10.0))
    profile = cal.calibrate("tiny", "cpu", rows=(0, 1, 2), prefill=(0, 64), context=(0, 512, 2048, 6144, 14336))
    ms = np.asarray(profile.ms)
    assert np.all(ms > 0) and ms[1, 0, 4] >= ms[1, 0, 3]  # one row past 8,192 positions: not below 6,144's
