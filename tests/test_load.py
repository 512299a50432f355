"""A class at once, in small: five sessions in a burst on a real `batchviz serve`, while an open one moves a slider."""

from benchmarks.load import burst, start_server

SESSIONS = 5
# A session holds its widgets and views; the runs and playback texts are shared by sessions (app/simulator/state.py).
# `./dev bench load` measures 1-2 MB per live session; 20 MB each would mean every session builds its own copy of
# what should be shared.
MAX_MB_PER_SESSION = 20


def test_a_burst_of_sessions_opens_without_errors_while_an_open_session_keeps_answering():
    """Every new session gets the app; every slider change of the open session gets the core's new timeline."""
    server = start_server()
    try:
        result = burst(server, SESSIONS)
    finally:
        server.stop()
    assert result.n == SESSIONS and result.errors == []
    assert len(result.latencies) >= 1  # answered, and equal to the core's timeline (checked inside); no timing here
    assert result.cpu_per_session_s > 0  # the server's own CPU time did the work, not some other process
    grown = result.rss_peak_mb - result.rss_before_mb
    assert 0 < result.rss_before_mb and 0 <= grown < SESSIONS * MAX_MB_PER_SESSION
    # Closed sessions expire and are dropped: closing them never grows the server past its peak by a session.
    assert result.rss_after_mb < result.rss_peak_mb + MAX_MB_PER_SESSION
