"""The batchviz Panel app: `from app import App; App()` shows it in a notebook."""

from .simulator import App
from .state import SimState

__all__ = ["App", "SimState"]
