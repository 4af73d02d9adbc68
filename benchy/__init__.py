"""benchy: is training limited by data loading or by compute, and by how much?

Swap ``DataLoader`` for :class:`BenchmarkDataLoader` (or wrap any loader with
:class:`BenchmarkGenericIteratorWrapper`); the first epochs then run IO, SYNTHETIC and
FULL trials and print their throughputs with 95 % confidence intervals. :func:`load` reads a
saved result back (any schema version); ``benchy compare``/``report``/``plot``/``parse`` work on them.
"""

from ._config import CONFIG_ENV_VAR, RUN_NAME_ENV_VAR, Config, ConfigError, GlobalConfig, ModeConfig, load_config
from ._dist import DistributedError
from ._errors import BenchyError
from ._integration import add_arguments, data_loader, wrap
from ._results import Interruption, RunResults, TrialResult
from ._run import ModeRun, Run
from ._schedule import Mode, Schedule, TrialSpec
from ._schema import SCHEMA_VERSION, ResultFileError, load
from ._sink import EXIT_MISSING_MODE
from ._source import EmptyLoaderError
from ._stats import Estimate
from ._version import __version__
from ._wrappers import BenchmarkDataLoader, BenchmarkGenericIteratorWrapper

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
