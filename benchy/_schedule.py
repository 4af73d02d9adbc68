"""Which trial runs when (pure, no torch).

IO warm-ups and trials run first, hidden inside the first ``iter()``; after that each
epoch is one trial: SYNTHETIC warm-ups and trials, then FULL warm-ups and trials.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Tuple

from ._config import Config

__all__ = ["Mode", "Schedule", "TrialSpec"]


class Mode(str, enum.Enum):
    """A trial kind; the value is the name printed in output lines and JSON keys."""

    IO = "IO"
    SYNTHETIC = "SYNTHETIC"
    FULL = "FULL"


@dataclass(frozen=True)
class TrialSpec:
    """One planned trial. ``index`` counts from 1 within (mode, warm-up or not)."""

    mode: Mode
    index: int
    warmup: bool
    nbatches: int

    @property
    def label(self) -> str:
        """``FULL_2`` or ``FULL_WARMUP_1``: the tag used in the output lines."""
        middle = "_WARMUP_" if self.warmup else "_"
        return f"{self.mode.value}{middle}{self.index}"


def _trials(mode: Mode, config: Config) -> Tuple[TrialSpec, ...]:
    section = config.mode(mode.value)
    if not section.run_benchmark:
        return ()
    warm = [TrialSpec(mode, k, True, section.nbatches) for k in range(1, section.nwarmup + 1)]
    real = [TrialSpec(mode, k, False, section.nbatches) for k in range(1, section.ntrials + 1)]
    return tuple(warm + real)


@dataclass(frozen=True)
class Schedule:
    """The full plan: hidden IO trials, then one trial per epoch."""

    hidden: Tuple[TrialSpec, ...]
    per_epoch: Tuple[TrialSpec, ...]

    @classmethod
    def from_config(cls, config: Config) -> Schedule:
        return cls(
            hidden=_trials(Mode.IO, config),
            per_epoch=_trials(Mode.SYNTHETIC, config) + _trials(Mode.FULL, config),
        )

    @property
    def epochs_needed(self) -> int:
        """Epochs (``iter()`` calls) the script must ask for to finish the schedule.

        The IO trials run inside the first ``iter()``; with only IO enabled that call
        finishes the schedule and its epoch is already a plain one.
        """
        return max(1, len(self.per_epoch))

    @property
    def modes(self) -> Tuple[Mode, ...]:
        """Modes that run, in schedule order."""
        seen = []
        for spec in self.hidden + self.per_epoch:
            if spec.mode not in seen:
                seen.append(spec.mode)
        return tuple(seen)

    def describe(self) -> str:
        """One line for the start-up message, e.g. ``IO 1+3 (hidden), SYNTHETIC 1+3, FULL 1+3``."""
        parts = []
        for mode in self.modes:
            specs = [s for s in self.hidden + self.per_epoch if s.mode is mode]
            warm = sum(1 for s in specs if s.warmup)
            hidden = " before epoch 1" if mode is Mode.IO else ""
            parts.append(f"{mode.value} {warm} warm-up + {len(specs) - warm} x {specs[0].nbatches} batches{hidden}")
        return "; ".join(parts)
