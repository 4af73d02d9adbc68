"""What a change would give: a model of the run's loader and step, built from its measurements (pure, no torch).

From what the run measured (the loader's costs a batch from the stage trials or the IO trials, the main process's
own work, the step and its CPU, the step's parts, the contention, the cores free, the slowest worker) it predicts
the IO and FULL throughput of the same loop with other loader workers, other cores, a step ``k`` times faster, or
one loader stage made free: steady paces (:func:`_periods`) say which side limits and where the verdict flips; the
figures with workers come from playing the pipeline batch by batch (:mod:`benchy.core.queues`). Each prediction is
worked out at the low end, the mean and the high end of the measured intervals. docs/guide/whatif.md gives the
formulas and why; :func:`whatif` gives a :class:`WhatIf` (from a run: :mod:`benchy.core.runinputs`), checked by
the emulated-step trials and the loader sweep in the same run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Dict, List, Optional, Sequence, Tuple

import msgspec
import numpy as np

from . import record
from .queues import Column, Shapes, periods
from .record import Count, Number, Record
from .stats import Estimate
from .words import Worded

SPEEDUPS = (1.0, 2.0, 4.0, 10.0)  # "a step k times faster": a faster accelerator
NEEDS_SHARE = 0.95  # enough workers for a faster step: FULL within 5 % of the most any number of workers gives
SATURATED = 0.9  # the IO trials kept this share of the free cores busy: the workers' waits were for a core
AGREE = 0.10  # a prediction and a measurement agree when within 10 % or within each other's intervals
MAX_WORKERS = 64  # the most workers a faster step's needs are searched up to
FLIP_MAX = 20.0  # speed-ups searched for the one where loading starts to limit
OTHER_WORKERS = 2  # the workers of the model's other setting, where the loader has none and the cores allow


def other_workers(workers: int, cores: float) -> int:
    """The loader's workers at the model's other setting, measured beside the run's own (``STAGES_ALONE``,
    ``STAGES_WORKER``, and ``CONTENTION_1`` where the loader has no workers): none where it has some; where it has
    none, :data:`OTHER_WORKERS` where the ``cores`` hold them, else one. Two workers, not one: a worker's time a
    batch beside another (sharing the memory bus, the caches, the kernel's shared-memory bookkeeping) is what any
    change to two or more workers meets, and one worker alone does not show it."""
    return 0 if workers > 0 else max(1, min(OTHER_WORKERS, int(cores)))


class Limit(Worded):
    """What limits the model's FULL (its words: a prediction's ``limit``)."""

    STEP = "step", "the step"
    WORKERS = "workers", "the workers"
    MAIN = "main", "the main process"  # the main process's own work a batch
    CORES = "cores", "the cores"
    SERIAL = "serial", "the loading and the step one after the other"  # no workers


class Basis(Worded):
    """What the loader's costs come from: the stage trials, or the IO trials alone."""

    STAGES = "stages", "the stage trials"
    IO = "io", "the IO trials"


class Checked(Worded):
    """What a check measured: the emulated-step trials, or a setting of the loader sweep (its words: a check's
    ``what``)."""

    EMULATED = "emulated", "EMULATED (the real loader, a step {speedup:.3g}x faster emulated)"
    SWEEP = "sweep", "SWEEP{index} ({setting})"


Triple = Tuple[float, float, float]  # (low, mean, high)


@dataclass(frozen=True)
class Loader:
    """The loader's costs a batch, in seconds, as measured (before scaling to the measured IO)."""

    worker: float  # a worker's time a batch: the dataset, the transforms, collate_fn
    cpu: float  # the share of it on the CPU (the rest waits: storage, the network, sleeps)
    main: float  # the main process's own work a batch with workers: receiving, pinning, the sampler
    main_plain: float  # ... without workers (the sampler, pinning): IO's period is then worker + main_plain
    main_cpu: float = 1.0  # the share of ``main`` on the CPU (receiving waits for a worker to hand its batch over)
    slow: float = 1.0  # the slowest worker's time a batch over the workers' mean (in-order delivery waits for it)
    stages: Tuple[Tuple[str, str, float], ...] = ()  # (name, where, seconds a batch): "if it cost nothing"
    handover: float = 0.0  # a worker's time a batch the stage timers do not see (sending the batch), from IO


@dataclass(frozen=True)
class Inputs:
    """What the model is built from (see the module's docstring)."""

    batch: float  # samples a batch
    workers: int  # the loader's workers in the IO trials
    cores: float  # cores the training process may use
    other: float  # cores other processes kept busy meanwhile
    io: Triple  # measured IO, samples/s (low, mean, high)
    step: Triple  # SYNTHETIC's seconds a step (fast end, mean, slow end)
    step_cores: float  # cores the step keeps busy while it runs alone (SYNTHETIC's CPU)
    loader: Loader
    basis: Basis
    full: Optional[Triple] = None  # measured FULL, samples/s
    full_step: Optional[float] = None  # FULL's seconds a step with the wait for data taken out
    full_wait: Optional[float] = None  # FULL's share of time waiting for data
    step_fixed: float = 0.0  # the share of the step a faster accelerator does not shorten (PARTS_1: the rest of the loop)
    contention: float = 0.0  # CONTENTION_1: how much longer the step takes beside the loader's workers flat out
    contention_rate: float = 0.0  # ... the loader's batches a second then
    full_contention: float = 0.0  # FULL: how much longer its step takes than SYNTHETIC's (the wait taken out)
    full_rate: float = 0.0  # ... FULL's batches a second (0 without workers: FULL then has no workers beside the step)
    depth: int = 0  # indices the loader hands its workers ahead (num_workers x prefetch_factor; 0: torch's default)
    # the loader's costs at the other setting (STAGES_ALONE: no workers, where the run has some; STAGES_WORKER: two
    # workers, where it has none: other_workers), for the changes on that side; None: not measured (the run's own serve both)
    other_setting: Optional[Loader] = None
    other_workers: int = 0  # ... the workers it was measured with
    shapes: Shapes = field(default_factory=Shapes)  # the measured distributions' shapes (a worker's batch, the receive, the step)

    def loader_for(self, workers: int) -> Loader:
        """The loader's costs for a change to ``workers``: the other setting's where it is on the other side of
        none (and was measured), else the run's own."""
        return self.other_setting if self.other_setting is not None and (workers > 0) != (self.workers > 0) else self.loader

    @property
    def prefetch(self) -> int:
        """Batches each worker is handed ahead (the loader's prefetch_factor; torch's default 2 where unknown)."""
        return max(1, self.depth // self.workers) if self.workers > 0 and self.depth > 0 else 2

    def stretch(self, rate: float) -> float:
        """The step's time beside a loader that gives ``rate`` batches a second, over its time alone: through
        (0, 0), FULL's own point and CONTENTION_1's (the loader flat out), linear between them, flat past the
        last; never less at a faster pace than at a slower one (a loader that works harder does not slow the step
        less: where the faster point measured less, the slower point's figure holds past it; see
        :mod:`benchy.core.whatif`)."""
        both = ((self.full_rate, self.full_contention), (self.contention_rate, self.contention))
        measured = sorted(p for p in both if p[0] > 0)
        if not measured or rate <= 0:
            return 1.0
        x0, y0 = 0.0, 0.0
        for x1, y in measured:
            y1 = max(y0, y)  # never less at a faster pace
            if rate <= x1:
                return 1.0 + max(0.0, y0 + (y1 - y0) * (rate - x0) / (x1 - x0))
            x0, y0 = x1, y1
        return 1.0 + max(0.0, y0)


class Change(Record, frozen=True):
    """One change to the run: loader workers, cores, a step ``speedup`` times faster, a stage made free."""

    workers: Count
    cores: Number
    speedup: Number = 1.0
    free: Optional[str] = msgspec.field(default=None, name="free_stage")


class Prediction(Change, frozen=True, kw_only=True):
    """The model's IO and FULL (samples/s, low, mean, high) for one change, and what limits FULL (a :class:`Limit`'s
    words)."""

    what: ClassVar[str] = "a prediction"
    io: record.Triple
    full: record.Triple
    limit: str
    naive: Optional[Number] = msgspec.field(name="naive_full")  # min(IO, k x SYNTHETIC) at the mean: the two numbers alone

    @property
    def change(self) -> Change:
        return Change(self.workers, self.cores, self.speedup, self.free)

    @property
    def rate(self) -> float:
        """FULL at the mean."""
        return self.full[1] or 0.0


class Check(Record, frozen=True, kw_only=True):
    """A prediction against a measurement of the same change in the same run; ``error`` (measured / predicted - 1)
    and ``agree`` (within :data:`AGREE`, or the intervals overlap) follow from the rest (None: nothing measured)."""

    what: ClassVar[str] = "a check"
    # ``what`` names the class in words; the key ``what`` (what was measured, a :class:`Checked`'s words) is this field.
    measured_what: str = msgspec.field(name="what")
    kind: str  # "FULL" or "IO"
    change: Change
    predicted: record.Triple
    measured: Optional[Number] = None  # the measurement's mean
    measured_half_width: Optional[Number] = None
    error: Optional[Number] = None
    agree: Optional[bool] = None

    def __post_init__(self) -> None:
        m, hw = self.measured, self.measured_half_width or 0.0
        low, mid, high = (math.inf if x is None else x for x in self.predicted)
        error = None if m is None or mid <= 0 else m / mid - 1.0
        agree = None if m is None else (error is not None and abs(error) <= AGREE) or (m - hw <= high and m + hw >= low)
        msgspec.structs.force_setattr(self, "error", error)
        msgspec.structs.force_setattr(self, "agree", agree)


class Need(Record, frozen=True, kw_only=True):
    """What a step ``speedup`` times faster needs to run at its own pace: workers and cores, and FULL then (samples/s;
    None: more than twice the cores' workers on eight times the cores); ``workers_interval``: the workers at the ends
    of the measured intervals, the fewest (a faster IO and a slower step) and the most (None: more than
    :data:`MAX_WORKERS`)."""

    speedup: Number
    workers: Optional[Count] = None
    workers_interval: Optional[record.Pair] = None
    cores: Optional[Number] = None
    full: Optional[Number] = None

    @property
    def fewest(self) -> Optional[int]:
        found = (self.workers_interval or [None])[0]
        return None if found is None else int(found)

    @property
    def most(self) -> Optional[int]:
        found = (self.workers_interval or [None, None])[1]
        return None if found is None else int(found)


@dataclass(frozen=True)
class WhatIf:
    """The model (:class:`Inputs`), its predictions, the speed-up where loading starts to limit, what
    faster steps need, the checks against measurements, and the figures that compare with other tools."""

    inputs: Inputs
    scale: float  # the loader's times were multiplied by this to match the measured IO
    own: Prediction  # the run as it is (FULL: the model's against the measured)
    predictions: Tuple[Prediction, ...]
    flip: Optional[float]  # the speed-up of the step from which loading limits FULL (1.0: it limits now)
    needs: Tuple[Need, ...]
    checks: Tuple[Check, ...] = ()
    utilization: Optional[float] = None  # FULL: the step's share of the time (MLPerf Storage's accelerator utilization)
    contention: Optional[float] = None  # FULL's step over SYNTHETIC's, less one: how much the loader slows the step
    # the flip at the ends of the measured intervals: the earliest (a slower IO, a faster step) and the latest
    flip_range: Tuple[Optional[float], Optional[float]] = (None, None)


# --- the model ------------------------------------------------------------------------------


def _stage_cut(loader: Loader, free: Optional[str]) -> Tuple[float, float, float, float, float]:
    """(worker, worker CPU seconds, main, main CPU seconds, main_plain) a batch with ``free`` made free."""
    worker, main, plain = loader.worker, loader.main, loader.main_plain
    cpu, main_cpu = loader.worker * loader.cpu, loader.main * loader.main_cpu
    for name, where, seconds in (stage for stage in loader.stages if stage[0] == free):
        if where == "workers":
            worker = max(0.0, worker - seconds)
            cpu = max(0.0, cpu - seconds * (loader.cpu if name == "dataset" else 1.0))
        else:
            main = max(0.0, main - seconds)
            main_cpu = max(0.0, main_cpu - seconds * (loader.main_cpu if name == "receive" else 1.0))
            if name in ("sampler", "pin_memory"):
                plain = max(0.0, plain - seconds)
    return worker, min(cpu, worker), main, min(main_cpu, main), plain


@dataclass(frozen=True)
class _Pace:
    """The steady model's seconds a batch for one change at one end of the intervals, and what the simulation
    of the pipeline (:mod:`benchy.core.queues`) is given: a worker's time a batch, the main process's, the
    step as it runs beside the loader, and the cores' bounds."""

    io: float
    full: float
    limit: Limit
    worker: float = 0.0
    main: float = 0.0
    step: float = 0.0  # the step made faster, stretched beside the loader
    io_cores: float = 0.0  # the cores' bound on IO's period
    full_cores: float = 0.0  # ... on FULL's
    slow: float = 1.0
    shares: Tuple[float, float, float] = (0.0, 0.0, 0.0)  # the CPU shares of a worker's time, the receive's, the step's cores
    avail: float = math.inf  # the cores free


def _periods(inp: Inputs, change: Change, scale: float, step: float) -> _Pace:
    """The steady model for ``change``; the loader's times multiplied by ``scale``; ``step``: SYNTHETIC's seconds
    a step."""
    loader = inp.loader_for(change.workers)
    worker, cpu, main, main_cpu, plain = (x * scale for x in _stage_cut(loader, change.free))
    s = faster(step, inp.step_fixed, change.speedup)
    if change.workers <= 0:
        io = worker + plain
        return _Pace(io, s + io, Limit.SERIAL)
    avail = max(0.25, change.cores - inp.other)
    slow = loader.slow if change.workers > 1 else 1.0
    pool = slow * worker / change.workers
    io_cores = (cpu + main_cpu) / avail
    io = max(pool, main, io_cores)
    step_share = max(0.0, min(inp.step_cores, change.cores))
    bound = (cpu + main_cpu + s * step_share) / avail
    stretch = 1.0
    full, which = max(((s + main, 0), (pool, 1), (bound, 3)))
    if inp.contention > 0 or inp.full_contention > 0:
        # The loader slows the step the harder it works (its pace); FULL's pace is where the step, so slowed,
        # and the loader meet.
        for _ in range(100):
            stretch = inp.stretch(1.0 / full)
            again, which = max(((s * stretch + main, 0), (pool, 1), (bound, 3)))
            if abs(again - full) <= 1e-9 * full:
                break
            full = 0.5 * (full + again)
    limit = list(Limit)[which] if which != 0 or s * stretch >= main else Limit.MAIN
    shares = (cpu / worker if worker > 0 else 0.0, main_cpu / main if main > 0 else 0.0, step_share)
    return _Pace(io, full, limit, worker, main, s * stretch, io_cores, bound, slow, shares, avail)


def faster(step: float, fixed: float, speedup: float) -> float:
    """The step ``speedup`` times faster where it can be: the share ``fixed`` of it (the rest of the loop, which
    a faster accelerator does not shorten) stays as it is."""
    return step * (fixed + (1.0 - fixed) / speedup)


def _scale(inp: Inputs, io_rate: float) -> float:
    """The factor on the loader's times that makes the model's IO at the run's own setting ``io_rate``; where
    the stage trials timed the loader, their times are its own at the measured IO's mean, and an end of the
    IO interval moves them by as much as it lies from the mean."""
    if inp.basis == Basis.STAGES:
        return inp.io[1] / io_rate if io_rate > 0 else 1.0
    own = Change(inp.workers, inp.cores)
    period = _periods(inp, own, 1.0, inp.step[1]).io
    return 1.0 if period <= 0 or io_rate <= 0 else (inp.batch / io_rate) / period


ENDS = ((0, 2), (1, 1), (2, 0))  # (IO's end, the step's end): a slower IO and a slower step give the low end


def predict(inp: Inputs, change: Change, *, queued: bool = False, memo: Optional[Dict[Column, float]] = None) -> Prediction:
    """The model's IO and FULL for ``change``, each at the low end, the mean and the high end of the
    measured intervals (a slower IO and a slower step give the low end); ``queued``: with workers, the
    periods come from the simulation of the pipeline (:func:`benchy.core.queues.periods`: the loader and the
    step queueing for each other, which the steady model does not see; ``memo``: its columns played so far,
    shared by the changes of one model), no shorter than the cores allow; the limit stays the steady model's
    (which side sets the pace)."""
    paces = [_pace(inp, change, i, j) for i, j in ENDS]
    ios = [p.io for p in paces]
    fulls = [p.full for p in paces]
    if queued and change.workers > 0:
        depth = change.workers * inp.prefetch
        worker = np.array([p.worker for p in paces] * 2)
        main = np.array([p.main for p in paces] * 2)
        step = np.array([p.step for p in paces] + [0.0] * 3)
        mid = paces[1]
        found = periods(
            change.workers,
            depth,
            worker,
            main,
            step,
            slow=mid.slow,
            shapes=inp.shapes,
            shares=mid.shares,
            cores=mid.avail,
            memo=memo,
        )
        fulls = [max(float(f), p.full_cores) for f, p in zip(found[:3], paces)]
        ios = [max(float(f), p.io_cores) for f, p in zip(found[3:], paces)]
    io = tuple(inp.batch / x if x > 0 else math.inf for x in ios)
    full = tuple(inp.batch / x if x > 0 else math.inf for x in fulls)
    naive = min(io[1], change.speedup * inp.batch / inp.step[1]) if inp.step[1] > 0 else io[1]  # k x SYNTHETIC
    limit = paces[1].limit.words
    return Prediction(**msgspec.structs.asdict(change), io=list(io), full=list(full), limit=limit, naive=naive)


def _worker_counts(cores: float) -> List[int]:
    top = max(2, round(2 * cores))
    return [w for w in range(0, top + 1) if w <= 8 or w % 2 == 0 or w == top]


def _pace(inp: Inputs, change: Change, io: int = 1, step: int = 1) -> _Pace:
    """The steady model for ``change`` at one end of the measured intervals (``io`` and ``step``: 0 the low end of
    IO and the fast end of the step, 1 the means, 2 the high end of IO and the slow end of the step)."""
    return _periods(inp, change, _scale(inp, inp.io[io]), inp.step[step])


def flip_speedup(inp: Inputs, end: int = 1) -> Optional[float]:
    """The smallest speed-up of the step (1.0 to :data:`FLIP_MAX`, in 2 % steps) at which loading limits
    the model's FULL: with workers, FULL is no longer limited by the step alone; without, the loading takes
    as long as the step (they run one after the other: the larger of the two limits); None: not up to
    :data:`FLIP_MAX`. ``end``: 1 at the means; 0 the earliest the intervals allow (the slow end of IO, the fast
    end of the step), 2 the latest. The :class:`WhatIf`'s ``flip``; alone, what the emulated-step trials need to
    choose their step, without the rest of the model."""
    k = 1.0
    while k <= FLIP_MAX:
        p = _pace(inp, Change(inp.workers, inp.cores, k), end, end)
        if inp.workers <= 0:
            if p.io >= p.full - p.io:
                return k
        elif p.limit != Limit.STEP:
            return k
        k = round(k * 1.02, 6)
    return None


def _need(inp: Inputs, speedup: float, end: int = 1) -> Need:
    """The fewest workers (up to :data:`MAX_WORKERS`, cores unbounded) with which a step ``speedup`` times
    faster gives FULL within :data:`NEEDS_SHARE` of the most any number of them gives, and the cores that
    takes (at least the run's): its workers', main process's and step's CPU work a second. ``end``: as
    :func:`flip_speedup`'s (0: the most workers the intervals allow, 2 the fewest)."""
    unlimited = replace(inp, other=0.0)
    paces = [_pace(unlimited, Change(w, math.inf, speedup), end, end) for w in range(0, MAX_WORKERS + 1)]
    rates = [inp.batch / p.full if p.full > 0 else math.inf for p in paces]
    top = max(rates)
    if not math.isfinite(top) or top <= 0:
        return Need(speedup=speedup)
    w = next(w for w, rate in enumerate(rates) if rate >= NEEDS_SHARE * top)  # top's own count at the latest
    cores = max(inp.cores, math.ceil(_cpu_cores(inp, w, speedup, rates[w]) + inp.other - 1e-9))
    return Need(speedup=speedup, workers=w, cores=float(cores), full=rates[w])


def _cpu_cores(inp: Inputs, workers: int, speedup: float, rate: float) -> float:
    """The cores kept busy at ``rate`` samples/s: the workers', the main process's and the step's CPU work."""
    worker, cpu, _, main_cpu, plain = _stage_cut(inp.loader_for(workers), None)
    scale = _scale(inp, inp.io[1])
    step = faster(inp.step[1], inp.step_fixed, speedup)
    step_cpu = step * max(0.0, inp.step_cores)
    per_batch = (cpu + main_cpu) * scale + step_cpu if workers > 0 else (worker + plain) * scale + step
    return per_batch * rate / inp.batch


def best_workers(w: WhatIf) -> Optional[Tuple[Prediction, float]]:
    """The fewest workers that give FULL within 5 % of the most any number of them gives with today's step and
    cores, when that is other than the run's own and 5 % or more above its FULL: (its prediction, the gain)."""
    inp = w.inputs
    choices = [p for p in w.predictions if p.speedup == 1.0 and p.cores == inp.cores and p.free is None]
    if not choices:
        return None
    top = max(choices, key=lambda p: p.rate)
    fewest = min((p for p in choices if p.rate >= NEEDS_SHARE * top.rate), key=lambda p: p.workers)
    if fewest.workers == inp.workers or w.own.rate <= 0 or fewest.rate < 1.05 * w.own.rate:
        return None
    return fewest, fewest.rate / w.own.rate - 1.0


def best_free(w: WhatIf) -> Optional[Tuple[Prediction, float]]:
    """The loader stage whose cost, made nothing, gives FULL the most, when that is 5 % or more: (its prediction,
    the gain)."""
    found = [p for p in w.predictions if p.free is not None]
    if not found or w.own.rate <= 0:
        return None
    top = max(found, key=lambda p: p.rate)
    gain = top.rate / w.own.rate - 1.0
    return None if gain < 0.05 else (top, gain)


def whatif(inp: Inputs, *, checks: Sequence[Tuple[Checked, int, Any, str, Change, Estimate]] = ()) -> WhatIf:
    """The model's predictions over workers (0 to twice the cores), cores (half, as many, twice), the
    step :data:`SPEEDUPS` faster and each stage made free; the speed-up where loading starts to limit;
    what each faster step needs; ``checks`` (what was measured, the sweep's index, its setting, the mode, the change,
    the measurement) set against their predictions."""
    memo: Dict[Column, float] = {}  # the simulation's columns: IO's, for one, are the same for every step speed-up
    own = predict(inp, Change(inp.workers, inp.cores), queued=True, memo=memo)
    seen: Dict[Change, Prediction] = {own.change: own}

    def add(change: Change) -> None:
        if change not in seen:
            seen[change] = predict(inp, change, queued=True, memo=memo)

    for k in SPEEDUPS:
        for w in _worker_counts(inp.cores):
            add(Change(w, inp.cores, k))
    for cores in sorted({max(1.0, inp.cores / 2), inp.cores, 2 * inp.cores}):
        for k in SPEEDUPS:
            add(Change(inp.workers, cores, k))
    for name, _, seconds in inp.loader.stages:
        if seconds > 0:
            add(Change(inp.workers, inp.cores, 1.0, name))
    flip = flip_speedup(inp)
    needs = tuple(
        msgspec.structs.replace(_need(inp, k), workers_interval=[_need(inp, k, 2).workers, _need(inp, k, 0).workers])
        for k in SPEEDUPS
    )
    found = tuple(
        Check(
            measured_what=source.words.format(speedup=change.speedup, index=index, setting=setting and setting.words()),
            kind=kind,
            change=change,
            predicted=p.full if kind == "FULL" else p.io,
            measured=measured.mean,
            measured_half_width=measured.half_width,
        )
        for source, index, setting, kind, change, measured in checks
        for p in [seen.get(change) or predict(inp, change, queued=True, memo=memo)]
    )
    utilization = None if inp.full_wait is None else max(0.0, 1.0 - inp.full_wait)
    contention = inp.full_step / inp.step[1] - 1.0 if inp.full_step is not None and inp.step[1] > 0 else None
    flips = (flip_speedup(inp, 0), flip_speedup(inp, 2))
    own_scale = _scale(inp, inp.io[1])
    return WhatIf(inp, own_scale, own, tuple(seen.values()), flip, needs, found, utilization, contention, flips)
