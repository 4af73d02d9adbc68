"""Loader start-up: the time from ``iter(loader)`` to the first batch of each pass (pure).

A DataLoader with workers but without ``persistent_workers`` starts its workers at every
``iter()``: every epoch pays it, and trials that run inside a pass never show it. The cost
that matters is what start-up adds over an ordinary batch, as a share of an epoch of
``len(loader)`` batches at the FULL rate.
"""

from __future__ import annotations

import statistics
from typing import List, Optional, Sequence

import msgspec

from .record import Count, Number, Record, Seconds, UnixTime
from .words import Worded

STARTUP_SHARE = 0.02  # over this share of an epoch, start-up is named in the verdict


class Basis(Worded):
    """Which passes the typical start-up comes from (its words: the JSON's ``loader_startup.basis``)."""

    MEDIAN = "median", "median of {passes} passes"  # the median of every pass
    ONE = "one", "the one pass started"
    AFTER_FIRST = "after-first", "median of the {passes} passes after the first"  # persistent workers
    FIRST_PERSISTENT = "first-persistent", "the first pass, which also started the persistent workers"


class Startup(Record, frozen=True, kw_only=True):
    """Start-up per pass and what it costs an epoch (``extra`` and ``share`` follow from the rest)."""

    seconds: List[Seconds]  # each pass's iter() to its first batch, in the order run
    started: List[UnixTime] = msgspec.field(default_factory=list)  # each pass's iter(), Unix seconds (may be empty)
    typical: Number  # the figure that stands for every epoch's start-up (see :func:`startup`)
    basis: str  # which passes ``typical`` comes from, in words (a :class:`Basis`'s)
    batch_seconds: Optional[Number] = None  # an ordinary batch's fetch time, taken out of ``typical``
    extra: Number = 0.0  # what start-up adds over fetching an ordinary batch
    epoch_batches: Optional[Count] = None  # len(loader)
    epoch_seconds: Optional[Number] = None  # an epoch of len(loader) batches at the FULL rate
    share: Optional[Number] = None  # ``extra`` as a share of an epoch at the FULL rate, when that epoch is known
    workers: Count = 0
    persistent: bool = msgspec.field(default=False, name="persistent_workers")

    def __post_init__(self) -> None:
        extra = max(0.0, self.typical - (self.batch_seconds or 0.0))
        epoch = self.epoch_seconds
        msgspec.structs.force_setattr(self, "extra", extra)
        msgspec.structs.force_setattr(self, "share", extra / (epoch + extra) if epoch and epoch > 0 else None)

    @property
    def costly(self) -> bool:
        """Start-up costs more than :data:`STARTUP_SHARE` of an epoch at the FULL rate."""
        share = self.share
        return share is not None and share > STARTUP_SHARE

    @property
    def restarts_workers(self) -> bool:
        """A costly start-up of workers that restart every epoch: ``persistent_workers=True`` fixes it."""
        return self.costly and bool(self.workers) and not self.persistent


def startup(
    seconds: Sequence[float],
    *,
    workers: int,
    persistent: bool,
    epoch_batches: Optional[int],
    batch_seconds: Optional[float],
    full_batch_seconds: Optional[float],
    started: Sequence[float] = (),
) -> Optional[Startup]:
    """What the passes' start-up says about every epoch; None before any pass started.

    The first pass stands for every epoch unless the workers persist (then it also held their
    one-time start and later passes, if any, stand for the epochs). ``batch_seconds``: an
    ordinary batch's fetch time (IO's median period); ``full_batch_seconds``: FULL's time
    per batch, which with ``epoch_batches`` gives an epoch's time.
    """
    values = [float(s) for s in seconds]
    if not values:
        return None
    later = values[1:]
    if persistent and workers and later:
        typical, basis, passes = statistics.median(later), Basis.AFTER_FIRST, len(later)
    elif persistent and workers:
        typical, basis, passes = values[0], Basis.FIRST_PERSISTENT, 1
    else:
        typical, basis, passes = statistics.median(values), Basis.ONE if len(values) == 1 else Basis.MEDIAN, len(values)
    epoch_seconds = (
        epoch_batches * full_batch_seconds if epoch_batches and full_batch_seconds and full_batch_seconds > 0 else None
    )
    persistent_once = persistent and workers and not later
    return Startup(
        seconds=values,
        started=[float(t) for t in started],
        typical=typical,
        basis=basis.words.format(passes=passes),
        batch_seconds=batch_seconds,
        epoch_batches=epoch_batches,
        epoch_seconds=None if persistent_once else epoch_seconds,
        workers=workers,
        persistent=persistent,
    )
