"""Why the loader is slow: each stage and each worker of the diagnostic stage trials (pure, no torch).

:func:`analyse` turns the per-batch records of ``measure.stages`` into a :class:`StageReport`: the stages' shares
of the IO period, each worker, the order; the figures are defined in docs/guide/loader-stages.md.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import msgspec
import numpy as np

from .queues import Shape, shape_of
from .record import Count, Index, Number, Record
from .words import Worded, with_grounds

STRAGGLER_RATIO = 1.5  # a worker this many times slower per batch than the median of the others is named
SLOW_COST = 0.05  # ... and so is one whose pace costs this share of the IO throughput (in-order delivery)
HOL_SHARE = 0.05  # head-of-line waits over this share of the IO time are named (in_order=False as the fix)
BUSY_WORKERS = 0.85  # workers busy this share of the time (and cores free): more workers is the fix
FREE_CORE = 0.9  # about a core free (the readings' noise aside): loader workers have room beside the step
OFF_CPU = 0.5  # the dataset's own work off the CPU more than this share: it waits on storage or the network


class WorkerMemory(Record, frozen=True):
    """One worker's memory: USS (pages only it holds), PSS where the kernel gives it, RSS (shared pages whole)."""

    worker: Index
    uss: Count = msgspec.field(name="uss_bytes")
    pss: Optional[Count] = msgspec.field(name="pss_bytes")
    rss: Count = msgspec.field(name="rss_bytes")


@dataclass(frozen=True, eq=False)
class StageTrial:
    """One diagnostic stage trial, per batch in the order the loop got them (one machine-wide monotonic clock)."""

    label: str
    warmup: bool
    seconds: float
    samples: int
    names: Tuple[str, ...]  # the timed transform steps (stage slots 1..)
    asked: np.ndarray[Any, Any]  # the loop asked for the batch (main)
    got: np.ndarray[Any, Any]  # ... and got it
    worker: np.ndarray[Any, Any]  # its worker's id (-1: made in the main process)
    start: np.ndarray[Any, Any]  # its worker started it (first item)
    end: np.ndarray[Any, Any]  # ... and finished it (collate_fn returned): ready
    work: np.ndarray[Any, Any]  # (batches, slots): __getitem__ in all, each transform step, collate_fn
    dataset_cpu: np.ndarray[Any, Any]  # CPU seconds of __getitem__ (its worker's thread)
    received: np.ndarray[Any, Any]  # (batches, 2): unpickling began and ended (NaN: not unpickled)
    pinned: np.ndarray[Any, Any]  # (batches, 2): pin_memory began and ended (NaN: not pinned)
    items: np.ndarray[Any, Any]  # items (samples) the dataset made for it
    sampler_seconds: float  # the sampler's time during the trial (main process)
    workers: int
    pin_memory: bool
    received_cpu: Optional[np.ndarray[Any, Any]] = None  # (batches, 2): the unpickling thread's CPU time then

    @property
    def batches(self) -> int:
        return len(self.got)

    @property
    def throughput(self) -> float:
        return self.samples / self.seconds if self.seconds > 0 else float("inf")


class StageKind(Worded):
    """What a stage is (WAIT: the main process's wait for a worker's batch); its words: what it holds (empty where its
    name says it)."""

    DATASET = "dataset", "__getitem__ without the timed transforms"
    TRANSFORM = "transform"
    COLLATE = "collate_fn"
    RECEIVE = "receive", "unpickling and shared memory"
    PIN = "pin_memory"
    SAMPLER = "sampler"
    WAIT = "wait", "the loop's time in next() waiting for a worker's batch"


MAIN_WORK = (StageKind.RECEIVE, StageKind.PIN, StageKind.SAMPLER)  # the main process's own work a batch


@dataclass(frozen=True)
class Stage:
    """One stage: seconds per batch (mean) and its share of the IO period; ``step``: a transform's name."""

    kind: StageKind
    where: str  # "workers", "main" (the loop's thread) or "pin thread"
    seconds: float
    share: float
    off_cpu: Optional[float] = None  # the dataset's and receive's: share of their time off the CPU (waiting)
    step: str = ""

    @property
    def name(self) -> str:
        return self.step if self.kind is StageKind.TRANSFORM else self.kind.value

    @property
    def waits(self) -> bool:
        """Most of its time is off the CPU."""
        return self.off_cpu is not None and self.off_cpu >= OFF_CPU


class WorkerStat(Record, frozen=True, kw_only=True):
    """One worker over the steady stage trials."""

    worker: Index
    batches: Count
    busy: Number = msgspec.field(name="busy_seconds")  # from its batches' first item to their collate_fn's end
    idle: Number = msgspec.field(name="idle_seconds")  # the trials' time it was not making a batch
    busy_share: Number = 0.0  # busy over busy and idle (follows from them)
    per_batch: Number = msgspec.field(name="seconds_per_batch")

    def __post_init__(self) -> None:
        total = self.busy + self.idle
        msgspec.structs.force_setattr(self, "busy_share", self.busy / total if total > 0 else 0.0)


@dataclass(frozen=True)
class SlowWorker:
    """The slowest of two or more workers (:func:`slowest_worker`)."""

    worker: int
    seconds: float  # its time a batch
    typical: float  # the median of the others' times a batch
    cost: float  # the share of the IO throughput its pace costs (modelled: in-order delivery)

    @property
    def ratio(self) -> float:
        return self.seconds / self.typical

    @property
    def named(self) -> bool:
        """Worth naming: :data:`STRAGGLER_RATIO` times the others, or a pace that costs :data:`SLOW_COST` of IO."""
        return self.ratio >= STRAGGLER_RATIO or self.cost >= SLOW_COST


@dataclass
class StageReport:
    """What the steady stage trials say; the JSON's ``stages``."""

    period: float  # seconds per batch of the stage trials (the IO period, instrumented)
    throughput: float
    batches: int
    samples: int
    workers: int
    stages: List[Stage]
    unexplained: float  # share of the period no stage accounts for (negative: stages overlap)
    worker_busy: Optional[float]  # share of the workers' time their stages fill (None: no workers)
    per_worker: List[WorkerStat]
    slowest: Optional[SlowWorker]  # the slowest of two or more workers (named or not: see ``straggler``)
    out_of_order: int
    hol_share: float  # the loop's wait for a batch while a later one was ready and a worker idle, share of the time
    split: str  # how the transforms were found, or why not
    in_order: Optional[bool]  # the installed torch's DataLoader takes in_order (None: not asked)
    first_throughput: Optional[float] = None  # the warm-up stage trial: a fresh copy's first batches
    memory: List[WorkerMemory] = field(default_factory=list)
    free_cores: Optional[float] = None
    trials: List[str] = field(default_factory=list)
    instrumentation: Optional[float] = None  # the timers' own cost per sample (s), where measured
    # The workers' processes' CPU seconds a batch over the steady trials (all of a worker's work: its stages, pickling
    # and sending the batch, its own loop), where read (the what-if model's other setting); None: not read.
    worker_cpu: Optional[float] = None
    # The shapes of a worker's time a batch and of the main process's receive (their quantiles over their means,
    # :func:`benchy.core.queues.shape_of`): what the what-if model's simulation draws from.
    worker_shape: Shape = ()
    receive_shape: Shape = ()

    @property
    def straggler(self) -> Optional[SlowWorker]:
        return self.slowest if self.slowest is not None and self.slowest.named else None

    @property
    def main_seconds(self) -> float:
        """The main process's own work a batch on the loop's thread (its wait for the workers left out)."""
        return _main_work(self.stages)

    @property
    def largest(self) -> Optional[Stage]:
        named = [s for s in self.stages if s.kind is not StageKind.WAIT]
        return max(named, key=lambda s: s.share) if named else None

    @property
    def waits_off_cpu(self) -> bool:
        """Whether the advice comes from a stage that waits off the CPU: on saturated cores, a wait for a core."""
        top = self.largest
        return (
            top is not None and top.kind in (StageKind.DATASET, StageKind.RECEIVE) and top.waits and self.advice == stage_fix(top)
        )

    @property
    def advice(self) -> Optional[Fix]:
        """The change the stages point to (docs/guide/loader-stages.md, the advice)."""
        busy, free = self.worker_busy or 0.0, self.free_cores or 0.0  # None: not known, no advice from it
        if self.workers and busy >= BUSY_WORKERS and free >= 1.0:
            return Fix(FixKind.MORE_WORKERS, figure=busy, other=free, workers=self.workers)
        if not self.workers and free >= FREE_CORE:
            return Fix(FixKind.LOADER_WORKERS, figure=free)
        top = self.largest
        # in_order=False gives back at most the head-of-line time; a fix of the largest stage, at most its share.
        if self.hol_share >= HOL_SHARE and self.in_order and (top is None or self.hol_share >= top.share):
            return Fix(FixKind.OUT_OF_ORDER, figure=self.hol_share)
        return None if top is None else stage_fix(top)

    @property
    def timer_share(self) -> Optional[float]:
        """The timers' own cost as a share of the period (part of the unexplained)."""
        if self.instrumentation is None or self.period <= 0 or self.batches <= 0:
            return None
        per_batch = self.instrumentation * self.samples / self.batches
        return per_batch / (max(1, self.workers) * self.period)


class FixKind(Worded):
    """A change the stage trials point to: the change, and why it helps (the fix's figures fill MORE_WORKERS',
    LOADER_WORKERS' and OUT_OF_ORDER's grounds, the stage TRANSFORM's and OTHER's change: :meth:`Fix.change`)."""

    MORE_WORKERS = (  # the workers busy (``figure``), cores free (``other``)
        "more-workers",
        "more loader workers",
        "the {workers} workers are busy {busy:.0f} % of the time and {other:.1f} cores are free",
    )
    LOADER_WORKERS = (  # no workers, cores free (``figure``)
        "loader-workers",
        "loader workers (num_workers > 0)",
        "the loading runs on the training thread, with {figure:.1f} cores free to do it beside the step",
    )
    OUT_OF_ORDER = (  # head-of-line waits (``figure``: their share of the time)
        "out-of-order",
        "DataLoader(in_order=False)",
        "for {busy:.1f} % of the time the loop waited for a batch while a later one was ready and a worker sat idle",
    )
    WAITS = (  # the dataset waits off the CPU
        "waits",
        "more workers, faster storage, or a cached dataset",
        "the dataset's own __getitem__ waits off the CPU for storage or network reads, which more workers overlap",
    )
    DATASET = (  # the dataset's reading and decoding
        "dataset",
        "cheaper reading and decoding in __getitem__",
        "pre-resized or pre-decoded samples, or decoding on the accelerator (nvJPEG, DALI)",
    )
    TRANSFORM = "transform", "a cheaper {step} or fewer transforms", "or the augmentation batched on the accelerator"
    COLLATE = (
        "collate",
        "a vectorised collate_fn",
        "stack whole arrays once, or a dataset __getitems__ that returns the batch",
    )
    RECEIVE = (  # the main process waits off the CPU for a worker's hand-over
        "receive",
        "workers that let go of the GIL",
        "the main process waits off the CPU for a worker to hand over its batch's shared memory, and a worker busy "
        "in pure-Python code answers late (vectorised or native transforms, or fewer workers than cores)",
    )
    RECEIVE_CPU = (  # unpickling on the CPU
        "receive-cpu",
        "smaller batches to move between processes",
        "uint8 instead of float tensors (convert on the accelerator), fewer and larger tensors",
    )
    PIN = "pin", "pin_memory=False", "pinning costs more than the copies it speeds up here"
    SAMPLER = "sampler", "a cheaper sampler", "precomputed index lists"
    OTHER = "other", "less time in {stage}"  # another stage (``stage``)


@dataclass(frozen=True)
class Fix:
    """A change the stage trials point to, with its figures."""

    kind: FixKind
    stage: str = ""  # the stage's name (a transform's, or another's)
    figure: float = 0.0
    other: float = 0.0
    workers: int = 0

    def _fill(self, text: str) -> str:
        figures = {"workers": self.workers, "busy": 100 * self.figure, "figure": self.figure, "other": self.other}
        return text.format(stage=self.stage, step=self.stage.split(" ", 1)[-1], **figures)

    def change(self) -> str:
        """The change, short (``more loader workers``)."""
        return self._fill(self.kind.words)

    def grounds(self) -> str:
        """Why it helps, from the stage trials ("" where the change says it all)."""
        return self._fill(self.kind.grounds)

    def words(self) -> str:
        """The change and its grounds."""
        return with_grounds(self.change(), self.grounds())


def stage_fix(stage: Stage) -> Fix:
    """The change a stage's size points to."""
    kind = stage.kind
    if kind is StageKind.DATASET:
        return Fix(FixKind.WAITS if stage.waits else FixKind.DATASET)
    if kind is StageKind.RECEIVE:
        return Fix(FixKind.RECEIVE if stage.waits else FixKind.RECEIVE_CPU)
    if kind in (StageKind.COLLATE, StageKind.PIN, StageKind.SAMPLER):
        return Fix(FixKind[kind.name])
    return Fix(FixKind.TRANSFORM if kind is StageKind.TRANSFORM else FixKind.OTHER, stage.name)


def _main_work(stages: Sequence[Stage]) -> float:
    return sum(st.seconds for st in stages if st.where == "main" and st.kind in MAIN_WORK)


def _mean(values: np.ndarray[Any, Any]) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else float("nan")


ORDER_MARGIN = 0.1  # a later batch counts as ready first when it was by this share of a batch's work time


def _idle(trial: StageTrial) -> Dict[int, List[Tuple[float, float]]]:
    """Per worker, the intervals it waited for work (the loader had not sent it an index)."""
    out: Dict[int, List[Tuple[float, float]]] = {}
    for w in {int(x) for x in trial.worker}:
        mine = trial.worker == w
        starts, ends = trial.start[mine], trial.end[mine]
        order = np.argsort(starts)
        starts, ends = starts[order], ends[order]
        out[w] = [(float(e), float(s)) for e, s in zip(ends[:-1], starts[1:]) if s > e]
    return out


def _covered(lo: float, hi: float, intervals: Sequence[Tuple[float, float]]) -> float:
    """The length of [lo, hi] that the union of ``intervals`` covers."""
    clipped = sorted((max(lo, a), min(hi, b)) for a, b in intervals if b > lo and a < hi)
    total, reach = 0.0, lo
    for a, b in clipped:
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


def _order(trial: StageTrial) -> Tuple[int, float]:
    """(batches out of order, head-of-line seconds) of one trial, among the ``2 x workers`` batches in flight.

    Head-of-line time is what ``in_order=False`` could give back: while the loop waited for a batch with a later one
    ready, the time another worker sat idle. Workers merely out of phase, each busy, lose nothing to the order."""
    end, asked, got, worker = trial.end, trial.asked, trial.got, trial.worker
    window = max(2, 2 * trial.workers)
    margin = ORDER_MARGIN * float(np.median(trial.end - trial.start)) if len(end) else 0.0
    idle = _idle(trial)
    late, blocked = 0, 0.0
    for k in range(len(end) - 1):
        later = end[k + 1 : k + 1 + window]
        other = float(later.min())
        if other < end[k] - margin:
            late += 1
            lo, hi = max(float(asked[k]), other), min(float(got[k]), float(end[k]))
            if hi > lo:
                others = [iv for w, ivs in idle.items() if w != int(worker[k]) for iv in ivs]
                blocked += _covered(lo, hi, others)
    return late, blocked


def analyse(
    trials: Sequence[StageTrial],
    *,
    in_order: Optional[bool] = None,
    split: str = "",
    free_cores: Optional[float] = None,
    memory: Sequence[WorkerMemory] = (),
) -> Optional[StageReport]:
    """The :class:`StageReport` of the steady (non-warm-up) trials; None without any batch."""
    steady = [t for t in trials if not t.warmup and t.batches > 0]
    if not steady:
        return None
    first = next((t for t in trials if t.warmup and t.batches > 0), None)
    n = sum(t.batches for t in steady)
    seconds = sum(t.seconds for t in steady)
    samples = sum(t.samples for t in steady)
    period = seconds / n
    workers = steady[0].workers
    names = steady[0].names
    work = np.concatenate([t.work for t in steady])
    received = np.concatenate([t.received for t in steady])
    received_cpu = np.concatenate(
        [t.received_cpu if t.received_cpu is not None else np.full((t.batches, 2), np.nan) for t in steady]
    )
    pinned = np.concatenate([t.pinned for t in steady])
    inside = np.concatenate([t.got - t.asked for t in steady])
    cpu = np.concatenate([t.dataset_cpu for t in steady])
    lanes = max(1, workers)
    where = "workers" if workers else "main"

    def share(secs: float, place: str = "main") -> float:
        return secs / (lanes * period if place == "workers" else period) if period > 0 else 0.0

    def stage(kind: StageKind, secs: float, place: str = where, **more: Any) -> Stage:
        return Stage(kind, place, secs, share(secs, place), **more)

    transforms = work[:, 1 : 1 + len(names)]
    getitem = work[:, 0]
    own = np.maximum(0.0, getitem - transforms.sum(axis=1))
    total_getitem = float(getitem.sum())
    off = 1.0 - float(cpu.sum()) / total_getitem if total_getitem > 0 else 0.0
    stages = [stage(StageKind.DATASET, float(own.mean()), off_cpu=max(0.0, min(1.0, off)))]
    stages += [stage(StageKind.TRANSFORM, float(transforms[:, j].mean()), step=name) for j, name in enumerate(names)]
    stages.append(stage(StageKind.COLLATE, float(work[:, -1].mean())))
    worker_side = sum(s.share for s in stages)
    receive = received[:, 1] - received[:, 0]
    beside = "pin thread" if workers and steady[0].pin_memory else "main"  # where the receive and the pinning run
    rec, rec_cpu = _mean(receive), _mean(received_cpu[:, 1] - received_cpu[:, 0])
    if np.isfinite(rec):
        off_cpu = max(0.0, min(1.0, 1.0 - rec_cpu / rec)) if np.isfinite(rec_cpu) and rec > 0 else None
        stages.append(stage(StageKind.RECEIVE, rec, beside, off_cpu=off_cpu))
    pin = _mean(pinned[:, 1] - pinned[:, 0])
    if np.isfinite(pin):
        stages.append(stage(StageKind.PIN, pin, beside))
    stages.append(stage(StageKind.SAMPLER, sum(t.sampler_seconds for t in steady) / n, "main"))
    main_work = _main_work(stages)
    if workers:
        stages.append(stage(StageKind.WAIT, max(0.0, float(inside.mean()) - main_work), "main"))
        busy: Optional[float] = worker_side
        unexplained = 1.0 - max(worker_side, share(main_work))
    else:
        busy = None
        unexplained = 1.0 - sum(s.share for s in stages)
    per_worker = _workers(steady, seconds)
    orders = [_order(t) for t in steady] if workers > 1 else []
    late, blocked = sum(o[0] for o in orders), sum((o[1] for o in orders), 0.0)
    return StageReport(
        period=period,
        throughput=samples / seconds if seconds > 0 else float("inf"),
        batches=n,
        samples=samples,
        workers=workers,
        stages=stages,
        unexplained=unexplained,
        worker_busy=busy,
        per_worker=per_worker,
        slowest=slowest_worker(per_worker, workers, main_work),
        out_of_order=late,
        hol_share=blocked / seconds if seconds > 0 else 0.0,
        split=split,
        in_order=in_order,
        first_throughput=None if first is None else first.throughput,
        memory=list(memory),
        free_cores=free_cores,
        trials=[t.label for t in trials],
        worker_shape=shape_of(*[t.end - t.start for t in steady]) if workers else (),
        receive_shape=shape_of(receive) if workers else (),
    )


def _workers(steady: Sequence[StageTrial], seconds: float) -> List[WorkerStat]:
    ids = sorted({int(w) for t in steady for w in t.worker if w >= 0})
    out: List[WorkerStat] = []
    for w in ids:
        count, busy = 0, 0.0
        for t in steady:
            mine = t.worker == w
            count += int(mine.sum())
            busy += float((t.end[mine] - t.start[mine]).sum())
        out.append(
            WorkerStat(
                worker=w, batches=count, busy=busy, idle=max(0.0, seconds - busy), per_batch=busy / count if count else 0.0
            )
        )
    return out


def slowest_worker(per_worker: Sequence[WorkerStat], workers: int, main: float) -> Optional[SlowWorker]:
    """The slowest of two or more workers and what its pace costs IO: with in-order delivery the pool delivers ``W``
    batches per slowest worker's batch (``main``, the main process's own work a batch, bounds what can be won)."""
    measured = [w for w in per_worker if w.batches > 0]
    if len(measured) < 2:
        return None
    slow = max(measured, key=lambda w: w.per_batch)
    typical = statistics.median([w.per_batch for w in measured if w is not slow])
    if typical <= 0 or slow.per_batch <= 0:
        return None
    lanes = max(workers, len(measured))
    now, even = max(slow.per_batch / lanes, main), max(typical / lanes, main)
    return SlowWorker(slow.worker, slow.per_batch, typical, max(0.0, 1.0 - even / now) if now > 0 else 0.0)


WARM_CACHE_SHARE = 0.01  # storage reads below this share of the files read: a warm page cache
FILES_READ = 1 << 20  # ... once the loader read at least this many bytes of files in the IO trials


class FirstPass(Record, frozen=True, kw_only=True):
    """The loader's first batches against its steady IO trials (``ratio`` and ``warm_cache`` follow from the rest)."""

    label: str = msgspec.field(name="first_trial", default="IO_WARMUP_1")  # the first IO trial (IO_1 without warm-ups)
    first: Number = msgspec.field(name="first_throughput")
    steady: Number = msgspec.field(name="steady_throughput")  # the measured IO trials' mean (after the first)
    ratio: Optional[Number] = None
    files_read: Optional[Number] = msgspec.field(name="files_read_bytes", default=None)  # None: unknown
    storage_read: Optional[Number] = msgspec.field(name="storage_read_bytes", default=None)  # ... from storage
    warm_cache: bool = False  # the loader read files, and next to nothing of them from storage

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "ratio", self.first / self.steady if self.steady > 0 else None)
        warm = (
            self.files_read is not None
            and self.storage_read is not None
            and self.files_read >= FILES_READ
            and self.storage_read < WARM_CACHE_SHARE * self.files_read
        )
        msgspec.structs.force_setattr(self, "warm_cache", warm)
