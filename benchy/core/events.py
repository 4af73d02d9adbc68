"""What a session says happened, as values that say themselves (pure, no torch): the sink prints each one's
:meth:`words`, an information or a warning line.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Protocol, Tuple

from .outcomes import FailedRank, Interruption, Reason
from .schedule import TrialSpec
from .sweep import Setting
from .words import Said


@dataclasses.dataclass(frozen=True)
class LoaderPlain:
    """A wrapper first iterated while another runs the benchmark: it is the plain loader."""

    kind: str
    where: str
    running: Optional[str]  # "<kind> created at <where>" of the one running it (None: unknown)
    same_site: bool

    def words(self) -> Said:
        if self.same_site:
            return Said(
                True,
                f"a new {self.kind} was built at {self.where}, where the one running the benchmark "
                f"was built: a loader re-created every epoch never finishes the schedule (each epoch "
                f"gets a new wrapper, which is the plain loader). Build it once, before the epoch loop.",
            )
        return Said(
            False,
            f"{self.kind} created at {self.where} is the plain loader: a process runs one benchmark "
            f"at a time, and the {self.running or 'another loader'} is running it (the first loader "
            f"iterated).",
        )


@dataclasses.dataclass(frozen=True)
class SideServed:
    """An ``iter()`` while the loop's epoch ran (a peek inside the loop): served by the plain loader."""

    label: Optional[str]

    def words(self) -> Said:
        during = f"during trial {self.label}" if self.label else "while the loop's epoch ran"
        return Said(
            False,
            f"an iter() {during} was served by the plain loader (a peek such as next(iter(loader)) inside "
            f"the loop); the loop's epoch and its trial go on, and the peek's time counts in the step it "
            f"ran in (said once).",
        )


@dataclasses.dataclass(frozen=True)
class LookaheadFound:
    def words(self) -> Said:
        return Said(
            False,
            "the loop asks for batch k + 1 before it runs step k (it fetches one batch ahead, as CUDA "
            "prefetchers such as timm's PrefetchLoader and Accelerate's prepared loaders do): at each "
            "epoch's start its first period holds no step (the windows leave that period out).",
        )


@dataclasses.dataclass(frozen=True)
class TrialLost:
    """A scheduled trial that did not count (the loader raised, a signal, the script ended)."""

    item: Interruption

    def words(self) -> Said:
        item = self.item
        return Said(
            True,
            f"trial {item.spec.label} did not count ({item.batches_done} of {item.spec.nbatches} steps "
            f"measured): {item.reason.words()}.",
        )


@dataclasses.dataclass(frozen=True)
class Signalled:
    """A signal ended the benchmark; ``running``: the trial it came in (None: between trials)."""

    name: str
    running: Optional[TrialSpec]
    measured: int
    failed: Tuple[FailedRank, ...]

    def words(self) -> Said:
        who = self.failed[0].words(self.failed[1:]) if self.failed else ""
        who = f" {who[0].upper()}{who[1:]}; the launcher stopped the others." if who else ""
        if self.running is None:
            return Said(True, f"{self.name} received between trials.{who} The results measured so far follow.")
        return Said(
            True,
            f"{self.name} received during trial {self.running.label} ({self.measured} of "
            f"{self.running.nbatches} steps measured): it is not counted.{who} The results measured "
            f"so far follow.",
        )


@dataclasses.dataclass(frozen=True)
class RankFailed:
    """A rank whose training failed, named by the others (a collective they could not finish; one or more)."""

    failed: Tuple[FailedRank, ...]

    def words(self) -> Said:
        first, *then = self.failed
        return Said(True, f"{first.words(then)}: that is why the ranks could not exchange the trial's results.")


@dataclasses.dataclass(frozen=True)
class NoExitHere:
    """``exit_after_tests`` is on, but this process is not the script's own to end (a Ray Train worker, say)."""

    host: str

    def words(self) -> Said:
        return Said(
            False,
            f"exit_after_tests: benchy does not end this process, a {self.host} ({self.host.split()[0]} "
            f"would report the training as failed); the training goes on with the plain loader.",
        )


@dataclasses.dataclass(frozen=True)
class CounterNote:
    text: str

    def words(self) -> Said:
        return Said(True, self.text)


@dataclasses.dataclass(frozen=True)
class TokensNotCounted:
    error: str

    def words(self) -> Said:
        return Said(True, f"{self.error}; tokens are not counted, samples are")


@dataclasses.dataclass(frozen=True)
class SweepUnavailable:
    def words(self) -> Said:
        return Said(True, "sweep: only a BenchmarkDataLoader knows the settings to vary; this loader is not swept.")


@dataclasses.dataclass(frozen=True)
class SweepStarted:
    settings: int
    warmups: int
    trials: int
    nbatches: int
    own: Setting  # the loader's own

    def words(self) -> Said:
        return Said(
            False,
            f"Loader sweep: {self.settings} setting(s), each {self.warmups} warm-up + {self.trials} IO "
            f"trials of {self.nbatches} batches, before the schedule (the loader's own: {self.own.words()}).",
        )


@dataclasses.dataclass(frozen=True)
class SweepFailed:
    setting: Setting
    error: str

    def words(self) -> Said:
        return Said(True, f"sweep: setting {self.setting.words()} failed ({self.error}); skipped.")


@dataclasses.dataclass(frozen=True)
class SweepStray:
    setting: Setting
    processes: int

    def words(self) -> Said:
        return Said(True, f"sweep: {self.processes} process(es) of setting {self.setting.words()} outlived it and were stopped.")


@dataclasses.dataclass(frozen=True)
class SweepOverCap:
    settings: Tuple[Setting, ...]
    cap_bytes: int

    def words(self) -> Said:
        return Said(
            True,
            f"sweep: the workers of {', '.join(s.words() for s in self.settings)} took more memory than the cap of "
            f"{self.cap_bytes / 1e9:.2f} GB (the memory available at the sweep's start less room for the "
            f"training process); not recommended.",
        )


@dataclasses.dataclass(frozen=True)
class SweepApplied:
    """The schedule goes on with ``setting`` (``applied``: sweep_apply chose it) or the loader's own."""

    setting: Setting
    applied: bool
    apply_on: bool

    def words(self) -> Said:
        if self.applied:
            return Said(
                False,
                f"sweep_apply: the schedule continues with {self.setting.words()} (the smallest setting within 5 % of the best).",
            )
        return Said(
            False,
            f"The schedule continues with the loader's own settings ({self.setting.words()})"
            + ("." if self.apply_on else "; sweep_apply: true would use the recommended ones."),
        )


@dataclasses.dataclass(frozen=True)
class H2DSkipped:
    reason: Reason
    stopped: bool = False

    def words(self) -> Said:
        if self.stopped:
            return Said(True, f"IO_H2D: stopped: {self.reason.words()}.")
        return Said(False, f"IO_H2D: skipped: {self.reason.words()}.")


@dataclasses.dataclass(frozen=True)
class EmulatedStarted:
    speedup: float
    seconds: float
    cpu: float
    warmups: int
    trials: int
    nbatches: int

    def words(self) -> Said:
        return Said(
            False,
            f"Emulated-step trials (what-if check): {self.warmups} warm-up + {self.trials} trials of "
            f"{self.nbatches} batches from the real loader, the step replaced by {1e3 * self.seconds:.3f} ms "
            f"a batch ({1e3 * self.cpu:.3f} ms of it CPU work): a step {self.speedup:.3g}x faster; not counted.",
        )


@dataclasses.dataclass(frozen=True)
class EmulatedSkipped:
    reason: Reason

    def words(self) -> Said:
        return Said(True, f"emulated-step trials: stopped: {self.reason.words()}.")


@dataclasses.dataclass(frozen=True)
class StagesStarted:
    warmups: int
    trials: int
    nbatches: int
    workers: int
    split: str
    other: bool = False  # the trials at the what-if model's other setting (no workers, or one)

    def words(self) -> Said:
        if not self.other:
            return Said(
                False,
                f"Stage trials: {self.warmups} warm-up + {self.trials} IO trials of {self.nbatches} batches "
                f"on an instrumented copy of the loader ({self.workers} workers; transforms: {self.split}); "
                f"not counted in IO.",
            )
        why = (
            "what a worker's batch and its receive cost, which a loader without workers does not show"
            if self.workers
            else "the loading on the training thread alone, which workers beside each other do not show"
        )
        return Said(
            False,
            f"Stage trials at another setting (for the what-if model): {self.warmups} warm-up + {self.trials} IO "
            f"trial of {self.nbatches} batches on an instrumented copy with {self.workers} "
            f"worker{'' if self.workers == 1 else 's'} ({why}); not counted in IO.",
        )


@dataclasses.dataclass(frozen=True)
class StagesStopped:
    reason: Reason
    other: bool = False  # the trials at the what-if model's other setting: only that figure is lost

    def words(self) -> Said:
        if not self.other:
            return Said(True, f"stage trials: stopped: {self.reason.words()}.")
        return Said(
            True,
            f"stage trials at another setting: stopped: {self.reason.words()}; the what-if model takes this "
            f"run's own loader costs for the changes across no workers.",
        )


@dataclasses.dataclass(frozen=True)
class SideFailed:
    reason: Reason

    def words(self) -> Said:
        return Said(True, f"{self.reason.words()}; only it is lost.")


@dataclasses.dataclass(frozen=True)
class IoNotRun:
    """The scheduled IO trials cannot run without taking the loop's batches: none runs."""

    reason: Reason

    def words(self) -> Said:
        return Said(
            True,
            f"IO trials: not run: {self.reason.words()}. Without them no verdict is given; FULL against SYNTHETIC and "
            "the DATA_WAIT line still say how long the loop waits for its data.",
        )


@dataclasses.dataclass(frozen=True)
class CaptureRange:
    events: Tuple[str, ...]

    def words(self) -> Said:
        return Said(
            False, "Profiler (the cudaProfilerStart/Stop capture range for Nsight Systems): " + "; ".join(self.events) + "."
        )


@dataclasses.dataclass(frozen=True)
class TraceWritten:
    """torch.profiler wrote (or could not write) a profiled warm-up's trace; ``others``: where every rank writes."""

    rank: int
    event: str
    others: Optional[str]

    def words(self) -> Said:
        others = f" Every rank writes its own (rank<r>.<trial>.pt.trace.json in {self.others})." if self.others else ""
        return Said(
            False,
            f"torch.profiler (rank {self.rank}): {self.event}; an extra warm-up, not counted. Open it in "
            f"https://ui.perfetto.dev, chrome://tracing or TensorBoard's profiler plugin.{others}",
        )


class Event(Protocol):
    """What a session says happened: a value that says itself (these, and the machine's notes)."""

    def words(self) -> Said: ...
