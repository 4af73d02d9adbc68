"""The two diagnostic windows after the verdict, as values (pure, no torch).

``PARTS_1`` splits the step into forward, backward, optimizer step and the rest of the loop
(:class:`StepParts`); ``CONTENTION_1`` times the step while the loader's workers run beside it
(:class:`ContentionRun`). Neither is counted in a mode; both feed the what-if model
(:mod:`benchy.core.whatif`): a faster accelerator shortens the forward, backward and optimizer
step but not the rest of the loop, and the loader's work slows the step by what CONTENTION shows.
"""

from __future__ import annotations

from typing import Optional

import msgspec

from .record import Count, Number, Record, Seconds


class StepParts(Record, frozen=True, kw_only=True):
    """The step of ``PARTS_1``: its mean period and the seconds a step of each part (each part's share of
    the time the hooks were on, times the period), and the rest of the loop."""

    label: str
    period: Number = msgspec.field(name="period_seconds")
    forward: Number = msgspec.field(name="forward_seconds")
    backward: Number = msgspec.field(name="backward_seconds")
    optimizer: Number = msgspec.field(name="optimizer_seconds")
    rest: Number = msgspec.field(name="rest_seconds")  # the loop's data moves, loss bookkeeping, logging, Python
    forwards: Count  # outermost forward calls while the hooks were on
    backwards: Count
    optimizer_steps: Count
    steps: Count  # the window's measured steps

    @classmethod
    def from_times(
        cls,
        label: str,
        period: float,
        steps: int,
        handed: int,
        forward: float,
        backward: float,
        optimizer: float,
        counts: tuple[int, int, int],
    ) -> StepParts:
        """From the hooks' totals over the ``handed`` steps of the loop they saw (the window's batches, its untimed
        first one too) and the window's ``period``. A step's share, not the hooks' share of the time they were on:
        that time also holds what the loop did between the steps (the batches the window stands in for, fetched
        from a slow loader), which is in no period."""
        each = (lambda x: x / handed) if handed > 0 else (lambda x: 0.0)
        f, b, o = each(forward), each(backward), each(optimizer)
        return cls(
            label=label,
            period=period,
            forward=f,
            backward=b,
            optimizer=o,
            rest=max(0.0, period - (f + b + o)),
            forwards=counts[0],
            backwards=counts[1],
            optimizer_steps=counts[2],
            steps=steps,
        )

    @property
    def compute(self) -> float:
        """Forward, backward and optimizer step: what a faster accelerator shortens."""
        return self.forward + self.backward + self.optimizer

    @property
    def found(self) -> bool:
        """The hooks saw a forward or a backward (else the step is not a module's: nothing to split)."""
        return self.forwards > 0 or self.backwards > 0


class ContentionRun(Record, frozen=True):
    """``CONTENTION_1``: the step's median period beside the loader, and the loader's pace meanwhile (its batches a
    second follow); why the loader stopped before the window ended, in words; the step's ``slowdown`` over
    ``synthetic_period`` (SYNTHETIC's, where known) follows."""

    label: str
    period: Number = msgspec.field(name="period_seconds")
    steps: Count
    loader_batches: Count
    loader_seconds: Seconds
    loader_rate: Number = msgspec.field(default=0.0, name="loader_batches_per_second")
    # the loader's workers beside the step (the run's own; where it has none, the model's other setting)
    workers: Count = msgspec.field(default=0, name="loader_workers")
    ended: Optional[str] = None
    synthetic_period: Optional[Number] = msgspec.field(default=None, name="synthetic_period_seconds")
    slowdown: Optional[Number] = None

    def __post_init__(self) -> None:
        rate = self.loader_batches / self.loader_seconds if self.loader_seconds > 0 else 0.0
        msgspec.structs.force_setattr(self, "loader_rate", rate)
        msgspec.structs.force_setattr(self, "slowdown", self.slower(self.synthetic_period))

    def slower(self, alone: Optional[float]) -> Optional[float]:
        """The step's period beside the loader over ``alone`` (SYNTHETIC's), less one."""
        return None if alone is None or alone <= 0 or self.period <= 0 else self.period / alone - 1.0
