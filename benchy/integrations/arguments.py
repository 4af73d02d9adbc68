"""One-line integration with a script's command line: the flag and the loader switch."""

from __future__ import annotations

import argparse
from typing import Any, Dict, Iterable, Optional, Union

from torch.utils.data import DataLoader

from ..core.config import Config, ConfigLike
from ..results.configfile import resolve_config
from .wrappers import BenchmarkDataLoader, BenchmarkGenericIteratorWrapper

Switch = Union[bool, argparse.Namespace]


# Each option, ``--benchy_x`` also spelled ``--benchy-x``.
_OPTIONS: Dict[str, Dict[str, Any]] = {
    "enable_benchy": {"action": "store_true", "help": "run benchy's IO / SYNTHETIC / FULL trials at the first epoch boundaries"},
    "benchy_config": {
        "metavar": "PATH",
        "help": "benchy YAML config (default: $BENCHY_CONFIG_FILE, else built-in defaults)",
    },
    "benchy_name": {
        "metavar": "NAME",
        "help": "the run's name in benchy's JSON, for compare and report (default: $BENCHY_RUN_NAME, "
        "the config's run_name, else the script's name and start time)",
    },
    "benchy_count": {
        "choices": ("samples", "tokens"),
        "help": "tokens: also count tokens per second and the padding share of sequence batches "
        "(default: the config's count, else samples)",
    },
}


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``--enable_benchy``, ``--benchy_config PATH``, ``--benchy_name NAME`` and
    ``--benchy_count {samples,tokens}`` to ``parser`` (returned for chaining).

    Options the parser already has are left alone, so a script that defines its own
    ``--enable_benchy`` keeps it.
    """
    existing = set(parser._option_string_actions)  # argparse has no public look-up
    group = parser.add_argument_group("benchy")
    for name, options in _OPTIONS.items():
        if f"--{name}" not in existing:
            group.add_argument(f"--{name}", f"--{name.replace('_', '-')}", dest=name, **options)
    return parser


def _chosen(enabled: Switch, benchy_config: ConfigLike) -> Optional[Config]:
    if isinstance(enabled, argparse.Namespace):
        if not hasattr(enabled, "enable_benchy"):
            raise ValueError(
                "benchy: the argparse namespace has no 'enable_benchy'; call benchy.add_arguments(parser) "
                "before parse_args(), or pass True/False"
            )
        on, config = bool(enabled.enable_benchy), getattr(enabled, "benchy_config", None)
        name, count = getattr(enabled, "benchy_name", None), getattr(enabled, "benchy_count", None)
    elif isinstance(enabled, bool):
        on, config, name, count = enabled, None, None, None
    else:
        raise TypeError(f"benchy: expected True/False or an argparse.Namespace, got {type(enabled).__name__}")
    if not on:
        return None
    return resolve_config(benchy_config if benchy_config is not None else config, run_name=name, count=count)


def data_loader(enabled: Switch, *args: Any, benchy_config: ConfigLike = None, **kwargs: Any) -> DataLoader:
    """``BenchmarkDataLoader(*args, **kwargs)`` when benchy is enabled, else a plain ``DataLoader``.

    ``enabled`` is a bool or the parsed ``argparse.Namespace`` (its ``enable_benchy`` and
    ``benchy_config``). An explicit ``benchy_config`` wins over the namespace's path.
    """
    chosen = _chosen(enabled, benchy_config)
    if chosen is None:
        return DataLoader(*args, **kwargs)
    return BenchmarkDataLoader(*args, benchy_config=chosen, **kwargs)


def wrap(
    enabled: Switch, iterable: Iterable[Any], batch_size: Optional[int] = None, *, benchy_config: ConfigLike = None
) -> Iterable[Any]:
    """``BenchmarkGenericIteratorWrapper(iterable, batch_size)`` when enabled, else ``iterable``."""
    chosen = _chosen(enabled, benchy_config)
    if chosen is None:
        return iterable
    return BenchmarkGenericIteratorWrapper(iterable, batch_size, benchy_config=chosen)
