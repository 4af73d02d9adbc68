"""The result file's one declaration: a frozen msgspec struct for every object in it, at every depth (pure, no torch).

:class:`Document` is the layout of a result file of the current schema version (older files are upgraded
first, see :mod:`benchy.results.schema`). :mod:`benchy.results.schema` builds a :class:`Document`,
:func:`benchy.results.files.write_document` encodes it, the reader decodes into one
(:mod:`benchy.results.document`), and the documentation's tables of the keys are generated from the same classes
(:func:`rows`, :func:`top_rows`): each field's type, its bounds (``Meta`` constraints: ``ge``, ``le``, list lengths)
and its words (``Meta(description=...)``). A key the model does not declare is
kept by the reader in :attr:`benchy.results.saved.Run.document` but not read.

A field whose object is written only where it applies (``parsed_from``, a mode's ``tokens``, ``ranks``,
``data_wait`` and ``batch_samples``, a sweep trial's ``setting``) defaults to :data:`msgspec.UNSET`, which
the encoder leaves out; every other key is written, null where nothing was measured.
"""

from __future__ import annotations

import json
import typing
from typing import Annotated, Any, ClassVar, Dict, Iterator, List, Literal, Optional, Tuple, Union

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from ..core.compute import EnergyReport, TokenReport
from ..core.diagnostics import ContentionRun, StepParts
from ..core.distribution import StepProfile
from ..core.outcomes import FailedRank
from ..core.record import (
    MAX_MAGNITUDE,
    Count,
    Fraction,
    Index,
    Mode,
    Number,
    Numbers,
    Pair,
    Record,
    Seconds,
    Triple,
    UnixTime,
)
from ..core.results import ProfilerState, RankSummary, SystemFigures, TokenCount, WindowSpan
from ..core.stages import FirstPass, WorkerMemory, WorkerStat
from ..core.startup import Startup
from ..core.sweep import Setting
from ..core.watch import Watch
from ..core.whatif import Check, Need, Prediction


def _d(text: str) -> Meta:
    return Meta(description=text)


def _keys(names: str) -> Meta:
    """An object's keys are the writer's choosing: what they name (``dtypes``), for its words."""
    return Meta(extra={"keys": names})


# --- a mode's trials ------------------------------------------------------------------------


class Warmup(Record, frozen=True, kw_only=True):
    trial_throughput: Numbers = []
    trial_time: List[Seconds] = []
    trial_samples: List[Count] = []
    system: List[Optional[SystemFigures]] = []


class Ranks(Record, frozen=True, kw_only=True):
    trial_throughput: List[Numbers] = []
    trial_time: List[List[Optional[Number]]] = []
    trial_samples: List[List[Count]] = []
    spread: Numbers = []
    mean_trial_time: Numbers = []
    straggler: Optional[str] = None
    summarised: Optional[bool] = None
    trials: List[Optional[RankSummary]] = []


class DataWait(Record, frozen=True, kw_only=True):
    mean: Optional[Number] = None
    interval: Optional[Number] = None
    confidence: Optional[Number] = None
    trials: Numbers = []
    labels: List[str] = []
    wait_median_s: Numbers = []
    step_median_s: Numbers = []


MODE_WORDS = (
    "per mode (throughputs of all ranks together; `rates` are rank 0's own steps), one entry per counted "
    "trial: `rates` (per-step throughputs; null in checkpoints), `avg_iter_throughput`, "
    "`trial_throughput`, `trial_time` (the original's keys), and ours: `trial_samples`, `nbatches`, `mean`, "
    "`interval` (half-width or null), `confidence`, `n`, `warmup` (the warm-ups' throughputs, times, "
    "samples); with several ranks `ranks` (see Distributed runs); `steps` (final JSON; null in checkpoints, "
    "like `rates`): `p50_s`, `p90_s`, `p99_s`, `steps`, `stall_factor` (3), `stalls`, `stall_share`, "
    "`stall_period` (null when not periodic); `SYNTHETIC.batch_samples`: the size of the one cached batch; "
    "`FULL.data_wait`: `mean`, `interval`, `confidence`, `trials` (fractions of each counted trial's time "
    "spent waiting for the loader), `labels`, `wait_median_s`, `step_median_s` (null when no trial could "
    "split its time: a loop fetching one batch ahead); `system` (and `warmup.system`): one entry per trial, "
    "null when not sampled, else `seconds`, `readings`, `cpu_cores_busy` (CPU seconds of the process and its "
    "children, i.e. loader workers, per second of the trial), `cpu_cores` (cores this process may use), "
    "`cpu_util`, `processes`, `rss_max_bytes` (peak of the sum over the processes: pages shared with workers "
    "count in each), `read_bytes_per_s` (storage reads, page-cache hits excluded), `loader_read_chars_per_s` "
    "(bytes the loader read through read(), page cache included: its workers', or the process's own without "
    "workers), `other_cores_busy` (CPU seconds per second that the rest of the machine, hypervisor steal "
    "included, took on the cores this process may use; null when the trial is too short for the kernel's 10 "
    "ms CPU counters to tell it within a tenth of the cores), `disturbed` (other processes certainly took "
    "more than `busy_machine_share` of them), and with `nvidia-ml-py` and CUDA in use `gpu_util`, "
    "`gpu_memory_bytes`, `gpu_power_w` (means); all rank 0's own"
)


class ModeBlock(Record, frozen=True, kw_only=True):
    what: ClassVar[str] = "an object with the mode's trials"
    rates: Optional[List[Numbers]] = None
    avg_iter_throughput: Numbers = []
    trial_throughput: Numbers = []
    trial_time: List[Seconds] = []
    trial_samples: List[Count] = []
    nbatches: List[Count] = []
    mean: Optional[Number] = None
    interval: Optional[Number] = None
    confidence: Optional[Fraction] = None
    n: Optional[Count] = None
    warmup: Optional[Warmup] = None
    steps: Optional[StepProfile] = None
    system: List[Optional[SystemFigures]] = []
    tokens: Union[List[Optional[TokenCount]], UnsetType] = UNSET
    data_wait: Union[DataWait, UnsetType, None] = UNSET
    ranks: Union[Ranks, UnsetType, None] = UNSET
    batch_samples: Union[Count, UnsetType, None] = UNSET


# --- the timeline and the sweep -------------------------------------------------------------


class TimelineTrial(Record, frozen=True, kw_only=True):
    what: ClassVar[str] = "a trial of the timeline"
    plural: ClassVar[str] = "trials of the timeline"
    trial: str
    mode: Mode
    group: Optional[str] = None
    warmup: Optional[bool] = None
    profiled: Optional[bool] = None
    started: Optional[UnixTime] = None
    own_seconds: Optional[Seconds] = None
    seconds: Optional[Seconds] = None
    nbatches: Optional[Count] = None
    samples: Optional[Count] = None
    steps_file: Optional[bool] = None
    rank_started: Optional[List[UnixTime]] = None
    rank_seconds: Optional[List[Seconds]] = None
    window: Optional[WindowSpan] = None
    setting: Union[Setting, UnsetType, None] = UNSET


class Timeline(Record, frozen=True, kw_only=True):
    trials: List[TimelineTrial]
    clock: Optional[str] = None


class SweepWarmup(Record, frozen=True, kw_only=True):
    trial_throughput: Numbers = []


class SweepSetting(Record, frozen=True, kw_only=True):
    what: ClassVar[str] = "a setting with its trials"
    plural: ClassVar[str] = "settings with their trials"
    settings: Setting
    trial_throughput: Numbers = []
    trial_time: List[Seconds] = []
    trial_samples: List[Count] = []
    warmup: Optional[SweepWarmup] = None
    mean: Optional[Number] = None
    interval: Optional[Number] = None
    n: Optional[Count] = None
    error: Optional[str] = None
    workers_memory_bytes: Optional[Number] = None
    over_memory_cap: Optional[bool] = None


class Sweep(Record, frozen=True, kw_only=True):
    own: Optional[Setting] = None
    settings: List[SweepSetting] = []
    best: Optional[Setting] = None
    smallest_within_5pct: Optional[Setting] = None
    feeds_synthetic: Optional[Setting] = None
    applied: Optional[Setting] = None
    memory_cap_bytes: Optional[Number] = None


# --- the loader's side ----------------------------------------------------------------------


class Stage(Record, frozen=True, kw_only=True):
    what: ClassVar[str] = "a stage"
    name: Optional[str] = None
    where: Optional[str] = None
    seconds_per_batch: Optional[Number] = None
    share: Optional[Number] = None
    note: Optional[str] = None
    off_cpu_share: Optional[Number] = None


class SlowWorker(Record, frozen=True, kw_only=True):
    worker: Optional[Index] = None
    ratio: Optional[Number] = None


class SlowestWorkerCost(SlowWorker, frozen=True, kw_only=True):
    io_share: Optional[Number] = None


class Stages(Record, frozen=True, kw_only=True):
    skipped: Optional[str] = None
    period_seconds: Optional[Number] = None
    throughput: Optional[Number] = None
    batches: Optional[Count] = None
    workers: Optional[Count] = None
    trials: List[str] = []
    stages: List[Stage] = []
    unexplained_share: Optional[Number] = None
    workers_busy_share: Optional[Number] = None
    largest: Optional[str] = None
    advice: Optional[str] = None
    transforms: Optional[str] = None
    per_worker: List[WorkerStat] = []
    slow_worker: Optional[SlowWorker] = None
    slowest_worker_cost: Optional[SlowestWorkerCost] = None
    out_of_order_batches: Optional[Count] = None
    head_of_line_share: Optional[Number] = None
    in_order_available: Optional[bool] = None
    first_throughput: Optional[Number] = None
    worker_memory: List[WorkerMemory] = []
    instrumentation_seconds_per_sample: Optional[Number] = None
    instrumentation_share: Optional[Number] = None
    other_skipped: Optional[str] = None


# --- compute, tokens, energy ----------------------------------------------------------------


class ComputeMode(Record, frozen=True, kw_only=True):
    flops_per_s: Optional[Number] = None
    interval: Optional[Number] = None
    mfu: Optional[Number] = None
    mfu_interval: Optional[Number] = None


class Compute(Record, frozen=True, kw_only=True):
    flops_per_step: Optional[Number] = None
    flops_per_sample: Optional[Number] = None
    samples: Optional[Count] = None
    counted_in: Optional[str] = None
    device: Optional[str] = None
    device_type: Optional[str] = None
    by_dtype: Annotated[Dict[str, Number], _keys("dtypes")] = {}
    by_op: Annotated[Dict[str, Number], _keys("op names")] = {}
    unknown_ops: List[str] = []
    tf32: Optional[bool] = None
    world: Optional[Count] = None
    peak_flops: Optional[Number] = None
    peak_basis: Optional[str] = None
    no_mfu: Optional[str] = None
    skipped: Optional[str] = None
    IO: Optional[ComputeMode] = None
    SYNTHETIC: Optional[ComputeMode] = None
    FULL: Optional[ComputeMode] = None


# --- the what-if model ----------------------------------------------------------------------


class WhatIfInputs(Record, frozen=True, kw_only=True):
    samples_per_batch: Optional[Number] = None
    workers: Optional[Count] = None
    cores: Optional[Number] = None
    other_cores_busy: Optional[Number] = None
    io: Optional[Triple] = None
    step_seconds: Optional[Triple] = None
    step_cores: Optional[Number] = None
    worker_seconds_per_batch: Optional[Number] = None
    worker_cpu_share: Optional[Number] = None
    main_seconds_per_batch: Optional[Number] = None
    main_seconds_per_batch_no_workers: Optional[Number] = None
    main_cpu_share: Optional[Number] = None
    slow_worker_ratio: Optional[Number] = None
    worker_handover_seconds: Optional[Number] = None
    full: Optional[Triple] = None
    full_step_seconds: Optional[Number] = None
    step_fixed_share: Optional[Number] = None
    contention: Optional[Number] = None
    contention_loader_rate: Optional[Number] = None
    full_contention: Optional[Number] = None
    full_loader_rate: Optional[Number] = None
    queue_depth: Optional[Count] = None
    other_workers: Optional[Count] = None
    other_worker_seconds_per_batch: Optional[Number] = None
    other_main_seconds_per_batch: Optional[Number] = None


class WhatIf(Record, frozen=True, kw_only=True):
    basis: Optional[str] = None
    inputs: Optional[WhatIfInputs] = None
    scale: Optional[Number] = None
    own: Optional[Prediction] = None
    flip_speedup: Optional[Number] = None
    flip_speedup_interval: Optional[Pair] = None
    needs: List[Need] = []
    predictions: List[Prediction] = []
    checks: List[Check] = []
    accelerator_utilization: Optional[Number] = None
    contention: Optional[Number] = None


# --- the windows after the verdict, the emulated step, IO_H2D -------------------------------


class DiagnosticTrial(Record, frozen=True, kw_only=True):
    label: Optional[str] = None
    throughput: Optional[Number] = None
    seconds: Optional[Seconds] = None


class Diagnostics(Record, frozen=True, kw_only=True):
    trials: List[DiagnosticTrial] = []
    parts: Optional[StepParts] = None
    contention: Optional[ContentionRun] = None
    skipped: List[str] = []


class Emulated(Record, frozen=True, kw_only=True):
    speedup: Optional[Number] = None
    skipped: Optional[str] = None
    step_seconds: Optional[Number] = None
    trial_throughput: Numbers = []
    trial_time: List[Seconds] = []
    trial_samples: List[Count] = []
    mean: Optional[Number] = None
    interval: Optional[Number] = None
    n: Optional[Count] = None


class H2D(Record, frozen=True, kw_only=True):
    device: Optional[str] = None
    skipped: Optional[str] = None
    trial_throughput: Numbers = []
    trial_time: List[Seconds] = []
    trial_samples: List[Count] = []
    mean: Optional[Number] = None
    interval: Optional[Number] = None
    n: Optional[Count] = None
    vs_io: Optional[Number] = None
    system: List[Optional[SystemFigures]] = []


# --- how the verdict was reached, the run's settings ----------------------------------------


class Comparison(Record, frozen=True, kw_only=True):
    method: Optional[str] = None
    ratio: Optional[str] = None
    value: Optional[Number] = None
    interval: Optional[Pair] = None
    confidence: Optional[Number] = None
    t: Optional[Number] = None
    df: Optional[Number] = None
    p: Optional[Number] = None
    inputs: Annotated[Dict[str, Numbers], _keys("modes")] = {}


class Decision(Record, frozen=True, kw_only=True):
    io_vs_synthetic: Optional[Comparison] = None
    full_vs_slower: Optional[Comparison] = None
    outcome: Optional[str] = None
    inconsistent: Optional[bool] = None


class Imprecise(Record, frozen=True, kw_only=True):
    what: ClassVar[str] = "an imprecise figure"
    plural: ClassVar[str] = "imprecise figures"
    share: Optional[Number] = None
    trials: Optional[Count] = None
    more_steps: Optional[Count] = None
    capped: Optional[bool] = None


class Schedule(Record, frozen=True, kw_only=True):
    adaptive: Optional[bool] = None
    precision: Optional[Number] = None
    windows_needed: Optional[Count] = None
    windows_fewest: Optional[Count] = None
    epochs_needed: Optional[Count] = None
    epochs_fewest: Optional[Count] = None
    order: List[str] = []
    warmups: Annotated[Dict[str, Count], _keys("modes")] = {}
    decision_confidence: Optional[Number] = None
    stop_reason: Optional[str] = None
    stop: Optional[str] = None
    extras: List[str] = []
    extras_not_run: Annotated[Dict[str, str], _keys("extras")] = {}
    loop_steps: Optional[Count] = None
    measuring_steps: Optional[Count] = None
    measuring_seconds: Optional[Number] = None
    decided_steps: Optional[Count] = None
    decided_seconds: Optional[Number] = None
    loader_round: Optional[Count] = None
    figure_precision: Optional[Number] = None
    imprecise: Annotated[Dict[str, Imprecise], _keys("modes")] = {}


class Environment(Record, frozen=True, kw_only=True):
    benchy_version: Optional[str] = None
    torch_version: Optional[str] = None
    python_version: Optional[str] = None
    platform: Optional[str] = None
    host: Optional[str] = None
    cpu_count: Optional[Count] = None
    device: Optional[str] = None
    world_size: Optional[Count] = None
    argv: List[str] = []
    time_utc: Optional[str] = None


class Interrupted(Record, frozen=True, kw_only=True):
    what: ClassVar[str] = "a trial that did not count"
    plural: ClassVar[str] = "trials that did not count"
    trial: Optional[str] = None
    batches_done: Optional[Count] = None
    nbatches: Optional[Count] = None
    reason: Optional[str] = None


# --- the document ---------------------------------------------------------------------------


class Document(Record, frozen=True, kw_only=True):
    """A result file (the current schema version): every key at the top, in the order written."""

    what: ClassVar[str] = "a JSON object (benchy's result)"
    schema_version: Annotated[
        int, Meta(ge=1, description="the layout's version (see Comparing and reporting runs for the versions)")
    ]
    run_name: Annotated[
        str,
        _d(
            "the run's name: `global.run_name`, `$BENCHY_RUN_NAME` or `--benchy_name`, else the script's name and "
            "start time (`train_cnn 2026-11-23T01:34:36Z`)"
        ),
    ]
    source: Annotated[
        Literal["run", "log"],
        _d(
            "`run` (written by a run), or `log` (made by `benchy parse` from a log: then `parsed_from` names the log,"
            " and what a log lacks is empty or null)"
        ),
    ] = "run"
    parsed_from: Annotated[Union[str, UnsetType, None], _d("only in a file made by `benchy parse`: the log it was read from")] = (
        UNSET
    )
    complete: Annotated[bool, _d("true when the schedule ran to its end and every trial it ran counted")] = False
    exit_status: Annotated[
        Optional[Annotated[int, Meta(ge=0, le=255)]],
        _d(
            "the status benchy advises for CI (see Exit status): 0 once the schedule ended with every mode counted, "
            "3 when a mode has none (the status benchy ends the process with under `exit_after_tests`), 4 in a "
            "checkpoint and wherever the benchmark did not finish (the script ended first, a signal, an error); "
            "`benchy run` and `benchy check` report it, the script's own process keeps its status; null in files "
            "of older versions that did not say"
        ),
    ] = None
    nranks: Annotated[int, Meta(ge=1, extra={"what": "the number of ranks"}, description="number of ranks")] = 1
    steps_needed: Annotated[
        Optional[Count], _d("the most steps of the loop the schedule's windows take (an estimate made before they run)")
    ] = None
    epoch_length: Annotated[Optional[Count], _d("the loader's own batches per epoch (null without a length)")] = None
    epochs_needed: Annotated[
        Optional[Count],
        _d(
            "the epochs of the loop's own length those steps take (the loader's, or the steps the loop took of each "
            "where it leaves every epoch early; null where that length is unknown, or too short for a window to "
            "measure anything in it)"
        ),
    ] = None
    epochs_started: Annotated[
        Optional[Count],
        _d(
            "how many epochs the loop started since the benchmark began (a peek, an epoch that ended after at most "
            "one batch, is not one: see `peeks`)"
        ),
    ] = None
    steps_taken: Annotated[Optional[Count], _d("the loop's steps since the benchmark began")] = None
    interrupted: Annotated[
        List[Interrupted],
        _d(
            "every scheduled trial that did not count: `trial`, `batches_done` (the periods it had measured), "
            "`nbatches`, `reason`"
        ),
    ] = []
    rerun: Annotated[
        List[Any], _d("always empty: no trial runs again (a window goes on in the next epoch); kept for readers of older files")
    ] = []
    peeks: Annotated[
        Optional[Count],
        _d(
            "the loop's epochs that ended after at most one batch (`next(iter(loader))`: a window in progress "
            "went on in the next one)"
        ),
    ] = None
    side_iterators: Annotated[
        Optional[Count], _d("`iter()` calls served by the plain loader while the loop's epoch ran (a peek inside the loop)")
    ] = None
    failed_ranks: Annotated[
        List[FailedRank],
        _d(
            "ranks whose training ended with an uncaught exception while the schedule ran, as each said before it "
            "ended: `rank`, `reason` (empty when none did)"
        ),
    ] = []
    disturbed: Annotated[List[str], _d("the counted trials that ran on a busy machine (see `system.disturbed`)")] = []
    verdict: Annotated[Optional[str], _d("the verdict text, or null")] = None
    decision: Annotated[
        Optional[Decision],
        _d(
            "how the verdict was reached: `io_vs_synthetic` and `full_vs_slower` (each `method`, `ratio`, `value`, "
            "`interval`, `confidence`, `t`, `df`, `p`, `inputs`), `outcome`, `inconsistent`"
        ),
    ] = None
    io_skipped: Annotated[
        Optional[str],
        _d(
            "why no IO trial ran though the configuration asked for them (the loader hands out one iterator that the "
            "loop reads too, so benchy's own passes would take the loop's batches); null: they ran, or were not asked"
        ),
    ] = None
    watch: Annotated[
        Optional[Watch],
        _d(
            "the watch over the epochs after the schedule, where the training went on (written at the process's end; "
            "null: no whole epoch ran after it): `baseline` (FULL's `data_wait`, `interval`, `throughput`, "
            "`read_bytes_per_s`, `cpu_cores_busy`), `epochs` (each `epoch`, `steps` after its first, `seconds`, "
            "`throughput`, `data_wait`, `read_bytes_per_s`, `cpu_cores_busy`, `rise`; the first 1 000 and the rises "
            "after them), `watched`, `rises`, `first_rise`"
        ),
    ] = None
    config: Annotated[
        Optional[Annotated[Dict[str, Any], _keys("sections")]], _d("the effective configuration, in the file's layout")
    ] = None
    environment: Annotated[
        Optional[Environment],
        _d("benchy, torch and Python versions, platform, host, CPU count, device, world size, argv, time"),
    ] = None
    profiler: Annotated[
        Optional[ProfilerState],
        _d(
            "`nvtx_tool_attached`, `profiler` (`cudaProfilerApi` or `torch`), `profiler_mode`, `capture` (the kinds, "
            "`auto` resolved), `events` (the cudaProfilerStart/Stop calls made, or why none; with `profiler: torch` "
            "each trace written), `torch_trace_dir` (`benchy_result.profile`), `torch_traces` (rank 0's files), "
            "`torch_trace_write_s` (seconds each took to write)"
        ),
    ] = None
    steps_dir: Annotated[
        Optional[str],
        _d(
            "the directory of per-step files, relative to the JSON (`benchy_result.steps`), or null (`save_steps: "
            "false`, or it could not be written: a warning said why)"
        ),
    ] = None
    schedule: Annotated[
        Optional[Schedule],
        _d(
            "`adaptive` (some count is `auto`), `precision`, `windows_needed`, `windows_fewest` (SYNTHETIC and FULL "
            "windows at the most and the fewest), `order` (the trials in the order they ran), `warmups` (warm-up "
            "trials run per mode), `decision_confidence`, `stop` (why measuring ended: `decided`, `precise`, "
            "`budget`, `all-ran`, `horizon`, `nothing`) and `stop_reason` (the same in words), `extras` (what runs "
            "after the verdict, most useful first), `extras_not_run` (each one not run, and why), `loop_steps` (the "
            "loop's steps in all, where known: the windows fit inside them), `measuring_steps` and `measuring_seconds` "
            "(the loop's steps and the seconds from the benchmark's start until measuring stopped: the final figures), "
            "`decided_steps` and `decided_seconds` (until the verdict was first decided; null: never), `loader_round` "
            "(the batches of one round of the loader's workers: IO trials and FULL windows are whole rounds), "
            "`figure_precision` (a decided verdict stops measuring once each mode's 95 % interval is within this "
            "share of its mean) and `imprecise` (each mode whose interval is wider at the end: `share`, its half-width "
            "over its mean, null with one trial; `trials`; `more_steps`, the loop's further steps that would likely "
            "settle it, null where unknown; `capped`, it ran all the trials the schedule allows)"
        ),
    ] = None
    lookahead: Annotated[
        Optional[bool],
        _d(
            "true when the loop fetches one batch ahead (seen in a SYNTHETIC window that began an epoch: its first "
            "period held no step), false when not, null when no such window ran"
        ),
    ] = None
    counting: Annotated[Optional[str], _d("how samples are counted in a batch (see Counting samples)")] = None
    loader: Annotated[Optional[str], _d("the benchmarked wrapper (`BenchmarkDataLoader created at train.py:30`)")] = None
    other_loaders: Annotated[List[str], _d("the plain loaders, where each was created")] = []
    sweep: Annotated[
        Optional[Sweep],
        _d(
            "null without a sweep; else `own` (the loader's settings), `settings` (per setting: `settings` "
            "{`num_workers`, `pin_memory`, `prefetch_factor`}, `trial_throughput`, `trial_time`, `trial_samples`, "
            "`warmup`, `mean`, `interval`, `n`, `error`), `best`, `smallest_within_5pct`, `feeds_synthetic` (the "
            "cheapest setting with IO >= 1.1x SYNTHETIC, or null), `applied` (with `sweep_apply`), "
            "`memory_cap_bytes`; per setting also `workers_memory_bytes` and `over_memory_cap`"
        ),
    ] = None
    loader_startup: Annotated[
        Optional[Startup],
        _d(
            "`seconds` (each pass's iter() to its first batch), `started` (each pass's iter(), Unix seconds), "
            "`typical`, `basis`, `batch_seconds` (IO's median period), `extra`, `epoch_batches` (`len(loader)`), "
            "`epoch_seconds` (at the FULL rate: `len(loader)` times the mean FULL period), `share`, `workers`, "
            "`persistent_workers`; null before any pass"
        ),
    ] = None
    first_pass: Annotated[
        Optional[FirstPass],
        _d(
            "`first_trial` (IO_WARMUP_1; IO_1 when IO has no warm-up, against the later IO trials), "
            "`first_throughput`, `steady_throughput` (IO's mean), `ratio`, `files_read_bytes` (what the loader read "
            "through read(): its workers', or the process's without workers), `storage_read_bytes`, `warm_cache`; "
            "null without both"
        ),
    ] = None
    stages: Annotated[
        Optional[Stages],
        _d(
            "null when IO did not run; `skipped` (why they did not run, the other keys null or empty), or null and "
            "`period_seconds`, `throughput`, `batches`, `workers`,"
            " `trials`, `stages` (each `name`, `where`: workers, main or pin thread, `seconds_per_batch`, `share`, "
            "`note`, `off_cpu_share` for the dataset), `unexplained_share`, `workers_busy_share`, `largest`, "
            "`advice`, `transforms` (how they were found, or why not), `per_worker` (`worker`, `batches`, "
            "`busy_seconds`, `idle_seconds`, `busy_share`, `seconds_per_batch`), `slow_worker` (`worker`, `ratio`, "
            "or null), `slowest_worker_cost` (`worker`, `ratio`, `io_share`: see Loader stages), "
            "`out_of_order_batches`, `head_of_line_share`, `in_order_available`, `first_throughput` (the "
            "stage warm-up's), `worker_memory` (`worker`, `uss_bytes`, `pss_bytes`, `rss_bytes`), "
            "`instrumentation_seconds_per_sample`, `instrumentation_share` (the timers' cost as a share of the "
            "period, part of the unexplained share), `other_skipped` (why the stage trials at the what-if model's "
            "other setting stopped, the model then taking the run's own setting's costs for both sides; null where "
            "they ran or were not asked for)"
        ),
    ] = None
    compute: Annotated[
        Optional[Compute],
        _d(
            "null with `flops: false`; `flops_per_step`, `flops_per_sample`, `samples` (the counted batch's), "
            "`counted_in` (the trial whose extra step was counted), `device`, `device_type`, `by_dtype` (FLOPs per "
            "dtype: `float32`, `tf32` for float32 matmuls and convolutions that torch lets use TF32, `bfloat16` ...),"
            " `by_op` (FLOPs per aten op), `unknown_ops` (compute-heavy ops the counter has no formula for), `tf32`, "
            "`world`, `peak_flops` (a device's, for the step's dtype mix; null without one), `peak_basis` (each "
            "figure and its source), `no_mfu` (why not), `skipped` (why no count was made); per mode `SYNTHETIC`, "
            "`FULL`: `flops_per_s` (all ranks), `interval`, `mfu`, `mfu_interval`"
        ),
    ] = None
    tokens: Annotated[
        Optional[TokenReport],
        _d(
            "null unless `count: tokens`; `source` (what was counted), per mode `tokens_per_s` (non-padding tokens, "
            "all ranks), `interval`, `n`, `padding` (share of the positions), `mask_every` (the mask summed on 1 in "
            "this many batches); each mode's block also gets `tokens`: per counted trial `samples`, `tokens`, "
            "`sampled_tokens`, `real_tokens`, `batches`, `sampled_batches`, `every`, `masked`"
        ),
    ] = None
    energy: Annotated[
        Optional[EnergyReport],
        _d(
            "null without system metrics; `sources`, `missing` (why none), per mode `joules_per_trial` "
            "(`gpu_energy_j`, `cpu_energy_j`: means) and `joules_per_sample` (rank 0's own devices and samples); per "
            "trial `system.gpu_energy_j`, `gpu_energy_source`, `cpu_energy_j`, `cpu_energy_source`, or "
            "`energy_missing`"
        ),
    ] = None
    whatif: Annotated[
        Optional[WhatIf],
        _d(
            "null with `whatif: false`; the what-if model (see What a change would give): `basis` (what the loader's "
            "costs come from, in words), `inputs` (its figures: `samples_per_batch`, `workers`, `cores`, "
            "`other_cores_busy`, `io` and `step_seconds` as [low, mean, high], `step_cores`, the loader's costs a "
            "batch `worker_seconds_per_batch`, `worker_cpu_share`, `main_seconds_per_batch`, "
            "`main_seconds_per_batch_no_workers`, `main_cpu_share`, `slow_worker_ratio`, `worker_handover_seconds`, "
            "FULL's `full` and `full_step_seconds`, `step_fixed_share` (PARTS_1), `contention`, "
            "`contention_loader_rate`, `full_contention`, `full_loader_rate`, `queue_depth`: num_workers x prefetch_factor, "
            "and the loader's costs at the other setting, `other_workers` (0 where the loader has workers; where it "
            "has none 2, or 1 on a single core; null: not measured, see the stage trials' `other_skipped`), "
            "`other_worker_seconds_per_batch`, `other_main_seconds_per_batch`), "
            "`scale`, `own` (the run as it is), `flip_speedup` (the step's speed-up from which loading limits FULL) and "
            "`flip_speedup_interval` (the earliest and the latest the measured intervals allow), `needs` (per speed-up: "
            "`workers`, `workers_interval` (the fewest and the most), `cores`, `full`), `predictions` (each change, "
            "`workers`, `cores`, `speedup`, `free_stage`, with `io`, "
            "`full`, `limit` in words and `naive_full`), `checks` (`what` was measured, `kind`, `change`, "
            "`predicted`, `measured`, `measured_half_width`, `error`, `agree`), `accelerator_utilization`, "
            "`contention`"
        ),
    ] = None
    summary: Annotated[
        Optional[List[str]],
        _d("the run's summary lines as printed (final JSON; null in checkpoints); `benchy summary FILE` reprints them"),
    ] = None
    timeline: Annotated[
        Optional[Timeline],
        _d(
            "`clock` (what its times are), `trials`: every trial that ran, in the order it started: `trial`, `mode`, "
            "`group` (`schedule`, `IO_H2D`, `sweep` with its `setting`, `stages`, `diagnostics`, `emulated`, `flops`: the "
            "FLOPs' count `FLOPS_1` on the cached batch, `lost`: a SYNTHETIC window that did not count, the steps it "
            "ran), "
            "`warmup`, `profiled`, `started` (Unix seconds), `own_seconds` (rank 0's time over its periods), "
            "`seconds` (the slowest rank's), `nbatches`, `samples`, `steps_file` (its per-step file was saved), "
            "`rank_started`, `rank_seconds` (each rank's; null for one process), `window` (SYNTHETIC and FULL: where "
            "the trial ran in the loop, `start_epoch`, `start_step`, `end_epoch`, `end_step` (epochs from 1 since "
            "the benchmark began, peeks not counted; steps of the epoch from 0), `segments` (the epochs' stretches "
            "it ran in), `left_out` (periods not measured: an epoch's first and those that ended in the next "
            "epoch); it holds every step that got the cached batch, untimed ones included, so that a step outside "
            "every window got the loop's own batch; null for IO and side trials)"
        ),
    ] = None
    IO: Annotated[Optional[ModeBlock], _d(MODE_WORDS)] = None
    SYNTHETIC: Annotated[Optional[ModeBlock], _d(MODE_WORDS)] = None
    FULL: Annotated[Optional[ModeBlock], _d(MODE_WORDS)] = None
    IO_H2D: Annotated[
        Optional[H2D],
        _d(
            "`device`, `skipped` (why none ran, or null), `trial_throughput`, `trial_time`, `trial_samples`, `mean`, "
            "`interval`, `n`, `vs_io` (mean / IO's mean), `system` (rank 0's own trials)"
        ),
    ] = None
    EMULATED: Annotated[
        Optional[Emulated],
        _d(
            "the what-if model's check: the real loader with the step replaced by a wait `speedup` times shorter "
            "than SYNTHETIC's (not counted): `speedup`, `skipped` (why it stopped or did not run), `step_seconds`, "
            "`trial_throughput`, `trial_time`, `trial_samples`, `mean`, `interval`, `n`; null where it did not run"
        ),
    ] = None
    diagnostics: Annotated[
        Optional[Diagnostics],
        _d(
            "the windows after the verdict, never counted: `trials` (`label`, `throughput`, `seconds`), `parts` "
            "(PARTS_1: `period_seconds`, `forward_seconds`, `backward_seconds`, `optimizer_seconds`, `rest_seconds`, "
            "`forwards`, `backwards`, `optimizer_steps`, `steps`), `contention` (CONTENTION_1: the step beside the "
            "loader running flat out, `period_seconds`, `steps`, `loader_batches`, `loader_seconds`, "
            "`loader_batches_per_second`, `loader_workers` (the run's own, or where it has none the what-if model's "
            "other setting's), `ended`, `synthetic_period_seconds`, `slowdown`), `skipped` (why one did "
            "not run, in words); null where none ran"
        ),
    ] = None

    def mode(self, name: str) -> Optional[ModeBlock]:
        """The block of mode ``name`` (``"IO"``, ``"SYNTHETIC"``, ``"FULL"``), or None."""
        block: Optional[ModeBlock] = getattr(self, name)
        return block


# --- the document in words: the documentation and the reader's errors --------------------------

_PLURALS = {"number": "numbers", "integer": "integers", "string": "strings", "object": "objects", "list": "lists"}


def _bounds(info: Any) -> str:
    low, high = info.ge, info.le
    if low is not None and (-low >= MAX_MAGNITUDE):
        low = None  # the magnitude every number has: named only when a value passes it
    if high is not None and high >= MAX_MAGNITUDE:
        high = None
    if low is not None and high is not None:
        return f" from {low:g} to {high:g}"
    if low is not None:
        return f" >= {low:g}"
    return ""


def describe(info: Any) -> str:
    """A type of the model (``msgspec.inspect`` info) in words: ``a number from 0 to 1e+11 (Unix seconds) or null``."""
    i = msgspec.inspect
    if isinstance(info, i.Metadata):
        extra = info.extra or {}
        if isinstance(info.type, (i.FloatType, i.IntType)) and "what" in extra:
            return describe(info.type) + f" ({extra['what']})"
        if isinstance(info.type, i.DictType):
            return f"an object of {extra.get('keys', 'names')} to {_plural(info.type.value_type)}"
        return describe(info.type)
    if isinstance(info, i.UnionType):
        kinds = [t for t in info.types if not isinstance(t, i.NoneType)]
        text = " or ".join(describe(t) for t in kinds)
        return text + (" or null" if len(kinds) < len(info.types) and any(isinstance(t, i.NoneType) for t in info.types) else "")
    if isinstance(info, i.FloatType):
        return "a number" + _bounds(info)
    if isinstance(info, i.IntType):
        return "an integer" + _bounds(info)
    if isinstance(info, i.StrType):
        return "a string"
    if isinstance(info, i.BoolType):
        return "true or false"
    if isinstance(info, i.LiteralType):
        return "one of " + ", ".join(json.dumps(v) for v in info.values)
    if isinstance(info, i.EnumType):
        return "one of " + ", ".join(json.dumps(m.value) for m in info.cls)
    if isinstance(info, (i.ListType, i.VarTupleType)):  # a tuple in memory is a list in the file
        size = f"{info.min_length} " if info.min_length is not None and info.min_length == info.max_length else ""
        return f"a list of {size}{_plural(info.item_type)}"
    if isinstance(info, i.DictType):
        return f"an object of names to {_plural(info.value_type)}"
    if isinstance(info, i.StructType):
        return str(getattr(info.cls, "what", "an object"))
    if isinstance(info, i.AnyType):
        return "any JSON value"
    return str(info)


def _plural(info: Any) -> str:
    i = msgspec.inspect
    if isinstance(info, i.UnionType) and any(isinstance(t, i.NoneType) for t in info.types):
        inner = [t for t in info.types if not isinstance(t, i.NoneType)]
        return " or ".join(_plural(t) for t in inner) + " (or nulls)"
    if isinstance(info, i.StructType):
        return str(getattr(info.cls, "plural", "objects"))
    if isinstance(info, i.AnyType):
        return "any JSON values"
    text = describe(info)
    for article in ("an ", "a "):
        if text.startswith(article):
            first, _, rest = text[len(article) :].partition(" ")
            return f"{_PLURALS.get(first, first)} {rest}".rstrip()
    return text


def inner(hint: Any) -> Any:
    """The type a field's hint holds when it holds something: ``Annotated`` and ``Optional`` (and ``UNSET``) taken
    off. The documentation's tables and the reader's errors walk the model by it."""
    while True:
        origin = typing.get_origin(hint)
        if origin is Annotated:
            hint = typing.get_args(hint)[0]
        elif origin is Union:
            kinds = [t for t in typing.get_args(hint) if t not in (type(None), UnsetType)]
            if len(kinds) != 1:
                return hint
            hint = kinds[0]
        else:
            return hint


def _description(hint: Any) -> str:
    """A field's words: the ``description`` of the ``Meta`` its hint carries."""
    if typing.get_origin(hint) is Annotated:
        for meta in typing.get_args(hint)[1:]:
            if isinstance(meta, Meta) and meta.description:
                return meta.description
    return ""


def children(hint: Any) -> Iterator[Tuple[str, Any, bool]]:
    """(suffix, hint, required) of the values inside a value of ``hint``: ``.key`` (a struct's field, by the name
    the file uses), ``[]`` (a list's items), ``.<name>`` (an open object's values)."""
    found = inner(hint)
    if isinstance(found, type) and issubclass(found, Struct):
        for f in msgspec.structs.fields(found):
            yield f".{f.encode_name}", f.type, f.required
    elif typing.get_origin(found) in (list, tuple):  # a tuple in memory (``Tuple[X, ...]``) is a list in the file
        yield "[]", typing.get_args(found)[0], False
    elif typing.get_origin(found) is dict:
        yield ".<name>", typing.get_args(found)[1], False


def rows(hint: Any = Document, path: str = "") -> List[Tuple[str, str, bool, str]]:
    """(key path, what it may hold, whether a file must have it, its words) for every key :class:`Document`
    declares, depth first (``[]``: each item of a list; ``.<name>``: each key of an open object)."""
    out: List[Tuple[str, str, bool, str]] = []
    for suffix, child, required in children(hint):
        key = (path + suffix) if path else suffix.lstrip(".")
        out.append((key, describe(msgspec.inspect.type_info(child)), required, _description(child)))
        out.extend(rows(child, key))
    return out


def top_rows() -> List[Tuple[Tuple[str, ...], str]]:
    """(keys, words) for the document's top-level keys, neighbours with the same words as one entry."""
    out: List[Tuple[Tuple[str, ...], str]] = []
    for f in msgspec.structs.fields(Document):
        text = _description(f.type)
        if out and out[-1][1] == text:
            out[-1] = (out[-1][0] + (f.encode_name,), text)
        else:
            out.append(((f.encode_name,), text))
    return out
