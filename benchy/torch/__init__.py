"""The original benchy's import path: ``from benchy.torch import BenchmarkDataLoader``."""

from ..integrations.wrappers import BenchmarkDataLoader, BenchmarkGenericIteratorWrapper

__all__ = ["BenchmarkDataLoader", "BenchmarkGenericIteratorWrapper"]
