"""One-line integration with a script's command line: the flag and the loader switch."""

from __future__ import annotations

import argparse
from typing import Any, Iterable, Optional, Tuple, Union

from torch.utils.data import DataLoader

from ..core.config import ConfigLike
from ..results.configfile import resolve_config
from .wrappers import BenchmarkDataLoader, BenchmarkGenericIteratorWrapper

__all__ = ["add_arguments", "data_loader", "wrap"]

Switch = Union[bool, argparse.Namespace]


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``--enable_benchy``, ``--benchy_config PATH``, ``--benchy_name NAME`` and
    ``--benchy_count {samples,tokens}`` to ``parser`` (returned for chaining).

    Options the parser already has are left alone, so a script that defines its own
    ``--enable_benchy`` keeps it.
    """
    existing = set(parser._option_string_actions)  # argparse has no public look-up
    group = parser.add_argument_group("benchy")
    if "--enable_benchy" not in existing:
        group.add_argument(
            "--enable_benchy",
            "--enable-benchy",
            dest="enable_benchy",
            action="store_true",
            help="run benchy's IO / SYNTHETIC / FULL trials at the first epoch boundaries",
        )
    if "--benchy_config" not in existing:
        group.add_argument(
            "--benchy_config",
            "--benchy-config",
            dest="benchy_config",
            metavar="PATH",
            default=None,
            help="benchy YAML config (default: $BENCHY_CONFIG_FILE, else built-in defaults)",
        )
    if "--benchy_name" not in existing:
        group.add_argument(
            "--benchy_name",
            "--benchy-name",
            dest="benchy_name",
            metavar="NAME",
            default=None,
            help="the run's name in benchy's JSON, for compare and report (default: $BENCHY_RUN_NAME, "
            "the config's run_name, else the script's name and start time)",
        )
    if "--benchy_count" not in existing:
        group.add_argument(
            "--benchy_count",
            "--benchy-count",
            dest="benchy_count",
            choices=("samples", "tokens"),
            default=None,
            help="tokens: also count tokens per second and the padding share of sequence batches "
            "(default: the config's count, else samples)",
        )
    return parser


def _switch(enabled: Switch) -> Tuple[bool, ConfigLike, Optional[str], Optional[str]]:
    """On or off, the config path, the run name and the count the switch carries."""
    if isinstance(enabled, argparse.Namespace):
        if not hasattr(enabled, "enable_benchy"):
            raise ValueError(
                "benchy: the argparse namespace has no 'enable_benchy'; call benchy.add_arguments(parser) "
                "before parse_args(), or pass True/False"
            )
        name = getattr(enabled, "benchy_name", None)
        return (
            bool(enabled.enable_benchy),
            getattr(enabled, "benchy_config", None),
            name,
            getattr(enabled, "benchy_count", None),
        )
    if isinstance(enabled, bool):
        return enabled, None, None, None
    raise TypeError(f"benchy: expected True/False or an argparse.Namespace, got {type(enabled).__name__}")


def data_loader(enabled: Switch, *args: Any, benchy_config: ConfigLike = None, **kwargs: Any) -> DataLoader:
    """``BenchmarkDataLoader(*args, **kwargs)`` when benchy is enabled, else a plain ``DataLoader``.

    ``enabled`` is a bool or the parsed ``argparse.Namespace`` (its ``enable_benchy`` and
    ``benchy_config``). An explicit ``benchy_config`` wins over the namespace's path.
    """
    on, config, name, count = _switch(enabled)
    if not on:
        return DataLoader(*args, **kwargs)
    chosen = resolve_config(benchy_config if benchy_config is not None else config, run_name=name, count=count)
    return BenchmarkDataLoader(*args, benchy_config=chosen, **kwargs)


def wrap(
    enabled: Switch, iterable: Iterable[Any], batch_size: Optional[int] = None, *, benchy_config: ConfigLike = None
) -> Iterable[Any]:
    """``BenchmarkGenericIteratorWrapper(iterable, batch_size)`` when enabled, else ``iterable``."""
    on, config, name, count = _switch(enabled)
    if not on:
        return iterable
    chosen = resolve_config(benchy_config if benchy_config is not None else config, run_name=name, count=count)
    return BenchmarkGenericIteratorWrapper(iterable, batch_size, benchy_config=chosen)
