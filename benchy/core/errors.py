"""benchy's exception types: one base class, so a script can catch everything benchy raises."""

from __future__ import annotations


class BenchyError(Exception):
    """Base class of the errors benchy raises (config, distributed exchange, empty loader)."""


BenchyError.__module__ = "benchy"
