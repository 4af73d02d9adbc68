"""A saved run as a Chrome trace-event file (``benchy trace``): pure, no torch, nothing run again. The layout
and the bound on events: docs/guide/timeline.md.

Complete events on one thread nest: every time is worked out in integer nanoseconds, so a child never ends
after its parent. A step is laid after the one before it from the trial's start: benchy's own pauses (periodic
lines) are out of the steps, so the last step can end a little before the trial's clock stopped.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import IO, Any, Dict, List, Mapping, Optional, Sequence, Tuple

import msgspec
import numpy as np

from ..core.results import WindowSpan
from ..core.sweep import Setting
from . import model
from . import steps as step_files
from .saved import Run

MAX_EVENTS = 200_000
PLURAL = {"fetch": "fetches", "step": "steps", "batch": "batches"}

# Threads of each rank's process, in the order drawn.
TRACKS = {"IO": 1, "SYNTHETIC": 2, "FULL": 3, "IO_H2D": 4, "loader sweep": 5, "loader stages": 6, "loader start-up": 7}
GROUP_TRACKS = {"sweep": "loader sweep", "IO_H2D": "IO_H2D", "stages": "loader stages"}
# Counters from the system readings: (file field, counter name, series, scale).
COUNTERS = (
    ("cpu_cores_busy", "CPU cores busy", "cores", 1.0),
    ("rss_bytes", "RSS (MB)", "MB", 1e-6),
    ("gpu_util", "GPU utilization (%)", "%", 100.0),
    ("gpu_memory_bytes", "GPU memory (MB)", "MB", 1e-6),
)


class TraceError(ValueError):
    """The run cannot be drawn (no timeline: an older file or a parsed log)."""


@dataclass
class TraceStats:
    """What was written: the events, the step block (1: every step drawn), the processes and notes."""

    events: int = 0
    block: int = 1
    processes: int = 0
    notes: List[str] = field(default_factory=list)


def _us(ns: int) -> str:
    """Integer nanoseconds as microseconds with three exact decimals (JSON number text)."""
    whole, part = divmod(abs(ns), 1000)
    return f"{'-' if ns < 0 else ''}{whole}.{part:03d}"


class _Writer:
    """Events written one per line, as they are made (never the whole file in memory)."""

    def __init__(self, handle: IO[str], stats: TraceStats) -> None:
        self.handle = handle
        self.stats = stats
        self.first = True

    def raw(self, text: str) -> None:
        self.handle.write(text if self.first else ",\n" + text)
        self.first = False
        self.stats.events += 1

    def meta(self, pid: int, name: str, args: Mapping[str, Any], tid: Optional[int] = None) -> None:
        where = f'"pid":{pid}' + ("" if tid is None else f',"tid":{tid}')
        self.raw(f'{{"ph":"M",{where},"name":{json.dumps(name)},"args":{json.dumps(args)}}}')

    def slice(
        self, pid: int, tid: int, name: str, cat: str, start: int, dur: int, args: Optional[Mapping[str, Any]] = None
    ) -> None:
        extra = "" if not args else f',"args":{json.dumps(args, allow_nan=False)}'
        self.raw(
            f'{{"ph":"X","pid":{pid},"tid":{tid},"name":{json.dumps(name)},"cat":"{cat}",'
            f'"ts":{_us(start)},"dur":{_us(max(0, dur))}{extra}}}'
        )

    def counter(self, pid: int, name: str, at: int, series: str, value: float) -> None:
        if math.isfinite(value):
            self.raw(
                f'{{"ph":"C","pid":{pid},"name":{json.dumps(name)},"ts":{_us(at)},'
                f'"args":{{{json.dumps(series)}:{round(float(value), 4)}}}}}'
            )


def window_text(window: WindowSpan) -> str:
    """A trial's window in words: ``epoch 1, step 13 to epoch 2, step 10 (2 stretches, 2 periods left out)``."""
    text = f"epoch {window.start_epoch}, step {window.start_step} to epoch {window.end_epoch}, step {window.end_step}"
    segments, left = window.segments or 1, window.left_out or 0
    extra = ([f"{segments} stretches"] if segments > 1 else []) + (
        [f"{left} period{'s' if left != 1 else ''} left out"] if left else []
    )
    return text + (f" ({', '.join(extra)})" if extra else "")


def _trials(timeline: model.Timeline, rank: int) -> List[model.TimelineTrial]:
    """The timeline's trials as ``rank`` ran them: its own start and seconds, ``samples`` on rank 0's alone."""
    out = []
    for entry in timeline.trials:
        started, seconds = entry.started, entry.own_seconds
        if rank > 0:
            starts, times = entry.rank_started or [], entry.rank_seconds or []
            if rank >= len(starts) or rank >= len(times):
                continue
            started, seconds = starts[rank], times[rank]
        if started is None or seconds is None:
            continue
        samples = entry.samples if rank == 0 else None
        group = entry.group or "schedule"
        out.append(msgspec.structs.replace(entry, started=started, own_seconds=seconds, samples=samples, group=group))
    return out


def span(t: model.TimelineTrial) -> Tuple[float, float]:
    """A drawn trial's start (Unix seconds) and its own seconds (:func:`_trials` sets both)."""
    assert t.started is not None and t.own_seconds is not None, t.trial
    return t.started, t.own_seconds


def _steps(w: _Writer, pid: int, tid: int, t: model.TimelineTrial, start: int, data: np.ndarray[Any, Any], block: int) -> int:
    """The trial's steps (at least one) from ``start`` (ns), every one or in blocks of ``block``; their total (ns)."""
    ns = _nanos(data["seconds"])
    ends = np.cumsum(ns)
    begins = ends - ns
    samples = data["samples"].astype(np.int64)
    waits = np.minimum(_nanos(data["wait"]), ns) if "wait" in (data.dtype.names or ()) else None
    name = {"IO": "fetch", "SYNTHETIC": "step"}.get(t.mode, "batch" if waits is not None else "step")
    if block <= 1:
        for i in range(len(ns)):
            at, dur = start + int(begins[i]), int(ns[i])
            w.slice(pid, tid, name, "step", at, dur, {"i": i, "samples": int(samples[i])})
            if waits is not None:
                _split(w, pid, tid, at, dur, int(waits[i]), "")
        return int(ends[-1])
    firsts = np.arange(0, len(ns), block)
    totals = np.add.reduceat(ns, firsts)
    sample_sums = np.add.reduceat(samples, firsts)
    slowest = np.maximum.reduceat(ns, firsts)
    fastest = np.minimum.reduceat(ns, firsts)
    wait_sums = np.add.reduceat(waits, firsts) if waits is not None else None
    for k, first in enumerate(firsts):
        count = min(block, len(ns) - int(first))
        at, dur = start + int(begins[first]), int(totals[k])
        args: Dict[str, Any] = {
            "steps": count,
            "first": int(first),
            "samples": int(sample_sums[k]),
            "mean_ms": round(dur / count / 1e6, 6),
            "slowest_ms": round(int(slowest[k]) / 1e6, 6),
            "fastest_ms": round(int(fastest[k]) / 1e6, 6),
        }
        if wait_sums is not None:
            args["data_wait_share"] = round(int(wait_sums[k]) / dur, 4) if dur > 0 else None
        w.slice(pid, tid, f"{PLURAL[name]} {first} to {first + count - 1}", "steps", at, dur, args)
        if wait_sums is not None:
            _split(w, pid, tid, at, dur, int(wait_sums[k]), " (sum)")
    return int(ends[-1])


def _nanos(seconds: Any) -> np.ndarray[Any, Any]:
    """Durations in seconds as integer nanoseconds (not-a-number and negative ones as 0)."""
    values = np.nan_to_num(np.asarray(seconds, dtype=np.float64), nan=0.0)
    return np.rint(np.clip(values, 0.0, None) * 1e9).astype(np.int64)


def _split(w: _Writer, pid: int, tid: int, at: int, dur: int, wait: int, suffix: str) -> None:
    """A FULL period's two parts inside its slice: the loop's step, then the wait for data."""
    w.slice(pid, tid, "step" + suffix, "step", at, dur - wait)
    w.slice(pid, tid, "data wait" + suffix, "wait", at + dur - wait, wait)


def _counters(w: _Writer, pid: int, readings: np.ndarray[Any, Any], origin: float) -> None:
    names = readings.dtype.names or ()
    times = np.rint((readings["time"].astype(np.float64) - origin) * 1e9).astype(np.int64)
    for field_name, counter, series, scale in COUNTERS:
        if field_name in names:
            for at, value in zip(times.tolist(), (readings[field_name].astype(np.float64) * scale).tolist()):
                w.counter(pid, counter, at, series, value)


def _ns(seconds: float, origin: float) -> int:
    return round((seconds - origin) * 1e9)


@dataclass
class Timeline:
    """A saved run's timeline as drawn: each rank's trials, per-step and reading files, the passes."""

    origin: float  # Unix seconds of the earliest start: time 0 of the drawing
    trials: Dict[int, List[model.TimelineTrial]]
    steps: Dict[int, Dict[str, np.ndarray[Any, Any]]]  # rank -> trial -> per-step array (ranks that saved)
    readings: Dict[int, Dict[str, np.ndarray[Any, Any]]]
    passes: List[Tuple[float, float]]  # rank 0's loader passes: (started, seconds)
    notes: List[str]


def load_timeline(run: Run) -> Timeline:
    """The timeline of ``run`` and its per-step files; :class:`TraceError` for a run without one."""
    timeline = run.model.timeline
    if timeline is None:
        why = (
            "it was made from a log by benchy parse"
            if run.source == "log"
            else f"it was written with schema version {run.schema_version}, before benchy recorded when each trial started"
        )
        raise TraceError(f"{run.path or 'the run'} has no timeline: {why}; run the benchmark again with this benchy")
    path = run.path or "."
    # Each rank's per-step folder that exists: rank 0's steps_dir and its rank<r>/ folders.
    top = os.path.join(os.path.dirname(os.path.abspath(path)), run.model.steps_dir or "")
    dirs = {0: top, **step_files.rank_dirs(top)} if run.model.steps_dir is not None and os.path.isdir(top) else {}
    per_rank = {r: _trials(timeline, r) for r in range(max(1, run.nranks))}
    starts = [span(t)[0] for trials in per_rank.values() for t in trials]
    startup = run.model.loader_startup
    passes = [] if startup is None else [(float(a), float(b)) for a, b in zip(startup.started, startup.seconds)]
    starts += [s for s, _ in passes]
    if not starts:
        raise TraceError(f"{path}: its timeline holds no trial with a start time")
    steps = {r: step_files.load(d) for r, d in dirs.items() if r in per_rank}
    readings = {r: step_files.load(d, readings=True) for r, d in dirs.items() if r in per_rank}
    notes: List[str] = []
    saved = sorted(steps)
    if run.nranks > 1 and not any(per_rank[r] for r in range(1, run.nranks)):
        notes.append(
            f"rank 0's trials only: the run's {run.nranks} ranks are past dist_rank_lists, whose trials "
            f"are reduced to summaries, not listed per rank"
        )
    elif run.nranks > 1:
        if saved == [0]:
            notes.append(
                "per-step slices are rank 0's only (the other ranks saved none: save_steps: all "
                "saves every rank's); the other ranks show their trials"
            )
        elif len(saved) < run.nranks:
            notes.append(f"per-step slices of ranks {', '.join(map(str, saved))}; the others show their trials")
    elif not saved:
        notes.append("no per-step files (save_steps: false, or the steps folder is gone): trials only")
    undrawn = [e.trial for e in timeline.trials if e.started is None or e.own_seconds is None]
    if undrawn:
        notes.append(
            f"{len(undrawn)} trial{'s' if len(undrawn) != 1 else ''} without a start time or a duration (null "
            f"in the file) not drawn: {', '.join(undrawn[:8])}{' ...' if len(undrawn) > 8 else ''}"
        )
    if any(t.window is not None and (t.window.segments or 1) > 1 for t in per_rank.get(0, [])):
        notes.append(
            "a trial whose window spans an epoch's end is drawn from its start with its counted steps end "
            "to end; the time between its stretches (the epoch's end, the next iter(), whatever the loop "
            "does there) is not in it"
        )
    return Timeline(min(starts), per_rank, steps, readings, passes, notes)


def write_trace(run: Run, handle: IO[str], max_events: int = MAX_EVENTS) -> TraceStats:
    """Write ``run``'s timeline to ``handle`` as a Chrome trace (else :class:`TraceError`); what was written."""
    line = load_timeline(run)
    stats = TraceStats(notes=list(line.notes))
    origin, steps, readings, passes = line.origin, line.steps, line.readings, line.passes
    # A FULL step with its wait is three events (the period, the step, the wait).
    total = sum(len(a) * (3 if "wait" in (a.dtype.names or ()) else 1) for s in steps.values() for a in s.values())
    stats.block = max(1, math.ceil(total / max_events)) if max_events > 0 else 1
    if stats.block > 1:
        stats.notes.insert(
            0,
            f"{total} step events are over the bound of {max_events}: each slice on a mode's "
            f"track is a block of {stats.block} consecutive steps (mean, slowest and fastest step "
            f"in its arguments)",
        )
    handle.write('{"traceEvents":[\n')
    w = _Writer(handle, stats)
    for rank, trials in line.trials.items():
        if not trials:
            continue
        stats.processes += 1
        pid = rank + 1  # pid 0 is the idle task in some viewers
        own = "steps" if rank in steps else "trials only"
        w.meta(pid, "process_name", {"name": f"rank {rank} ({own})" if run.nranks > 1 else f"benchy: {run.name}"})
        w.meta(pid, "process_sort_index", {"sort_index": rank})
        used = {_track(t) for t in trials}
        if rank == 0 and passes:
            used.add("loader start-up")
        for name, tid in TRACKS.items():
            if name in used:
                w.meta(pid, "thread_name", {"name": name}, tid)
                w.meta(pid, "thread_sort_index", {"sort_index": tid}, tid)
        _draw_rank(w, pid, rank, trials, origin, steps.get(rank, {}), stats.block)
        for k, (started, seconds) in enumerate(passes if rank == 0 else [], 1):
            at, dur = _ns(started, origin), round(seconds * 1e9)
            w.slice(pid, TRACKS["loader start-up"], f"start-up (pass {k})", "startup", at, dur, {"pass": k, "seconds": seconds})
        for label in sorted(readings.get(rank, {})):
            _counters(w, pid, readings[rank][label], origin)
    handle.write("\n],\n")
    other = {
        "benchy_run": run.name,
        "result_file": os.path.basename(run.path or "."),
        "nranks": run.nranks,
        "start_unix_s": origin,
        "start_utc": datetime.fromtimestamp(origin, tz=timezone.utc).isoformat(),
        "max_step_events": max_events,
        "steps_per_slice": stats.block,
        "profiler": run.document.get("profiler"),
        "notes": stats.notes,
        "verdict": run.verdict,
    }
    handle.write(f'"displayTimeUnit":"ms",\n"otherData":{json.dumps(other, allow_nan=False, default=str)}}}\n')
    return stats


def _track(t: model.TimelineTrial) -> str:
    """The thread a trial is drawn on: its group's (sweep, IO_H2D, stages), else its mode's."""
    return GROUP_TRACKS.get(t.group or "", t.mode if t.mode in TRACKS else "IO")


def _draw_rank(
    w: _Writer,
    pid: int,
    rank: int,
    trials: Sequence[model.TimelineTrial],
    origin: float,
    steps: Mapping[str, np.ndarray[Any, Any]],
    block: int,
) -> None:
    """One rank's trials (and steps where saved), the sweep's settings around their trials."""
    settings: Dict[Optional[Setting], List[model.TimelineTrial]] = {}
    for t in trials:
        if t.group == "sweep":
            settings.setdefault(t.setting if isinstance(t.setting, Setting) else None, []).append(t)
    for found, group in settings.items():
        begin = min(_ns(span(t)[0], origin) for t in group)
        end = max(_ns(span(t)[0], origin) + round(span(t)[1] * 1e9) for t in group)
        setting = {} if found is None else msgspec.structs.asdict(found)
        w.slice(pid, TRACKS["loader sweep"], "setting" if found is None else found.words(), "sweep", begin, end - begin, setting)
    for t in trials:
        tid = TRACKS[_track(t)]
        started, seconds = span(t)
        start = _ns(started, origin)
        data = steps.get(t.trial) if t.group == "schedule" else None
        # The steps first (events may come in any order): the trial's slice spans what they laid out.
        laid = _steps(w, pid, tid, t, start, data, block) if data is not None and len(data) else 0
        duration = max(round(seconds * 1e9), laid)
        args: Dict[str, Any] = {"counted": not t.warmup and t.group == "schedule", "seconds": round(seconds, 9)}
        if t.nbatches:
            args["steps"] = t.nbatches
        if t.samples is not None:
            args["samples"] = t.samples
            args["samples_per_s"] = round(t.samples / seconds, 3) if seconds > 0 else None
        if t.window is not None:
            args["window"] = window_text(t.window)
        if t.profiled:
            args["profiled"] = "torch.profiler: see the .profile folder next to the result"
        name = f"{t.trial} (profiled warm-up)" if t.profiled else f"{t.trial} (warm-up)" if t.warmup else t.trial
        w.slice(pid, tid, name, "warmup" if t.warmup else "trial", start, duration, args)
