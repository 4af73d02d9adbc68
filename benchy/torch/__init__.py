"""The original benchy's import path: ``from benchy.torch import BenchmarkDataLoader``."""

from .._wrappers import BenchmarkDataLoader, BenchmarkGenericIteratorWrapper

__all__ = ["BenchmarkDataLoader", "BenchmarkGenericIteratorWrapper"]
