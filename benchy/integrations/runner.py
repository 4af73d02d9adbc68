"""``benchy run``: benchmark an unmodified script's training loader (zero-edit; which loader is chosen:
docs/guide/zero-edit.md).

:func:`install` replaces ``torch.utils.data.DataLoader`` with :class:`RunnerDataLoader`, a subclass that behaves
as the plain DataLoader until it is chosen, and then as a ``BenchmarkDataLoader``; only one loader per process
is chosen. ``isinstance(x, DataLoader)`` holds for loaders made from the original class too, and scripts' own
subclasses subclass the replacement.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Any, Dict, Iterator, List, Optional, Tuple

import torch.utils.data
import torch.utils.data.dataloader
from torch.utils.data import DataLoader

from ..core.config import AUTO
from ..core.exits import EXIT_INCOMPLETE
from ..measure.profiling import global_rank
from ..results import lines
from ..results.configfile import load_config
from ..session.console import write_line
from ..session.loop import LOOP_BATCHES
from ..session.registry import creation_site
from .runvars import LOADER_ENV_VAR, SWEEP_ENV_VAR, parse_loader

# Imported before install() replaces DataLoader: the wrappers' helpers use the original class.
from .wrappers import dataloader_session

ORIGINAL = DataLoader


class _State:
    def __init__(self) -> None:
        self.mode: Optional[int] = None  # None: first loop; N: the N-th loader created
        self.created = 0
        self.chosen: Optional[RunnerDataLoader] = None
        self.sweep = False
        self.installed = False  # DataLoader replaced (install() is idempotent)
        self.lock = threading.Lock()


STATE = _State()


class _Meta(type(ORIGINAL)):  # type: ignore[misc]
    """``isinstance(x, DataLoader)`` stays true for loaders built from the original class."""

    def __instancecheck__(cls, obj: Any) -> bool:
        if cls is RunnerDataLoader:
            return isinstance(obj, ORIGINAL)
        return type.__instancecheck__(cls, obj)

    def __subclasscheck__(cls, sub: Any) -> bool:
        if cls is RunnerDataLoader:
            return issubclass(sub, ORIGINAL)
        return type.__subclasscheck__(cls, sub)


class RunnerDataLoader(ORIGINAL, metaclass=_Meta):
    """``torch.utils.data.DataLoader`` under ``benchy run``: plain until chosen (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        with STATE.lock:
            STATE.created += 1
            self._runner_index = STATE.created
        self._runner_args: Tuple[Tuple[Any, ...], Dict[str, Any]] = (args, kwargs)
        self._runner_where = creation_site()
        self._runner_wrapper: Any = None  # the benchmark's session once chosen

    # --- the choice -------------------------------------------------------------------------

    def _runner_claims(self, looped: bool = False) -> bool:
        """Whether this loader is the benchmarked one (choosing it now if it is the one wanted)."""
        if STATE.chosen is not None:
            return STATE.chosen is self
        wanted = looped if STATE.mode is None else self._runner_index == STATE.mode
        if wanted:
            with STATE.lock:
                if STATE.chosen is None:
                    STATE.chosen = self
                    self._runner_start()
        return STATE.chosen is self

    def _runner_start(self) -> None:
        config = load_config()
        if STATE.sweep and not config.sweep.enabled:
            config = load_config(overrides={"sweep": {"num_workers": AUTO}})
        args, kwargs = self._runner_args
        why = (
            f"the first whose iterator ran a loop: the loop asked its plain pass for more than {LOOP_BATCHES} "
            f"batches; the benchmark starts there, within that epoch"
            if STATE.mode is None
            else f"--loader {STATE.mode}"
        )
        others = STATE.created - 1
        if global_rank() == 0:  # every rank chooses the same loader; one says so
            write_line(
                lines.info(
                    f"benchy run: benchmarking the DataLoader created at {self._runner_where} ({why}); "
                    f"{others} other DataLoader(s) created so far stay plain."
                )
            )
        self._runner_wrapper = dataloader_session(self, config, args, kwargs, "DataLoader", self._runner_where, ORIGINAL.__iter__)

    # --- DataLoader -------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Any]:  # type: ignore[override]
        session = self.__dict__.get("_runner_wrapper")
        if session is not None:
            return session.iterate()
        if "_runner_index" in self.__dict__ and self._runner_claims():
            return self._runner_wrapper.iterate()
        if "_runner_index" in self.__dict__ and STATE.mode is None and STATE.chosen is None:
            return _first_pass(self, ORIGINAL.__iter__(self))
        return ORIGINAL.__iter__(self)

    @property
    def benchy(self) -> Any:
        """The benchmark session once this loader is chosen, else None."""
        return self.__dict__.get("_runner_wrapper")


def _first_pass(loader: RunnerDataLoader, inner: Iterator[Any]) -> Iterator[Any]:
    """A plain pass before any loader is chosen: past :data:`LOOP_BATCHES` batches, the benchmark starts in it."""
    nxt = inner.__next__
    for _ in range(LOOP_BATCHES):
        try:
            batch = nxt()
        except StopIteration:
            return
        yield batch
    if loader._runner_claims(looped=True):
        yield from loader._runner_wrapper.adopt(inner, LOOP_BATCHES)
        return
    yield from inner


def _none_chosen() -> None:
    """At exit: DataLoaders were made but none was benchmarked: say why that usually happens."""
    if STATE.chosen is not None or STATE.created == 0 or global_rank() != 0:
        return
    rule = (
        f"no DataLoader's plain pass was asked for more than {LOOP_BATCHES} batches (no training loop ran, "
        f"or it ran over a loader that benchy run does not see)"
        if STATE.mode is None
        else f"the script created {STATE.created} DataLoader(s), fewer than --loader {STATE.mode}"
    )
    message = lines.warning(
        f"benchy run: nothing was benchmarked: {rule}. Pick one with --loader N "
        f"(the N-th DataLoader created; {STATE.created} were). benchy run reports status {EXIT_INCOMPLETE}, "
        f"as for an incomplete run, where the script ends with 0."
    )
    write_line(message, sys.stdout, sys.stderr)


def install(loader: Optional[str] = None, sweep: Optional[bool] = None) -> None:
    """Replace ``DataLoader`` for this process (idempotent); the arguments default to the environment's."""
    choice = loader if loader is not None else os.environ.get(LOADER_ENV_VAR, "first")
    STATE.mode = parse_loader(choice)
    STATE.sweep = bool(sweep) if sweep is not None else os.environ.get(SWEEP_ENV_VAR) == "1"
    if STATE.installed:
        return
    RunnerDataLoader.__module__ = "torch.utils.data.dataloader"
    RunnerDataLoader.__qualname__ = RunnerDataLoader.__name__ = "DataLoader"
    torch.utils.data.DataLoader = RunnerDataLoader  # type: ignore[misc]
    torch.utils.data.dataloader.DataLoader = RunnerDataLoader  # type: ignore[misc]
    atexit.register(_none_chosen)
    STATE.installed = True


def run_script(path: str, args: List[str]) -> None:
    """Run ``path`` as ``python path args`` would: ``__main__``, ``sys.argv``, ``sys.path[0]``."""
    import runpy

    if not os.path.isfile(path):
        raise FileNotFoundError(f"benchy run: {path}: no such script")
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    runpy.run_path(path, run_name="__main__")
