"""What became of a run's trials, as one value (pure, no torch).

A session holds one :class:`Outcomes` and replaces it at each event (a trial counted, a trial lost,
an iterator that was a peek, a signal); nothing else keeps flags about trial outcomes. The sink
reads it for the summary and the JSON.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Tuple

from .schedule import TrialSpec

__all__ = ["FailedRank", "Interruption", "Outcomes"]


@dataclasses.dataclass(frozen=True)
class Interruption:
    """A trial that did not finish: which one, after how many batches, and why."""

    spec: TrialSpec
    batches_done: int
    reason: str
    error: bool = False  # the loader raised, or the script ended with an uncaught exception


@dataclasses.dataclass(frozen=True)
class FailedRank:
    """A rank whose training failed, as it said before it ended (the job's rendezvous store)."""

    rank: int
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {"rank": self.rank, "reason": self.reason}


@dataclasses.dataclass(frozen=True)
class Outcomes:
    """The run's trial outcomes so far.

    ``counted``: trials that counted (warm-ups included); ``lost``: scheduled trials that did not
    count, each with its reason (the JSON's ``interrupted``); ``peeks``: the loop's epochs that ended
    after at most one batch (``next(iter(loader))``, e.g. for a batch's shape): their window goes on
    in the next epoch; ``sides``: ``iter()`` calls served by the plain loader while the loop's epoch
    ran (a peek inside the loop); ``signal``: the signal that ended the benchmark; ``failed_ranks``:
    the ranks whose training failed, as they said (under torch.distributed)."""

    counted: int = 0
    lost: Tuple[Interruption, ...] = ()
    peeks: int = 0
    sides: int = 0
    signal: Optional[str] = None
    failed_ranks: Tuple[FailedRank, ...] = ()

    def count(self) -> Outcomes:
        return dataclasses.replace(self, counted=self.counted + 1)

    def lose(self, item: Interruption) -> Outcomes:
        return dataclasses.replace(self, lost=self.lost + (item,))

    def peek(self) -> Outcomes:
        return dataclasses.replace(self, peeks=self.peeks + 1)

    def side(self) -> Outcomes:
        return dataclasses.replace(self, sides=self.sides + 1)

    def signalled(self, name: str) -> Outcomes:
        return dataclasses.replace(self, signal=name)

    def with_failed(self, failed: Tuple[FailedRank, ...]) -> Outcomes:
        known = {f.rank for f in self.failed_ranks}
        return dataclasses.replace(self, failed_ranks=self.failed_ranks + tuple(f for f in failed if f.rank not in known))

    def lost_labels(self) -> Tuple[str, ...]:
        return tuple(i.spec.label for i in self.lost)
