"""A class at once, in small: five sessions in a burst on a real `batchviz serve`, while an open one moves a slider."""

from benchmarks.load import burst, start_server


def test_a_burst_of_sessions_opens_without_errors_while_an_open_session_keeps_answering():
    """Every new session gets the app; every slider change of the open session gets the core's new timeline."""
    server = start_server()
    try:
        result = burst(server, 5)
    finally:
        server.stop()
    assert result.errors == []
    assert len(result.latencies) >= 1  # answered, and equal to the core's timeline (checked inside); no timing here
    assert result.rss_peak_mb >= result.rss_before_mb > 0
