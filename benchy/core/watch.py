"""The watch over the rest of the run (pure, no torch): after the schedule, each epoch of the loop as a few sums
(its steps, its time, its time in ``next()``: bounded memory whatever the run's length), judged against the data
wait the FULL trials measured; an epoch whose share rises past what their interval allows is a *rise*.
The manual: docs/guide/verdict.md, "The whole run"."""

from __future__ import annotations

from typing import ClassVar, Optional, Tuple

from .record import Count, Fraction, Index, Number, Record, Seconds

# A rise is an epoch's data wait above FULL's mean by more than its interval and by at least this share of the
# epoch's time: a steady loop's epochs scatter by a point or two around FULL's mean, which an interval from a few
# trials may not span.
MIN_RISE = 0.05
# Epochs kept in the result file: the first ones and every rise; past it only counted (a run of a million
# epochs stays a few hundred kilobytes).
MAX_EPOCHS = 1000


class Baseline(Record, frozen=True, kw_only=True):
    """What the schedule's FULL trials measured, that each later epoch is held against."""

    data_wait: Fraction  # mean share of a trial's time in next()
    interval: Optional[Fraction] = None  # the half-width of its interval (None: one trial)
    throughput: Optional[Number] = None  # FULL's mean throughput (samples/s)
    read_bytes_per_s: Optional[Number] = None  # storage reads during FULL (the system sampler's mean)
    cpu_cores_busy: Optional[Number] = None

    def bound(self) -> float:
        """The share above which an epoch is a rise."""
        return min(1.0, self.data_wait + max(self.interval or 0.0, MIN_RISE))


class WatchedEpoch(Record, frozen=True, kw_only=True):
    """One epoch after the schedule: its steps after the first (the first batch's wait is the loader's start-up,
    which the STARTUP summary reports), their time and the share of it in ``next()``."""

    what: ClassVar[str] = "a watched epoch"
    plural: ClassVar[str] = "watched epochs"

    epoch: Index  # the loop's epoch, from 1
    steps: Count
    seconds: Seconds
    throughput: Optional[Number] = None  # samples (or batches) per second over the epoch's steps
    data_wait: Fraction
    read_bytes_per_s: Optional[Number] = None  # storage reads over the epoch, when the system could be read
    cpu_cores_busy: Optional[Number] = None
    rise: bool = False

    def words(self, baseline: Optional[Baseline]) -> str:
        """The WATCH line: the epoch, its share against FULL's, and what changed beside it where it can tell."""
        said = f"epoch {self.epoch}: the loop waited for data {100 * self.data_wait:.1f} % of its time"
        if baseline is None:
            return said
        said += f", against {100 * baseline.data_wait:.1f} %" + (
            f" +/- {100 * baseline.interval:.1f}" if baseline.interval is not None else ""
        )
        said += " in the FULL trials"
        if self.throughput is not None and baseline.throughput:
            said += f"; throughput {self.throughput:.1f} against {baseline.throughput:.1f} samples/s"
        changed = []
        if self.read_bytes_per_s is not None and baseline.read_bytes_per_s is not None:
            now, then = self.read_bytes_per_s / 1e6, baseline.read_bytes_per_s / 1e6
            if now > 2 * then + 1:
                changed.append(f"storage reads rose to {now:.1f} MB/s from {then:.1f}")
        if self.cpu_cores_busy is not None and baseline.cpu_cores_busy is not None:
            now, then = self.cpu_cores_busy, baseline.cpu_cores_busy
            if abs(now - then) > max(0.25, 0.2 * then):
                changed.append(f"CPU {now:.2f} cores busy against {then:.2f}")
        return said + ("; " + ", ".join(changed) if changed else "")


def watched(
    epoch: int,
    steps: int,
    seconds: float,
    wait: float,
    samples: Optional[float],
    baseline: Optional[Baseline],
    read_bytes_per_s: Optional[float] = None,
    cpu_cores_busy: Optional[float] = None,
) -> WatchedEpoch:
    """An epoch's figures from its sums (``samples``: None when the batches' size is unknown: batches a second)."""
    share = min(1.0, max(0.0, wait / seconds)) if seconds > 0 else 0.0
    rate = (samples if samples is not None else steps) / seconds if seconds > 0 else None
    rise = baseline is not None and steps > 0 and share > baseline.bound()
    return WatchedEpoch(
        epoch=epoch,
        steps=steps,
        seconds=seconds,
        throughput=rate,
        data_wait=share,
        read_bytes_per_s=read_bytes_per_s,
        cpu_cores_busy=cpu_cores_busy,
        rise=rise,
    )


class Watch(Record, frozen=True, kw_only=True):
    """The watch's result: the baseline, the epochs kept (see :data:`MAX_EPOCHS`), how many were watched."""

    baseline: Optional[Baseline] = None  # None: no FULL trial split its time (nothing to hold the epochs against)
    epochs: Tuple[WatchedEpoch, ...] = ()
    watched: Count = 0  # epochs watched (those kept and those only counted)
    rises: Count = 0  # epochs that rose, kept or not
    first_rise: Optional[Index] = None  # the first epoch that rose

    def add(self, epoch: WatchedEpoch) -> Watch:
        keep = len(self.epochs) < MAX_EPOCHS or (epoch.rise and len(self.epochs) < 2 * MAX_EPOCHS)
        first = self.first_rise if self.first_rise is not None or not epoch.rise else epoch.epoch
        return Watch(
            baseline=self.baseline,
            epochs=(*self.epochs, epoch) if keep else self.epochs,
            watched=self.watched + 1,
            rises=self.rises + epoch.rise,
            first_rise=first,
        )

    def words(self) -> str:
        """The WATCH summary: how many epochs, the range of their shares, and the rise if one was seen."""
        if not self.watched:
            return "no epoch ran to its end after the schedule"
        shares = [e.data_wait for e in self.epochs if e.steps]
        said = f"{self.watched} epoch(s) watched after the schedule"
        if shares:
            said += f": data wait {100 * min(shares):.1f} to {100 * max(shares):.1f} %"
        if self.baseline is None:
            return said + " (no FULL trial split its time: nothing to hold them against)"
        said += f" (FULL {100 * self.baseline.data_wait:.1f} %)"
        if self.first_rise is None:
            return said + f"; no rise past {100 * self.baseline.bound():.1f} %"
        return (
            said + f"; the data wait rose past {100 * self.baseline.bound():.1f} % in {self.rises}, from epoch {self.first_rise}"
        )
