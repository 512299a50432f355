"""The batchviz Panel app: `from app import App; App()` shows it in a notebook."""

__all__ = ["App", "SimState"]


def __getattr__(name: str):
    # Lazy, so `app.export` and the plot builders load without Panel: a page built while Panel is
    # imported would link Panel's extension scripts, which a file:// page cannot fetch.
    if name == "App":
        from app.shell import App

        return App
    if name == "SimState":
        from app.simulator.state import SimState

        return SimState
    raise AttributeError(f"module 'app' has no attribute {name!r}")
