"""The what-if model's inputs read from a run (pure, no torch), as docs/guide/whatif.md's table of inputs says, and
:func:`from_results`, the model of a run checked against its emulated-step trials and its loader sweep. The model
itself is :mod:`benchy.core.whatif`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, List, Mapping, Optional, Tuple

import numpy as np

from .claims import Contended
from .queues import Shape, Shapes, shape_of
from .record import Mode
from .stages import MAIN_WORK, StageKind
from .stats import Estimate, estimate
from .whatif import SATURATED, Basis, Change, Checked, Inputs, Loader, Triple, WhatIf, whatif


def _ends(est: Estimate) -> Optional[Triple]:
    if est.mean is None or est.mean <= 0:
        return None
    hw = est.half_width or 0.0
    return (max(est.mean - hw, 1e-3 * est.mean), est.mean, est.mean + hw)


def inputs_from(
    *,
    batch: Optional[float],
    workers: int,
    io: Estimate,
    synthetic: Estimate,
    systems: Mapping[str, Mapping[str, float]],
    stages: Optional[Any] = None,
    full: Optional[Estimate] = None,
    full_step: Optional[float] = None,
    full_wait: Optional[float] = None,
    parts: Optional[Any] = None,
    contention: Optional[Any] = None,
    depth: int = 0,
    step_shape: Shape = (),
    full_wait_median: Optional[float] = None,
    stages_other: Optional[Any] = None,
) -> Optional[Inputs]:
    """The model's :class:`Inputs` from a run's figures (``systems``: mode name to system means; without ``stages``
    the loader's cost comes from the IO trials alone); None without IO, SYNTHETIC or a batch size."""
    io_t, syn_t = _ends(io), _ends(synthetic)
    if io_t is None or syn_t is None or not batch or batch <= 0:
        return None
    step = (batch / syn_t[2], batch / syn_t[1], batch / syn_t[0])
    io_sys, syn_sys = systems.get("IO", {}), systems.get("SYNTHETIC", {})
    cores = float(io_sys.get("cpu_cores") or syn_sys.get("cpu_cores") or 1.0)
    others = [s["other_cores_busy"] for s in (io_sys, syn_sys) if s.get("other_cores_busy") is not None]
    other = float(sum(others) / len(others)) if others else 0.0
    step_cores = float(syn_sys.get("cpu_cores_busy", 1.0))
    period = batch / io_t[1]
    if stages is not None and stages.batches > 0:
        io_busy = io_sys.get("cpu_cores_busy")
        saturated = io_busy is not None and io_busy >= SATURATED * max(0.25, cores - other)
        loader = _loader_from_stages(stages, saturated)
        basis = Basis.STAGES
        workers = stages.workers
    else:
        lanes = max(1, workers)  # a worker's time a batch and its CPU share, from IO's period and cores
        loader = Loader(period * lanes, min(1.0, float(io_sys.get("cpu_cores_busy", lanes)) / lanes), 0.0, 0.0)
        basis = Basis.IO
    if full is not None and full.mean and full_wait_median is not None:
        loader = _main_from_full(loader, workers, batch / full.mean, full_wait_median)
    if basis == Basis.STAGES:
        loader = _with_handover(loader, workers, batch / io_t[1], cores - other)
    elsewhere = None
    if basis == Basis.STAGES and stages_other is not None and stages_other.batches > 0:
        elsewhere = _other_loader(stages_other, cores - other)
    # CONTENTION_1 ran the run's own workers beside the step, or, where it has none, the other setting's (whose costs
    # are then ``elsewhere``'s): the step beside workers, for the changes to workers
    beside: Optional[Loader] = None
    if contention is not None and (workers > 0 or (elsewhere is not None and contention.workers > 0)):
        beside = loader if workers > 0 else elsewhere
    return Inputs(
        batch=float(batch),
        workers=workers,
        cores=cores,
        other=other,
        io=io_t,
        step=step,
        step_cores=step_cores,
        loader=loader,
        basis=basis,
        full=None if full is None else _ends(full),
        full_step=full_step,
        full_wait=full_wait,
        step_fixed=parts.rest / parts.period if parts is not None and parts.found and parts.period > 0 else 0.0,
        contention=0.0 if beside is None or contention is None else _contention(contention, step[1], beside),
        contention_rate=0.0 if beside is None or contention is None else contention.loader_rate,
        full_contention=max(0.0, full_step / step[1] - 1.0) if full_step is not None and workers > 0 else 0.0,
        # without workers FULL's pace is no point of the step beside workers
        full_rate=0.0 if full is None or full.mean is None or workers <= 0 else full.mean / batch,
        depth=depth,
        other_setting=elsewhere,
        other_workers=0 if elsewhere is None or stages_other is None else stages_other.workers,
        shapes=Shapes(
            stages.worker_shape if stages is not None else (), stages.receive_shape if stages is not None else (), step_shape
        ),
    )


AHEAD = 0.8  # the loader kept ahead in FULL: its pool's period at most this share of FULL's


def _main_from_full(loader: Loader, workers: int, period: float, wait: float) -> Loader:
    """``loader`` with the main process's work a batch taken from FULL's median wait where the loader kept ahead
    (the batch was ready, so the wait is all the main process's own work); a longer wait than the stages' is CPU work."""
    if workers <= 0 or wait <= loader.main or period <= 0:
        return loader
    pool = loader.slow * loader.worker / workers
    if pool > AHEAD * period:
        return loader
    cpu = loader.main * loader.main_cpu + (wait - loader.main)
    return replace(loader, main=wait, main_cpu=min(1.0, cpu / wait))


def _with_handover(loader: Loader, workers: int, period: float, avail: float) -> Loader:
    """``loader`` with the time a batch the stage timers leave out (the hand-over) added to the worker's work, where
    the workers set the pace and the IO trials' ``period`` is longer than the model's IO."""
    lanes = max(1, workers)
    slow = loader.slow if workers > 1 else 1.0
    if workers <= 0:
        model = loader.worker + loader.main_plain
        missing = period - model
    else:
        pool = slow * loader.worker / lanes
        cpu = (loader.worker * loader.cpu + loader.main * loader.main_cpu) / max(0.25, avail)
        if loader.main >= max(pool, cpu):
            return loader  # receiving sets the pace: the workers' own time does not show in the period
        missing = (period - max(pool, cpu)) * lanes / slow
    if missing <= 0.05 * loader.worker:
        return loader
    cpu_seconds = loader.worker * loader.cpu + missing  # sending a batch is CPU work
    worker = loader.worker + missing
    return replace(loader, worker=worker, cpu=min(1.0, cpu_seconds / worker), handover=missing)


def _other_loader(report: Any, avail: float) -> Loader:
    """The loader's costs at the other setting, as for the run's own, but where its trial kept the ``avail`` cores
    busy its period is the cores' pace: a worker's time a batch is then its process's CPU time a batch."""
    loader = _loader_from_stages(report)
    spent = report.worker_cpu
    if report.workers > 0 and report.period > 0 and spent:
        busy = (spent + loader.main * loader.main_cpu) / report.period
        if busy >= SATURATED * max(0.25, avail):
            seen = _loader_from_stages(report, True)
            return replace(seen, worker=spent, cpu=1.0, handover=max(0.0, spent - seen.worker))
    return _with_handover(loader, report.workers, report.period, avail)


def _contention(run: Any, alone: float, loader: Loader) -> float:
    """How much longer the step takes beside the loader flat out, less the draining thread's receive (in FULL the
    main process receives between steps, not during them)."""
    slowdown = run.slower(alone)
    if slowdown is None:
        return 0.0
    receiving = loader.main * loader.main_cpu * run.loader_rate
    return max(0.0, slowdown - receiving)


def _loader_from_stages(report: Any, saturated: bool = False) -> Loader:
    """The loader's costs from a stage report; ``saturated``: the workers' time off the CPU was a wait for a core,
    so a worker's time a batch is its CPU time."""
    worker, cpu, main_cpu, plain = 0.0, 0.0, 0.0, 0.0
    main = report.main_seconds
    timed = [st for st in report.stages if st.kind is not StageKind.WAIT]
    for st in timed:
        if st.kind in MAIN_WORK:
            if st.where == "main":
                main_cpu += st.seconds * (1.0 - (st.off_cpu or 0.0))
                if st.kind is not StageKind.RECEIVE:
                    plain += st.seconds
            continue
        on = st.seconds * (1.0 - (st.off_cpu or 0.0) if st.kind is StageKind.DATASET else 1.0)
        worker += on if saturated else st.seconds
        cpu += on
    if report.workers <= 0:
        # Without workers every stage runs on the main thread: a "worker" here is that thread.
        plain = main
        main = main_cpu = 0.0
    # The slowest worker (its one definition, core.stages.slowest_worker) against the workers' mean time a batch,
    # which is what the model's worker time is: the pool delivers at the slowest one's pace.
    slow = 1.0
    measured = [w.per_batch for w in report.per_worker if w.batches > 0]
    if report.slowest is not None and measured and sum(measured) > 0:
        slow = report.slowest.seconds / (sum(measured) / len(measured))
    named = tuple((st.name, st.where, float(st.seconds)) for st in timed)
    return Loader(worker, cpu / worker if worker > 0 else 1.0, main, plain, main_cpu / main if main > 0 else 1.0, slow, named)


def step_in_full(results: Any) -> Optional[float]:
    """FULL's seconds a step with its wait for data taken out (the step beside the loader); None: not split."""
    found = [t for t in results.measured(Mode.FULL) if t.wait_seconds is not None and len(t.step_seconds)]
    if not found:
        return None
    steps = sum(len(t.step_seconds) for t in found)
    return float(sum(t.own_seconds - t.wait_seconds for t in found) / steps)


def contended(results: Any, workers: int) -> Optional[Contended]:
    """The workers slow the step: FULL below both sides by more than 10 % and its step 5 % longer than SYNTHETIC's.
    None without workers: FULL is then below both by design (loading and the step in series)."""
    if workers <= 0:
        return None
    io, syn, full = (results.estimate(m).mean for m in (Mode.IO, Mode.SYNTHETIC, Mode.FULL))
    step = step_in_full(results)
    if io is None or syn is None or full is None or step is None or not syn or full >= 0.9 * min(io, syn):
        return None
    alone = results.step_alone()
    return None if alone is None or alone <= 0 or step < 1.05 * alone else Contended(full, step / alone - 1.0, step, alone)


def run_inputs(results: Any, systems: Mapping[Any, Mapping[str, float]], workers: int, *, depth: int = 0) -> Optional[Inputs]:
    """The model's :class:`Inputs` from a run's results (``depth``: num_workers x prefetch_factor)."""
    io_trials = results.measured(Mode.IO)
    batches = sum(t.spec.nbatches for t in io_trials)
    batch = sum(t.samples for t in io_trials) / batches if batches else None
    full_step = step_in_full(results)
    full_trials = [t for t in results.measured(Mode.FULL) if t.wait_median is not None]
    has_full = bool(results.measured(Mode.FULL))
    steps = [t.step_seconds for t in results.measured(Mode.SYNTHETIC) if len(t.step_seconds)]
    return inputs_from(
        batch=batch,
        workers=workers,
        io=results.estimate(Mode.IO),
        synthetic=results.estimate(Mode.SYNTHETIC),
        systems={getattr(m, "value", str(m)): v for m, v in systems.items()},
        stages=results.stages,
        full=results.estimate(Mode.FULL) if has_full else None,
        full_step=full_step,
        full_wait=results.data_wait().mean if has_full else None,
        parts=results.parts,
        contention=results.contention,
        depth=depth,
        step_shape=shape_of(*steps),
        full_wait_median=float(np.median([t.wait_median for t in full_trials])) if full_trials else None,
        stages_other=results.stages_other,
    )


def from_results(results: Any, systems: Mapping[Any, Mapping[str, float]], workers: int, *, depth: int = 0) -> Optional[WhatIf]:
    """The :class:`WhatIf` of a run, checked against the emulated-step trials and the loader sweep where they ran."""
    inp = run_inputs(results, systems, workers, depth=depth)
    if inp is None:
        return None
    checks: List[Tuple[Checked, int, Any, str, Change, Estimate]] = []
    if results.emulated and results.emulated_speedup:
        k = float(results.emulated_speedup)
        measured = estimate([t.throughput for t in results.emulated if not t.spec.warmup])
        checks.append((Checked.EMULATED, 0, None, "FULL", Change(inp.workers, inp.cores, k), measured))
    for j, found in enumerate(results.sweep, 1):
        if found.error is None and found.trials:
            setting = found.setting
            checks.append((Checked.SWEEP, j, setting, "IO", Change(setting.num_workers, inp.cores), found.estimate))
    return whatif(inp, checks=checks)
