"""The underlying loader as an endless supply of batches across passes and trials.

One iterator of the wrapped loader lives for the whole benchmark: trials continue where
the previous one stopped, and a trial that needs more batches than a pass holds starts a
new pass inside the trial. A batch fetched to close a trial's clock is kept and handed
out first by the next trial.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterator, List, Optional, Protocol, Tuple

from ..core.errors import BenchyError

NO_BATCH: Any = object()  # no batch pending


class EmptyLoaderError(BenchyError, RuntimeError):
    """The wrapped loader produced no batch on a fresh pass."""


EmptyLoaderError.__module__ = "benchy"


class Source(Protocol):
    """What a trial loop takes batches from (:class:`BatchSource`, :class:`CopyingSource`)."""

    def fetch(self) -> Any: ...

    def next_function(self) -> Callable[[], Any]: ...

    def new_pass(self) -> Tuple[Callable[[], Any], Any]: ...

    def keep(self, batch: Any) -> None: ...

    def pass_length(self, batches: int) -> None: ...


class BatchSource:
    """Batches from ``make_iterator()``, restarting it when a pass ends."""

    def __init__(self, make_iterator: Callable[[], Iterator[Any]], clock: Callable[[], float] = time.perf_counter) -> None:
        self._make_iterator = make_iterator
        self._iterator: Any = None
        self.pending: Any = NO_BATCH  # the batch held for the next fetch()
        self._clock = clock
        self._started: Optional[float] = None  # iter() of a pass whose first batch has not come yet
        self.passes = 0
        self.startups: List[float] = []  # each pass's time from iter() to its first batch
        self.pass_starts: List[float] = []  # each pass's iter(), on the clock (as ``startups``, once it delivered)
        self.lengths: List[int] = []  # the batches of each pass a trial ran from its first batch to its end

    def next_function(self) -> Callable[[], Any]:
        """The bound ``__next__`` of the current pass (started if needed), for hot loops."""
        if self._iterator is None:
            self._started = self._clock()
            self._iterator = iter(self._make_iterator())
            self.passes += 1
        return self._iterator.__next__

    def new_pass(self) -> Tuple[Callable[[], Any], Any]:
        """Start a new pass and return (its ``__next__``, its first batch)."""
        self._iterator = None
        step = self.next_function()
        try:
            first = step()
            self._first_came()
            return step, first
        except StopIteration:
            raise EmptyLoaderError(
                "benchy: the wrapped loader yielded no batch on a fresh pass (iter() gave an "
                "exhausted iterator); expected a re-iterable loader with at least one batch. "
                "An iterator that needs reset() between passes (e.g. DALI) should be built "
                "with auto_reset=True."
            ) from None

    def fetch(self) -> Any:
        """The pending batch if any, else the next one (starting a new pass if needed)."""
        if self.pending is not NO_BATCH:
            batch, self.pending = self.pending, NO_BATCH
            return batch
        step = self.next_function()
        try:
            batch = step()
        except StopIteration:
            return self.new_pass()[1]
        self._first_came()
        return batch

    def _first_came(self) -> None:
        """A batch came: the first of a pass started by :meth:`next_function` ends the pass's start-up."""
        if self._started is not None:
            self.startups.append(self._clock() - self._started)
            self.pass_starts.append(self._started)
            self._started = None

    def keep(self, batch: Any) -> None:
        """Hold ``batch`` for the next :meth:`fetch`."""
        self.pending = batch

    def pass_length(self, batches: int) -> None:
        """A trial saw a whole pass of ``batches`` batches (a loader without ``len()`` shows its length so)."""
        self.lengths.append(batches)

    def worker_pids(self) -> List[int]:
        """The pids of the current pass's loader workers, in worker-id order (empty without workers,
        or for a loader that does not say: a DataLoader iterator keeps them in ``_workers``)."""
        found = getattr(self._iterator, "_workers", None)
        if not isinstance(found, list):
            return []
        return [int(w.pid) for w in found if getattr(w, "pid", None) is not None and w.is_alive()]

    def close(self) -> None:
        """Drop the iterator and any pending batch; a DataLoader iterator's workers are shut down
        and joined now (not whenever the iterator is collected), unless they are persistent: a
        ``persistent_workers=True`` loader keeps its one iterator and its workers for the user's
        later epochs (its next ``iter()`` resets them for a fresh pass)."""
        shutdown = getattr(self._iterator, "_shutdown_workers", None)
        if callable(shutdown) and not getattr(self._iterator, "_persistent_workers", False):
            shutdown()
        self._iterator = None
        self.pending = NO_BATCH
        self._started = None


class CopyingSource:
    """A :class:`BatchSource` seen through a copy function (the IO_H2D trial): every batch it
    hands out is ``copy(batch)``. Nothing is kept for the next trial (a device batch is not
    what the next trial should start from)."""

    def __init__(self, source: BatchSource, copy: Callable[[Any], Any]) -> None:
        self._source, self._copy = source, copy

    def fetch(self) -> Any:
        return self._copy(self._source.fetch())

    def next_function(self) -> Callable[[], Any]:
        step, copy = self._source.next_function(), self._copy
        return lambda: copy(step())

    def new_pass(self) -> Tuple[Callable[[], Any], Any]:
        step, first = self._source.new_pass()
        copy = self._copy
        return (lambda: copy(step())), copy(first)

    def keep(self, batch: Any) -> None: ...

    def pass_length(self, batches: int) -> None:
        self._source.pass_length(batches)
