"""The ``benchy`` command (summary, compare, report, plot, parse, run, sweep)."""

from .main import main

__all__ = ["main"]
