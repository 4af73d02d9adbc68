"""PNG plots for ``benchy report`` and ``benchy plot`` (matplotlib, the optional ``plot`` extra, imported only
here and only when a plot is asked for). Figures are drawn with the Agg backend at a fixed size, so a PNG's
dimensions are known in advance.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import Any, BinaryIO, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ..core.errors import BenchyError
from ..core.schedule import Mode
from . import steps as step_files
from .model import WhatIfInputs
from .saved import Run
from .scaling import ScalingRow
from .trace import load_timeline, span

DPI = 100
SCALING_SIZE = (10.0, 4.0)  # inches: 1000 x 400 pixels
STEPS_SIZE = (12.0, 6.0)  # 1200 x 600
COLORS = {Mode.IO: "#1f77b4", Mode.SYNTHETIC: "#2ca02c", Mode.FULL: "#d62728"}
INSTALL = "pip install 'torch-benchy[plot]'  (or: pip install matplotlib)"
Target = Union[str, BinaryIO]  # a PNG file's path, or a binary stream it is written into (the HTML report's)


class PlotUnavailable(BenchyError, RuntimeError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as err:
        raise PlotUnavailable(f"plots need matplotlib, which is not installed: {INSTALL}") from err
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_scaling(rows: Sequence[ScalingRow], path: Target) -> None:
    """Throughput against ranks per mode (ideal scaling dashed) and efficiency against ranks."""
    plt = _pyplot()
    fig, (ax_t, ax_e) = plt.subplots(1, 2, figsize=SCALING_SIZE, dpi=DPI)
    ranks_all = sorted({r.ranks for r in rows})
    for mode in Mode:
        mine = [r for r in rows if r.mode is mode and r.mean is not None]
        if not mine:
            continue
        x = [r.ranks for r in mine]
        y = [r.mean for r in mine]
        err = [r.interval or 0.0 for r in mine]
        ax_t.errorbar(x, y, yerr=err, marker="o", capsize=3, color=COLORS[mode], label=mode.value)
        first = min(mine, key=lambda r: r.ranks)
        if first.mean is not None:
            ax_t.plot(
                ranks_all,
                [first.mean * k / first.ranks for k in ranks_all],
                linestyle="--",
                color=COLORS[mode],
                alpha=0.5,
                label=f"{mode.value} ideal",
            )
        eff = [(r.ranks, r.strong_efficiency) for r in mine if r.strong_efficiency is not None]
        if eff:
            ax_e.plot([k for k, _ in eff], [e for _, e in eff], marker="o", color=COLORS[mode], label=mode.value)
    for ax in (ax_t, ax_e):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ranks_all)
        ax.set_xticklabels([str(k) for k in ranks_all])
        ax.set_xlabel("ranks")
        ax.grid(True, alpha=0.3)
    ax_t.set_ylabel("samples/s (all ranks)")
    ax_t.set_title("Throughput (dashed: ideal linear scaling)")
    ax_e.axhline(1.0, color="grey", linestyle=":")
    top = max([1.0] + [r.strong_efficiency for r in rows if r.strong_efficiency is not None])
    ax_e.set_ylim(0, 1.1 * top)
    ax_e.set_ylabel("strong-scaling efficiency")
    ax_e.set_title("Efficiency (speedup / rank ratio)")
    ax_t.legend(fontsize="small")
    ax_e.legend(fontsize="small", loc="lower left")
    fig.tight_layout()
    _save(fig, path)


@dataclass(frozen=True)
class TrialSteps:
    label: str
    warmup: bool
    seconds: Optional[np.ndarray[Any, Any]]  # per step; None when only rates are known
    rates: np.ndarray[Any, Any]


def trial_steps(run: Run) -> Tuple[Dict[Mode, List[TrialSteps]], str]:
    """Each mode's trials in order (warm-ups first), from the run's per-step files when they are
    next to its JSON, else from the JSON's ``rates`` (counted trials only); and which was used."""
    out: Dict[Mode, List[TrialSteps]] = {m: [] for m in Mode}
    directory = os.path.join(os.path.dirname(os.path.abspath(run.path or ".")), os.path.basename(run.steps_dir or ""))
    if run.steps_dir and run.path and os.path.isdir(directory):
        for label, steps in step_files.load(directory).items():
            seconds = np.asarray(steps["seconds"], dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                rates = np.where(seconds > 0, steps["samples"] / seconds, np.nan)
            # step_files.load names trials <MODE>[_WARMUP]_<k> alone
            out[Mode(label.split("_")[0])].append(TrialSteps(label, "_WARMUP_" in label, seconds, rates))
        for mode in Mode:
            out[mode].sort(key=lambda t: (not t.warmup, int(t.label.rsplit("_", 1)[1])))
        if any(out.values()):
            return out, f"per-step files in {directory}"
    for mode, m in run.modes.items():
        for k, per_step in enumerate(m.rates or ()):
            finite = np.array([np.nan if r is None else r for r in per_step], dtype=float)
            out[mode].append(TrialSteps(f"{mode.value}_{k + 1}", False, None, finite))
    return out, "the JSON's rates (counted trials only; x is the step number)"


def plot_run(run: Run, path: Target) -> str:
    """Per-step throughput over each mode's trials (warm-ups shaded) above a histogram per mode; where the
    per-step data came from (ValueError when the run has none)."""
    trials, source = trial_steps(run)
    modes = [m for m in Mode if trials[m]]
    if not modes:
        raise ValueError(
            "it has no per-step data (a checkpoint, a file parsed from a log, or a run with "
            "save_steps off whose final JSON was not written)"
        )
    plt = _pyplot()
    fig, axes = plt.subplots(2, len(modes), figsize=STEPS_SIZE, dpi=DPI, squeeze=False)
    for col, mode in enumerate(modes):
        ax, hist = axes[0][col], axes[1][col]
        start = 0.0
        for t in trials[mode]:
            steps = t.seconds if t.seconds is not None else np.ones(len(t.rates))
            x = start + np.concatenate(([0.0], np.cumsum(steps)[:-1]))
            end = start + float(np.sum(steps))
            if t.warmup:
                ax.axvspan(start, end, color="grey", alpha=0.2, linewidth=0)
            ax.plot(x, t.rates, color=COLORS[mode], linewidth=0.8)
            ax.axvline(end, color="black", alpha=0.15, linewidth=0.5)
            start = end
        ax.set_title(
            f"{mode.value}: per-step throughput" + (" (grey: warm-ups)" if any(t.warmup for t in trials[mode]) else ""),
            fontsize="medium",
        )
        ax.set_xlabel("seconds into the mode's trials" if trials[mode][0].seconds is not None else "step")
        ax.set_ylabel("samples/s" + (" (rank 0's own)" if run.nranks > 1 else ""))
        ax.grid(True, alpha=0.3)
        counted = [t.rates[np.isfinite(t.rates)] for t in trials[mode] if not t.warmup]
        values = np.concatenate(counted) if counted else np.array([])
        if values.size:
            hist.hist(values, bins=min(50, max(10, values.size // 20)), color=COLORS[mode], alpha=0.8)
            hist.axvline(
                float(np.median(values)),
                color="black",
                linestyle="--",
                linewidth=1,
                label=f"median {float(np.median(values)):.1f}",
            )
            hist.legend(fontsize="small")
        hist.set_title(f"{mode.value}: counted steps ({values.size})", fontsize="medium")
        hist.set_xlabel("samples/s")
        hist.set_ylabel("steps")
    fig.suptitle(f"{run.label} ({run.nranks} rank{'s' if run.nranks != 1 else ''}; rank 0's steps)", fontsize="medium")
    fig.tight_layout()
    _save(fig, path)
    return source


def _save(fig: Any, path: Target) -> None:
    """The figure as a PNG with a 256-colour palette (a third of the size; plots have few colours), then closed."""
    if isinstance(path, str):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=DPI, format="png")
    from PIL import Image  # matplotlib depends on Pillow

    buffer.seek(0)
    with Image.open(buffer) as image:
        image.convert("RGB").quantize(colors=256).save(path, format="PNG", optimize=True)
    _pyplot().close(fig)


TIMELINE_SIZE = (14.0, 6.0)  # 1400 x 600
WAIT_COLOR = "#ff9896"


def plot_timeline(run: Run, path: Target) -> List[str]:
    """Rank 0's timeline, the picture of what ``benchy trace`` writes (bar height: the step's duration); what the
    picture leaves out, in words. :class:`~benchy.results.trace.TraceError` for a run without a timeline."""
    line = load_timeline(run)
    trials = line.trials.get(0, [])
    steps = line.steps.get(0, {})
    plt = _pyplot()
    fig, (ax, sys_ax) = plt.subplots(2, 1, figsize=TIMELINE_SIZE, dpi=DPI, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    top = 0.0
    for t in trials:
        started, seconds = span(t)
        start = started - line.origin
        data = steps.get(t.trial) if t.group == "schedule" else None
        mode = t.mode
        ax.axvspan(start, start + seconds, color="grey" if t.warmup else COLORS[mode], alpha=0.12, linewidth=0)
        ax.text(
            start,
            1.0,
            t.trial.replace("_WARMUP_", " W").replace("SYNTHETIC", "SYN"),
            rotation=90,
            fontsize=6,
            va="top",
            ha="left",
            transform=ax.get_xaxis_transform(),
        )
        if data is None or not len(data):
            continue
        seconds = np.clip(np.asarray(data["seconds"], dtype=float), 0.0, None)
        x = start + np.concatenate(([0.0], np.cumsum(seconds)[:-1]))
        ms = seconds * 1e3
        top = max(top, float(np.percentile(ms, 99.5)) if ms.size else 0.0)
        names = data.dtype.names or ()
        if "wait" in names:
            wait = np.minimum(np.clip(np.asarray(data["wait"], dtype=float), 0.0, None) * 1e3, ms)
            ax.bar(x, ms - wait, width=seconds, align="edge", color=COLORS[mode], linewidth=0)
            ax.bar(x, wait, width=seconds, bottom=ms - wait, align="edge", color=WAIT_COLOR, linewidth=0)
        else:
            ax.bar(x, ms, width=seconds, align="edge", color=COLORS[mode], linewidth=0)
    ax.set_ylim(0, 1.15 * top if top > 0 else 1.0)
    ax.set_ylabel("step time (ms)")
    ax.grid(True, axis="y", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLORS[m]) for m in Mode] + [
        plt.Rectangle((0, 0), 1, 1, color=WAIT_COLOR),
        plt.Rectangle((0, 0), 1, 1, color="grey", alpha=0.3),
    ]
    ax.legend(
        handles,
        ["IO fetch", "SYNTHETIC step", "FULL step", "FULL data wait", "warm-up"],
        fontsize="small",
        loc="upper left",
        bbox_to_anchor=(1.07, 1.0),
    )
    readings = line.readings.get(0, {})
    if readings:
        parts = sorted(readings.values(), key=lambda r: float(r["time"][0]) if len(r) else 0.0)
        joined = np.concatenate(parts)
        when = joined["time"] - line.origin
        sys_ax.plot(when, joined["cpu_cores_busy"], ".", markersize=2, color="black", label="CPU cores busy")
        sys_ax.set_ylabel("cores busy")
        rss = sys_ax.twinx()
        rss.plot(when, joined["rss_bytes"] / 1e6, ".", markersize=2, color="#9467bd", label="RSS (MB)")
        rss.set_ylabel("RSS (MB)")
        sys_ax.legend(fontsize="small", loc="upper left")
        rss.legend(fontsize="small", loc="upper right")
    else:
        sys_ax.text(0.5, 0.5, "no system readings saved", ha="center", va="center", transform=sys_ax.transAxes)
    sys_ax.set_xlabel("seconds since the run's first trial or loader pass")
    sys_ax.grid(True, alpha=0.3)
    ranks = f"{run.nranks} ranks; rank 0's steps" if run.nranks > 1 else "1 process"
    fig.suptitle(f"{run.label}: timeline ({ranks}; readings only during trials)", fontsize="medium")
    fig.tight_layout()
    _save(fig, path)
    return list(line.notes)


WHATIF_SIZE = (8.0, 4.5)


def plot_whatif(run: Run, path: Target) -> None:
    """The what-if model's FULL against the loader's workers, one line per step speed-up (its interval
    shaded), the run's own FULL and each check's measurement as points (the JSON's ``whatif``)."""
    block = run.model.whatif
    if block is None or not block.predictions:
        raise ValueError("the run has no what-if predictions (whatif: false, or no IO and SYNTHETIC trials)")
    plt = _pyplot()
    inputs = block.inputs or WhatIfInputs()
    fig, ax = plt.subplots(figsize=WHATIF_SIZE)
    drawn = [p for p in block.predictions if p.cores == inputs.cores and p.free is None]
    for k in sorted({p.speedup for p in drawn if p.speedup is not None}):
        rows = [(p.workers, p.full) for p in drawn if p.speedup == k and p.workers is not None and p.full is not None]
        points = sorted((w, (f[0], f[1], f[2])) for w, f in rows if None not in f)
        if not points:
            continue
        x = [w for w, _ in points]
        (line,) = ax.plot(x, [f[1] for _, f in points], marker="o", label=f"step {k:g}x faster")
        ax.fill_between(x, [f[0] for _, f in points], [f[2] for _, f in points], color=line.get_color(), alpha=0.15)
    full = inputs.full
    if full is not None and None not in full and inputs.workers is not None:
        low, mean, high = (float(v or 0.0) for v in full)
        ax.errorbar([inputs.workers], [mean], yerr=[[mean - low], [high - mean]], fmt="k*", ms=12, label="FULL measured")
    for check in block.checks:
        change = check.change
        if check.kind == "FULL" and check.measured is not None and change is not None and change.workers is not None:
            hw = check.measured_half_width or 0.0
            ax.errorbar(
                [change.workers],
                [check.measured],
                yerr=[[hw], [hw]],
                fmt="D",
                color="crimson",
                ms=8,
                label=f"emulated step {change.speedup or 0:.3g}x faster, measured",
            )
    ax.set_xlabel("loader workers")
    ax.set_ylabel("FULL samples/s (model)")
    cores = "" if inputs.cores is None else f", {inputs.cores:g} cores"
    ax.set_title(f"{run.label}: what if (model from {block.basis}{cores})")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    _save(fig, path)
