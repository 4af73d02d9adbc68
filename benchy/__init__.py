"""benchy: is training limited by data loading or by compute, and by how much?

Swap ``DataLoader`` for :class:`BenchmarkDataLoader` (or wrap any loader with
:class:`BenchmarkGenericIteratorWrapper`); the first epochs then run IO, SYNTHETIC and FULL trials and print their
throughputs with 95 % confidence intervals. :func:`load` reads a saved result back (any schema version).

The names that need torch are imported on first use, so that the ``benchy`` command and :func:`load` start
without importing torch (0.2 s instead of 2 s per command here).
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any, List

from .core.config import CONFIG_ENV_VAR, RUN_NAME_ENV_VAR, Config, ConfigError, GlobalConfig, ModeConfig
from .core.errors import BenchyError
from .core.outcomes import Interruption
from .core.results import RunResults, TrialResult
from .core.schedule import Mode, Schedule, TrialSpec
from .core.stats import Estimate
from .core.version import __version__
from .results.configfile import load_config
from .results.saved import ModeRun, Run
from .results.schema import SCHEMA_VERSION, ResultFileError, load

if TYPE_CHECKING:
    from .integrations.arguments import add_arguments, data_loader, wrap
    from .integrations.wrappers import BenchmarkDataLoader, BenchmarkGenericIteratorWrapper
    from .measure.ranks import DistributedError
    from .measure.source import EmptyLoaderError
    from .session.sink import EXIT_MISSING_MODE

_LAZY = {
    "DistributedError": ".measure.ranks",
    "add_arguments": ".integrations.arguments",
    "data_loader": ".integrations.arguments",
    "wrap": ".integrations.arguments",
    "EXIT_MISSING_MODE": ".session.sink",
    "EmptyLoaderError": ".measure.source",
    "BenchmarkDataLoader": ".integrations.wrappers",
    "BenchmarkGenericIteratorWrapper": ".integrations.wrappers",
}


def __getattr__(name: str) -> Any:
    """The torch-dependent names, imported when first asked for (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'benchy' has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "CONFIG_ENV_VAR",
    "EXIT_MISSING_MODE",
    "RUN_NAME_ENV_VAR",
    "SCHEMA_VERSION",
    "BenchmarkDataLoader",
    "BenchmarkGenericIteratorWrapper",
    "BenchyError",
    "Config",
    "ConfigError",
    "DistributedError",
    "EmptyLoaderError",
    "Estimate",
    "GlobalConfig",
    "Interruption",
    "Mode",
    "ModeConfig",
    "ModeRun",
    "ResultFileError",
    "Run",
    "RunResults",
    "Schedule",
    "TrialResult",
    "TrialSpec",
    "__version__",
    "add_arguments",
    "data_loader",
    "load",
    "load_config",
    "wrap",
]
