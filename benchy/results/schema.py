"""The result JSON's schema in one place: writing it, reading it back, and upgrading old versions.

Version history (``schema_version``; :mod:`benchy.results.model` declares every key):

1. benchy 0.1.0 and the changes after it, which only added keys: ``exit_status``,
   ``decision``, ``summary``, ``steps_dir``, ``IO_H2D``, per mode ``steps``, ``system``,
   ``data_wait`` and so on may be missing from a version-1 file.
2. ``run_name`` and ``source`` (``"run"``, or ``"log"`` for a file ``benchy parse`` made);
   every key of the current layout is present (null where nothing was measured).
3. ``timeline``: every trial that ran (warm-ups, the loader sweep's and IO_H2D's included) with
   its start in Unix seconds, for ``benchy trace``; null in a file upgraded from an older version,
   or made by ``benchy parse``.
4. Trials are windows of steps: each timeline entry's ``window`` (where a SYNTHETIC or FULL trial
   began and ended in the loop: epoch and step, the stretches it ran in, the periods left out),
   ``steps_needed`` and ``epoch_length``; ``epochs_needed`` derived from them (null without a
   length); ``side_iterators`` and ``failed_ranks``; ``rerun`` is always empty (no trial runs again).
   A file upgraded from an older version has null for each (``epochs_needed`` is kept).
5. The anytime schedule: ``steps_taken`` (the loop's steps since the benchmark began) and, in ``schedule``,
   ``stop`` (why measuring ended, a code beside ``stop_reason``'s words), ``extras`` and ``extras_not_run``,
   ``loop_steps`` (the loop's known length) and ``measuring_steps`` (the steps the verdict took); null or
   empty in a file upgraded from an older version.

:func:`upgrade` maps any readable version to the current one (the keys a version added are the model's
defaults, null or empty, in an older file); :func:`read_run` then builds the
:class:`~benchy.results.saved.Run` that the command-line tools use, checking every value it reads so that
a damaged file is named with the key that is wrong.
"""

from __future__ import annotations

import copy
import math
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
from msgspec import UNSET, UnsetType
from msgspec.structs import replace

from ..core.compute import ComputeReport
from ..core.machine import Stop
from ..core.outcomes import Reason
from ..core.results import RunResults, ScheduleState, Snapshot, StepRates, TrialResult
from ..core.schedule import Mode
from ..core.stats import Comparison, Estimate, estimate, finite
from ..core.sweep import best, cheapest_enough, smallest_within
from ..core.verdict import Reading, Verdict, disturbed_trials, h2d_estimate, own_io
from ..core.whatif import WhatIf
from . import model
from .document import ResultFileError, check, read_file
from .model import DataWait, ModeBlock
from .saved import ModeRun, Run
from .summary import straggler_text
from .text import reports
from .text import run as run_text
from .text.verdict import verdict_line

SCHEMA_VERSION = 6
METHOD = "welch-t on log trial throughputs"  # the decision's test (its ``method``)


def default_run_name(environment: Mapping[str, Any]) -> str:
    """The script's name and the run's start time (UTC), e.g. ``train_cnn 2026-11-23T01:34:36Z``."""
    argv = environment.get("argv")
    script = argv[0] if isinstance(argv, list) and argv and isinstance(argv[0], str) else ""
    stem = os.path.splitext(os.path.basename(script))[0] or "run"
    when = environment.get("time_utc")
    if not isinstance(when, str) or not when:
        return stem
    return f"{stem} {when.replace('+00:00', 'Z')}"


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float as null (JSON has no inf or nan), through dicts, lists,
    tuples and numpy arrays (which become lists)."""
    if isinstance(value, float):
        return finite(value)
    if isinstance(value, np.ndarray):
        out = value.tolist()
        return out if np.isfinite(value).all() else json_safe(out)
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def _trials(trials: Sequence[TrialResult], est: Optional[Estimate] = None) -> Dict[str, Any]:
    """The keys every block of trials has: each trial's throughput, time and samples, and with ``est`` their mean,
    its interval's half-width and their count."""
    lists = {
        "trial_throughput": [t.throughput for t in trials],
        "trial_time": [t.seconds for t in trials],
        "trial_samples": [t.samples for t in trials],
    }
    return lists if est is None else {**lists, "mean": est.mean, "interval": est.half_width, "n": est.n}


def _data_wait_block(results: RunResults) -> Optional[model.DataWait]:
    """FULL's share of time waiting for the loader (fractions), per counted trial and overall."""
    trials = [t for t in results.measured(Mode.FULL) if t.data_wait is not None]
    if not trials:
        return None
    est = results.data_wait()
    return model.DataWait(
        mean=est.mean,
        interval=est.half_width,
        confidence=est.confidence,
        trials=[t.data_wait for t in trials],
        labels=[t.label for t in trials],
        wait_median_s=[t.wait_median for t in trials],
        step_median_s=[t.work_median for t in trials],
    )


def _ranks_block(results: RunResults, mode: Mode, trials: List[TrialResult]) -> Union[model.Ranks, UnsetType]:
    """A mode's ``ranks``: one list per counted trial, one entry per rank; past ``dist_rank_lists`` ranks the reduced
    figures per counted trial (``summarised``); unset for one process."""
    if any(t.rank_seconds for t in trials):
        return model.Ranks(
            trial_throughput=[list(t.rank_throughputs) for t in trials],
            trial_time=[list(t.rank_seconds) for t in trials],
            trial_samples=[list(t.rank_samples) for t in trials],
            # (slowest - fastest) / fastest rank's trial time, per trial.
            spread=[
                (max(t.rank_seconds) - min(t.rank_seconds)) / min(t.rank_seconds) if min(t.rank_seconds) > 0 else None
                for t in trials
            ],
            mean_trial_time=list[Optional[float]](results.rank_mean_times(mode)),
            straggler=straggler_text(results, mode),
        )
    if any(t.rank_summary is not None for t in trials):
        return model.Ranks(summarised=True, trials=[t.rank_summary for t in trials], straggler=straggler_text(results, mode))
    return UNSET


def _mode_block(
    results: RunResults, mode: Mode, reading: Reading, per_step: bool, batch_samples: Optional[int]
) -> model.ModeBlock:
    trials = results.measured(mode)
    est = results.estimate(mode)
    warm = results.warmups(mode)
    return model.ModeBlock(
        # The original's keys, one entry per counted trial. ``rates`` (per-step throughputs) and ``steps`` (pooled
        # over every step, worked out once in the reading) only in the final document: a checkpoint costs the new
        # trial, not every trial so far. Each trial's rates are made a slice at a time by ``files.write_document``
        # (a StepRates in place of the list the reader decodes).
        rates=[StepRates(t) for t in trials] if per_step else None,  # type: ignore[misc]
        avg_iter_throughput=[t.mean_step_rate for t in trials],
        **_trials(trials, est),  # trial_throughput and trial_time are the original's keys, the rest ours
        nbatches=[len(t.step_seconds) for t in trials],
        confidence=est.confidence,
        warmup=model.Warmup(**_trials(warm), system=[t.system for t in warm]),
        steps=reading.profiles.get(mode) if per_step else None,
        system=[t.system for t in trials],  # per counted trial (null when not sampled)
        tokens=[t.tokens for t in trials] if any(t.tokens is not None for t in trials) else UNSET,
        data_wait=_data_wait_block(results) if mode is Mode.FULL else UNSET,
        ranks=_ranks_block(results, mode, trials),
        # The one cached batch every SYNTHETIC warm-up and trial yields (None until fetched).
        batch_samples=batch_samples if mode is Mode.SYNTHETIC else UNSET,
    )


TIMELINE_CLOCK = (
    "Unix seconds: the trial clock (time.perf_counter) moved onto time.time()'s scale once per process; each rank's own"
)


def _timeline_entry(t: TrialResult, group: str, *, saved: bool = False, folded: bool = False) -> model.TimelineTrial:
    return model.TimelineTrial(
        trial=t.label,
        mode=t.mode,
        group=group,
        warmup=t.spec.warmup,
        profiled=t.spec.profiled,
        started=t.started,
        own_seconds=t.own_seconds,
        seconds=t.seconds,
        nbatches=t.spec.nbatches if folded else len(t.step_seconds),
        samples=t.samples,
        steps_file=saved,
        rank_started=list(t.rank_started) or None,
        rank_seconds=list(t.rank_seconds) or None,
        window=t.window,
    )


def timeline_block(results: RunResults, steps_saved: bool) -> model.Timeline:
    """The JSON's ``timeline``: every trial that ran, in the order it started (``benchy trace`` draws it; its keys'
    words are the model's)."""
    entries = [_timeline_entry(t, "schedule", saved=steps_saved) for t in results.trials]
    entries += [_timeline_entry(t, "IO_H2D") for t in results.h2d]
    entries += [_timeline_entry(t, "diagnostics", folded=True) for t in results.diagnostics]
    entries += [_timeline_entry(t, "emulated", folded=True) for t in results.emulated]
    for setting in results.sweep:
        entries += [replace(_timeline_entry(t, "sweep"), setting=setting.setting) for t in [*setting.warmups, *setting.trials]]
    entries += [  # the stage trials: rank 0's own time, no per-step file
        model.TimelineTrial(
            trial=span.label,
            mode=span.mode,
            group=span.group,
            warmup=span.warmup,
            profiled=False,
            started=span.started,
            own_seconds=span.seconds,
            seconds=span.seconds,
            steps_file=False,
            window=span.window,
        )
        for span in results.spans
    ]
    entries.sort(key=lambda e: math.inf if e.started is None or not math.isfinite(e.started) else e.started)
    return model.Timeline(clock=TIMELINE_CLOCK, trials=entries)


def h2d_block(results: RunResults) -> model.H2D:
    """The JSON's ``IO_H2D``: this rank's IO trials with copies to the accelerator, or why none ran."""
    est, io = h2d_estimate(results), own_io(results)
    return model.H2D(
        device=results.h2d_device,
        skipped=_skipped(results.h2d_skipped),
        **_trials(results.h2d, est),
        vs_io=est.mean / io.mean if est.mean is not None and io.mean else None,
        system=[t.system for t in results.h2d],
    )


def emulated_block(results: RunResults) -> Optional[model.Emulated]:
    """The JSON's ``EMULATED``: the emulated-step trials (the real loader, a step ``speedup`` times faster
    emulated), or why they stopped (None: they did not run)."""
    if results.emulated_speedup is None and results.emulated_skipped is None:
        return None
    measured = [t for t in results.emulated if not t.spec.warmup]
    return model.Emulated(
        speedup=results.emulated_speedup,
        skipped=_skipped(results.emulated_skipped),
        **_trials(measured, estimate([t.throughput for t in measured])),
    )


def diagnostics_block(results: RunResults) -> Optional[model.Diagnostics]:
    """The JSON's ``diagnostics``: the windows after the counted ones (the step's parts, the step beside the
    loader), each trial's throughput, and why one did not run (None: none ran or was meant to)."""
    if not results.diagnostics and not results.diagnostics_skipped:
        return None
    return model.Diagnostics(
        trials=[model.DiagnosticTrial(label=t.label, throughput=t.throughput, seconds=t.seconds) for t in results.diagnostics],
        parts=results.parts,
        contention=results.contention,
        skipped=[r.words() for r in results.diagnostics_skipped],
    )


def sweep_block(results: RunResults) -> Optional[model.Sweep]:
    """The JSON's ``sweep``: each setting's IO trials, the best, the recommended, the applied (None: no sweep)."""
    if not results.sweep:
        return None
    synthetic = results.estimate(Mode.SYNTHETIC).mean
    top, small = best(results.sweep), smallest_within(results.sweep)
    enough = cheapest_enough(results.sweep, synthetic) if synthetic is not None else None
    return model.Sweep(
        own=results.sweep_own,
        settings=[
            model.SweepSetting(
                settings=r.setting,
                **_trials(r.trials, r.estimate),
                warmup=model.SweepWarmup(trial_throughput=[t.throughput for t in r.warmups]),
                error=r.error,
                workers_memory_bytes=r.memory,
                over_memory_cap=r.over_cap,
            )
            for r in results.sweep
        ],
        best=None if top is None else top.setting,
        smallest_within_5pct=None if small is None else small.setting,
        feeds_synthetic=None if enough is None else enough.setting,
        applied=results.sweep_applied,
        memory_cap_bytes=results.sweep_memory_budget,
    )


def schedule_block(s: ScheduleState) -> model.Schedule:
    """The JSON's ``schedule``: the state's codes, and why measuring stopped in words (``stop_reason``)."""
    return model.Schedule(
        adaptive=s.adaptive,
        precision=s.precision,
        windows_needed=s.windows_needed,
        windows_fewest=s.windows_fewest,
        order=list(s.order),
        warmups=dict(s.warmups),
        decision_confidence=s.decision_confidence,
        stop_reason=None if s.stop is None else Stop(s.stop).reason(s.decision_confidence, s.precision, s.horizon),
        stop=s.stop,
        extras=list(s.extras),
        extras_not_run={name: run_text.NOT_RUN[why] for name, why in s.extras_not_run},
        loop_steps=s.horizon,
        measuring_steps=s.stopped_at,
        measuring_seconds=s.stopped_seconds,
        decided_steps=s.decided_at,
        decided_seconds=s.decided_seconds,
        loader_round=s.cycle,
        figure_precision=s.figure_precision,
        imprecise={
            i.mode: model.Imprecise(share=i.share, trials=i.trials, more_steps=i.more_steps, capped=i.capped) for i in s.imprecise
        },
    )


def _skipped(why: Optional[Reason]) -> Optional[str]:
    return None if why is None else why.words()


def _comparison(c: Comparison, a: str, b: str, a_values: Sequence[float], b_values: Sequence[float]) -> model.Comparison:
    return model.Comparison(
        method=METHOD,
        ratio=f"{b}/{a}",
        value=c.ratio,
        interval=None if c.low is None or c.high is None else [c.low, c.high],
        confidence=c.confidence,
        t=c.t,
        df=c.df,
        p=c.p,
        inputs={a: list(a_values), b: list(b_values)},
    )


def decision_block(v: Verdict) -> model.Decision:
    """The JSON's ``decision``: how the verdict was decided (IO against SYNTHETIC; FULL against the slower)."""
    full = v.full
    slower = None if full is None else (v.io if full.slower == "IO" else v.synthetic)
    return model.Decision(
        io_vs_synthetic=_comparison(v.comparison, "IO", "SYNTHETIC", v.io, v.synthetic),
        full_vs_slower=None
        if full is None or full.comparison is None or slower is None
        else _comparison(full.comparison, full.slower, "FULL", slower, v.full_values),
        outcome=v.label,
        inconsistent=None if full is None else v.inconsistent,
    )


def stages_block(results: RunResults) -> Optional[model.Stages]:
    """The JSON's ``stages``: the stage trials' report, or why they did not run (None: neither)."""
    report = results.stages
    if report is None:
        return None if results.stages_skipped is None else model.Stages(skipped=_skipped(results.stages_skipped))
    top, advice = report.largest, report.advice
    slow, named = report.slowest, report.straggler
    return model.Stages(
        period_seconds=report.period,
        throughput=report.throughput,
        batches=report.batches,
        workers=report.workers,
        trials=list(report.trials),
        stages=[
            model.Stage(
                name=reports.stage_name(st),
                where=st.where,
                seconds_per_batch=st.seconds,
                share=st.share,
                note=st.kind.words or None,
                off_cpu_share=st.off_cpu,
            )
            for st in report.stages
        ],
        unexplained_share=report.unexplained,
        workers_busy_share=report.worker_busy,
        largest=None if top is None else reports.stage_name(top),
        advice=None if advice is None else advice.words(),
        transforms=report.split,
        per_worker=list(report.per_worker),
        slow_worker=None if named is None else model.SlowWorker(worker=named.worker, ratio=named.ratio),
        slowest_worker_cost=None
        if slow is None or report.workers < 2
        else model.SlowestWorkerCost(worker=slow.worker, ratio=slow.ratio, io_share=slow.cost),
        out_of_order_batches=report.out_of_order,
        head_of_line_share=report.hol_share,
        in_order_available=report.in_order,
        first_throughput=report.first_throughput,
        worker_memory=list(report.memory),
        instrumentation_seconds_per_sample=report.instrumentation,
        instrumentation_share=report.timer_share,
        other_skipped=_skipped(results.stages_other_skipped),
    )


def compute_block(report: ComputeReport) -> model.Compute:
    """The JSON's ``compute``: the counted step's FLOPs and the achieved rates, with the peak's sources and why there
    is no MFU or no count, in words."""
    c = report.count
    modes = {
        m.mode.value: model.ComputeMode(flops_per_s=m.flops, interval=m.half_width, mfu=m.mfu, mfu_interval=m.mfu_half_width)
        for m in report.modes
    }
    return model.Compute(
        flops_per_step=c.total,
        flops_per_sample=report.per_sample,
        samples=c.samples,
        counted_in=c.label,
        device=c.device,
        device_type=c.device_type,
        by_dtype=dict(c.by_dtype),
        by_op=dict(c.by_op),
        unknown_ops=list(c.unknown),
        tf32=c.tf32,
        world=report.world,
        peak_flops=None if report.peak is None else report.peak.flops,
        peak_basis=None if report.peak is None else report.peak.words(),
        no_mfu=None if report.no_peak is None else report.no_peak.words(),
        skipped=_skipped(c.skipped),
        **modes,
    )


def whatif_block(w: WhatIf) -> model.WhatIf:
    """The JSON's ``whatif``: the model's figures, with what limits each prediction and what each check measured in
    words."""
    inp, there = w.inputs, w.inputs.other_setting
    return model.WhatIf(
        basis=inp.basis.words,
        inputs=model.WhatIfInputs(
            samples_per_batch=inp.batch,
            workers=inp.workers,
            cores=inp.cores,
            other_cores_busy=inp.other,
            io=list(inp.io),
            step_seconds=list(inp.step),
            step_cores=inp.step_cores,
            worker_seconds_per_batch=inp.loader.worker,
            worker_cpu_share=inp.loader.cpu,
            main_seconds_per_batch=inp.loader.main,
            main_seconds_per_batch_no_workers=inp.loader.main_plain,
            main_cpu_share=inp.loader.main_cpu,
            slow_worker_ratio=inp.loader.slow,
            worker_handover_seconds=inp.loader.handover,
            full=None if inp.full is None else list(inp.full),
            full_step_seconds=inp.full_step,
            step_fixed_share=inp.step_fixed,
            contention=inp.contention,
            contention_loader_rate=inp.contention_rate,
            full_contention=inp.full_contention,
            full_loader_rate=inp.full_rate,
            queue_depth=inp.depth,
            other_workers=None if there is None else inp.other_workers,
            other_worker_seconds_per_batch=None if there is None else there.worker,
            other_main_seconds_per_batch=None if there is None else there.main + there.main_plain,
        ),
        scale=w.scale,
        own=w.own,
        flip_speedup=w.flip,
        flip_speedup_interval=list(w.flip_range),
        needs=list(w.needs),
        predictions=list(w.predictions),
        checks=list(w.checks),
        accelerator_utilization=w.utilization,
        contention=w.contention,
    )


def result_document(
    snapshot: Snapshot,
    modes: Sequence[Mode],
    reading: Reading,
    *,
    config: Mapping[str, Any],
    environment: Mapping[str, Any],
    nranks: int,
    exit_status: Optional[int] = None,
    per_step: bool = True,
    steps_dir: Optional[str] = None,
    summary: Optional[Sequence[str]] = None,
    run_name: Optional[str] = None,
) -> model.Document:
    """The JSON document (``files.write_document`` writes it; the model says what each key holds).

    ``per_step``: include each mode's ``rates`` (checkpoints leave them out: null); ``steps_dir``: where each
    trial's per-step times were saved, next to the JSON (None when not saved). ``exit_status``: the status benchy
    exits with under ``exit_after_tests``, or None when benchy does not end the process. ``reading``: the verdict,
    worked out once by the caller; ``summary``: the summary lines as printed (final document only); ``run_name``:
    the config's, else :func:`default_run_name` of ``environment``.
    """
    results = snapshot.results
    found = reading.verdict
    outcomes = snapshot.outcomes
    blocks = {m.value: _mode_block(results, m, reading, per_step, snapshot.synthetic_batch_samples) for m in modes}
    return model.Document(
        schema_version=SCHEMA_VERSION,
        run_name=run_name or default_run_name(environment),
        source="run",
        complete=snapshot.finished and not outcomes.lost,
        exit_status=exit_status,
        nranks=nranks,
        steps_needed=snapshot.steps_needed,
        epoch_length=snapshot.epoch_length,
        epochs_needed=snapshot.epochs_needed,
        epochs_started=snapshot.epochs_started,
        steps_taken=snapshot.steps_taken,
        interrupted=[
            model.Interrupted(trial=i.spec.label, batches_done=i.batches_done, nbatches=i.spec.nbatches, reason=i.reason.words())
            for i in outcomes.lost
        ],
        peeks=outcomes.peeks,
        side_iterators=outcomes.sides,
        failed_ranks=list(outcomes.failed_ranks),
        disturbed=[t.label for t in disturbed_trials(results)],
        verdict=verdict_line(reading),
        decision=None if found is None else decision_block(found),
        io_skipped=_skipped(results.io_skipped),
        watch=snapshot.watch,
        config=dict(config),
        environment=model.Environment(**environment),
        profiler=snapshot.profiler,
        steps_dir=steps_dir,
        schedule=schedule_block(snapshot.schedule),
        lookahead=snapshot.lookahead,
        counting=run_text.counting(snapshot),
        loader=snapshot.loader,
        other_loaders=list(snapshot.other_loaders),
        sweep=sweep_block(results),
        loader_startup=reading.startup,
        first_pass=reading.first_pass if Mode.IO in modes else None,
        stages=stages_block(results),
        compute=None if reading.compute is None else compute_block(reading.compute),
        tokens=reading.tokens,
        energy=reading.energy,
        whatif=None if reading.whatif is None else whatif_block(reading.whatif),
        summary=None if summary is None else list(summary),
        timeline=timeline_block(results, steps_dir is not None),
        IO=blocks.get("IO"),
        SYNTHETIC=blocks.get("SYNTHETIC"),
        FULL=blocks.get("FULL"),
        IO_H2D=h2d_block(results) if Mode.IO in modes else None,
        EMULATED=emulated_block(results),
        diagnostics=diagnostics_block(results),
    )


# --- reading ---------------------------------------------------------------------------------


def _v1_to_v2(doc: Dict[str, Any]) -> None:
    """Version 1 (0.1.0 and later additions) to 2: name the run and say where it came from; a mode's trials had no
    system figures, FULL no data wait."""
    env = doc.get("environment")
    doc["run_name"] = default_run_name(env if isinstance(env, dict) else {})
    doc["source"] = "run"
    for mode in Mode:
        block = doc.get(mode.value)
        if isinstance(block, dict):
            throughputs = block.get("trial_throughput")
            block.setdefault("system", [None] * (len(throughputs) if isinstance(throughputs, list) else 0))
            if mode is Mode.FULL:
                block.setdefault("data_wait", None)


def upgrade(document: Mapping[str, Any], where: str = "the document", *, in_place: bool = False) -> Tuple[Dict[str, Any], int]:
    """``document`` in the current schema (a copy, or ``document`` itself changed with ``in_place``),
    and the version it was written with."""
    if not isinstance(document, Mapping):
        raise ResultFileError(f"{where}: expected a JSON object (benchy's result), got {type(document).__name__}")
    version = document.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise ResultFileError(f"{where}: no integer 'schema_version' (got {version!r}): not a benchy result file")
    if version > SCHEMA_VERSION:
        raise ResultFileError(
            f"{where}: schema_version {version} was written by a newer benchy; this benchy "
            f"reads versions 1 to {SCHEMA_VERSION}: upgrade benchy to read it"
        )
    if version < 1:
        raise ResultFileError(f"{where}: schema_version {version}; expected 1 to {SCHEMA_VERSION}")
    doc = document if in_place and isinstance(document, dict) else copy.deepcopy(dict(document))
    if version < 2:
        _v1_to_v2(doc)
    profiler = doc.get("profiler")
    if version < 3 and isinstance(profiler, dict):  # the one profiler before version 3: Nsight Systems' capture range
        profiler.setdefault("profiler", "cudaProfilerApi")
    doc["schema_version"] = SCHEMA_VERSION
    return doc, version


# --- reading a checked document ---------------------------------------------------------------


def _mode_run(mode: Mode, block: ModeBlock) -> ModeRun:
    warm = block.warmup
    wait = block.data_wait if mode is Mode.FULL and isinstance(block.data_wait, DataWait) else None
    return ModeRun(
        mode=mode,
        trial_throughputs=tuple(x for x in block.trial_throughput if x is not None),
        trial_times=tuple(block.trial_time),
        trial_samples=tuple(block.trial_samples),
        nbatches=tuple(block.nbatches),
        mean=block.mean,
        interval=block.interval,
        n=block.n,
        confidence=0.95 if block.confidence is None else block.confidence,
        warmup_throughputs=() if warm is None else tuple(x for x in warm.trial_throughput if x is not None),
        rates=None if block.rates is None else tuple(block.rates),
        data_wait=None if wait is None else wait.mean,
        data_wait_interval=None if wait is None else wait.interval,
    )


def read_run(document: Mapping[str, Any], path: Optional[str] = None, *, owned: bool = False) -> Run:
    """The :class:`Run` held by a result document of any readable version, decoded into
    :class:`benchy.results.model.Document` (``owned``: the document is the caller's to change, as one just
    parsed is: upgraded in place rather than copied)."""
    where = path or "the document"
    doc, version = upgrade(document, where, in_place=owned)
    model = check(doc, where)
    modes = {m: _mode_run(m, block) for m in Mode if (block := model.mode(m.value)) is not None}
    return Run(
        name=model.run_name,
        nranks=model.nranks,
        complete=bool(model.complete),
        source=model.source,
        schema_version=version,
        verdict=model.verdict,
        summary=tuple(model.summary or ()),
        modes=modes,
        path=path,
        document=doc,
        model=model,
    )


def load(path: str | os.PathLike[str]) -> Run:
    """Read a result JSON that benchy wrote (any schema version) or that ``benchy parse`` made.

    Raises :class:`ResultFileError` naming the file and what is wrong with it.
    """
    name = os.fspath(path)
    return read_run(read_file(name), name, owned=True)
