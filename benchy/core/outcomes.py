"""What became of a run's trials, as one value, and why, in words (pure, no torch).

A session holds one :class:`Outcomes` and replaces it at each event (a trial counted, a trial lost,
an iterator that was a peek, a signal); nothing else keeps flags about trial outcomes. The sink
reads it for the summary and the JSON.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Optional, Sequence, Tuple

from .record import Index, Record
from .schedule import Extra, TrialSpec
from .words import Worded


class Why(Worded):
    """Why a trial did not count, a side did not run, or the FLOPs were not counted, in words that
    :meth:`Reason.words` fills in with the reason's figures."""

    # a scheduled trial that did not count
    LOADER_RAISED = "loader-raised", "the data loader raised {error}"
    RANKS = "ranks", "the ranks could not exchange its results"
    SIGNAL = "signal", "interrupted by {detail} after {steps} of {of} steps{first}"  # first: the rank that failed first
    SCRIPT_RAISED = "script-raised", "the script ended with {error}"  # an uncaught exception
    SCRIPT_ENDED = "script-ended", "the script ended before the trial's window was complete"
    NOT_RUN_RAISED = "not-run-raised", "not run: trial {label} raised"
    NOT_RUN_SCRIPT_RAISED = "not-run-script-raised", "not run: the script ended with {error}"
    NOT_RUN_STOPPED = "not-run-stopped", "not run: the script stopped after {epochs} epoch(s), {steps} step(s)"
    # a side that did not run, or stopped
    OFF = "off", "{detail}: false"  # the config turns it off (detail: the key)
    SHARED_ITERATOR = (  # detail: how the loader shares it
        "shared-iterator",
        "the loader hands out one iterator that the loop reads too ({detail}): benchy's own passes would take the loop's batches",
    )
    NOT_A_DATALOADER = (
        "not-a-dataloader",
        "only a DataLoader can be timed stage by stage (a BenchmarkDataLoader, or the loader benchy run chose); "
        "this is a {detail}",
    )
    INSTRUMENTED_RAISED = "instrumented-raised", "the instrumented loader raised {kind}{where}: {message}"
    TRIAL_RAISED = "trial-raised", "{label} raised {error}"
    EXTRA_RAISED = "extra-raised", "{extra}: raised {error}"
    NO_MODEL = "no-model", "no counted IO and SYNTHETIC trials to build the model from"
    NO_ACCELERATOR = "no-accelerator", "no accelerator in use (the run computes on the CPU)"
    NO_WORKERS = (  # CONTENTION_1 without loader workers, and no copy of the loader to give it some
        "no-workers",
        "{label}: no loader workers (the loading runs on the training thread, in FULL only), and no copy of the "
        "loader to give some (not a DataLoader)",
    )
    WINDOW_LOST = "window-lost", "{label}: {cause}"  # the side window ended early
    PASS_ENDED = "pass-ended", "the loader's pass ended"  # CONTENTION_1's loader, before the window
    DRAINER_RAISED = "drainer-raised", "the loader raised {error}"  # CONTENTION_1's loader
    NO_LOADER = (
        "no-loader",
        "{label}: the loader gave no batch beside the step{because}; the step alone is not a contention figure",
    )
    SCRIPT_ENDED_EARLY = "script-ended-early", "the script ended before it was complete"
    BENCHMARK_ENDED = "benchmark-ended", "the benchmark ended before it was complete"
    # the FLOPs not counted
    LEFT_STEP = (
        "left-step",
        "the loop left the counted step before asking for the next batch (a peek such "
        "as next(iter(loader)), or a break, during the step whose FLOPs were counted)",
    )
    FLOPS_FAILED = "flops-failed", "torch's FlopCounterMode could not start ({error})"
    FLOPS_RANKS = (
        "flops-ranks",
        "not counted with {steps} ranks: a rank whose counted step ran a collective "
        "(a DDP all-reduce) under torch's FlopCounterMode aborted at exit in about 1 "
        "run of 15 on the CPU (gloo); run one process to count the step's FLOPs",
    )
    NO_SYNTHETIC = "no-synthetic", "SYNTHETIC did not run: the FLOPs are counted on one untimed step on the cached batch"
    NO_ROOM = (
        "no-room",
        "not counted: the count takes one untimed step of the loop on the cached batch after the "
        "verdict, and the loop's known length left no room for it",
    )
    ENDED_BEFORE = (
        "ended-before",
        "not counted: the count takes one untimed step of the loop on the cached batch after the "
        "verdict, and the script ended before it",
    )


@dataclasses.dataclass(frozen=True)
class Reason:
    """Why, as a code and its figures (see :class:`Why`)."""

    why: Why
    label: str = ""  # the trial it concerns
    error: str = ""  # an exception as ``Type: message``
    detail: str = ""  # a config key, a loader's kind, a signal's name
    steps: int = 0
    of: int = 0
    epochs: int = 0
    failed: Optional[FailedRank] = None
    extra: Optional[Extra] = None
    cause: Optional[Reason] = None

    def words(self) -> str:
        """Why a trial did not count, a side did not run or stopped, or the FLOPs were not counted: its code's
        words, filled in with its fields and the few made of them (an error's kind and message, the cause's words)."""
        kind, _, message = self.error.partition(": ")
        cause = "" if self.cause is None else self.cause.words()
        return self.why.words.format_map(
            {
                **vars(self),
                "first": "" if self.failed is None else f"; {self.failed.words()}",
                "kind": kind,
                "message": message,
                "where": f" in {self.label}" if self.label else "",
                "extra": "" if self.extra is None else self.extra.value,
                "cause": cause,
                "because": f" ({cause})" if cause else "",
            }
        )


def raised(err: BaseException) -> str:
    """``ValueError: boom``: an exception as a reason carries it, on one line. A message of several lines (a loader
    worker's error carries the worker's traceback) keeps its first line and its last, the error as raised there:
    ``RuntimeError: Caught RuntimeError in DataLoader worker process 0. ... RuntimeError: boom``."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    said = " ... ".join(lines[:1] + lines[1:][-1:])
    return f"{type(err).__name__}: {said}"


@dataclasses.dataclass(frozen=True)
class Interruption:
    """A trial that did not finish: which one, after how many batches, and why."""

    spec: TrialSpec
    batches_done: int
    reason: Reason

    @property
    def error(self) -> bool:
        """The loader raised, or the script ended with an uncaught exception."""
        return self.reason.why in (Why.LOADER_RAISED, Why.SCRIPT_RAISED)


class FailedRank(Record, frozen=True):
    """A rank whose training failed, as it said before it ended (the job's rendezvous store)."""

    what: ClassVar[str] = "a rank that failed"
    plural: ClassVar[str] = "ranks that failed"
    rank: Index
    reason: str

    def words(self, then: Sequence[FailedRank] = ()) -> str:
        """``rank 1 failed first (ValueError: boom)``; ``then``: the ranks that failed after it (three are named)."""
        text = f"rank {self.rank} failed first ({self.reason})"
        if then:
            text += "; then " + ", ".join(f"rank {f.rank} ({f.reason})" for f in then[:3])
        return text


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
