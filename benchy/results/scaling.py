"""``benchy report RUN ...``: runs at 1, 2, 4 ... ranks side by side against the one with the fewest ranks (the
first given among equals), with speedup and strong- and weak-scaling efficiency as docs/guide/comparing.md defines
them (pure).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

from ..core.schedule import Mode
from .saved import ModeRun, Run
from .tables import Table
from .text.numbers import cell

SAME_WORK = 0.01  # per-rank samples per trial within 1 % of the baseline's: the same work


@dataclass(frozen=True)
class ScalingRow:
    run: Run
    mode: Mode
    ranks: int
    mean: Optional[float]
    interval: Optional[float]
    n: Optional[int]
    speedup: Optional[float]
    strong_efficiency: Optional[float]
    weak_efficiency: Optional[float]
    data_wait: Optional[float]
    samples_per_rank_batch: Optional[float]


def _per_rank_work(mode_run: ModeRun, nranks: int) -> Optional[float]:
    """Samples one rank handles in one trial (mean over trials), when the file says."""
    if not mode_run.trial_samples:
        return None
    return sum(mode_run.trial_samples) / len(mode_run.trial_samples) / nranks


def baseline(runs: Sequence[Run]) -> Run:
    """The run with the fewest ranks (the first given among equals)."""
    return min(runs, key=lambda r: r.nranks)


def scaling_rows(runs: Sequence[Run]) -> List[ScalingRow]:
    """One row per run and mode, runs ordered by ranks (stable), modes in IO, SYNTHETIC, FULL order."""
    if not runs:
        return []
    base = baseline(runs)
    rows: List[ScalingRow] = []
    for run in sorted(runs, key=lambda r: r.nranks):
        for mode in Mode:
            m = run.mode(mode)
            if m is None:
                continue
            b = base.mode(mode)
            speedup = strong = weak = None
            if b is not None and b.mean and m.mean is not None:
                speedup = m.mean / b.mean
                strong = speedup / (run.nranks / base.nranks)
                work, base_work = _per_rank_work(m, run.nranks), _per_rank_work(b, base.nranks)
                t, base_t = m.mean_trial_time, b.mean_trial_time
                if work and base_work and t and base_t and abs(work - base_work) <= SAME_WORK * base_work:
                    weak = base_t / t
            wait = m.data_wait if mode is Mode.FULL else None
            batch = m.samples_per_rank_batch(run.nranks)
            rows.append(ScalingRow(run, mode, run.nranks, m.mean, m.interval, m.n, speedup, strong, weak, wait, batch))
    return rows


def study_kind(rows: Sequence[ScalingRow]) -> str:
    """What kind of study the runs form, from their batch sizes: which efficiency to read."""
    batches = {(r.ranks, round(r.samples_per_rank_batch, 6)) for r in rows if r.samples_per_rank_batch}
    if len({r.ranks for r in rows}) < 2:
        return "one rank count only: nothing to scale against"
    if not batches:
        return "batch sizes unknown (runs parsed from logs): read speedup and strong-scaling efficiency"
    per_rank = {b for _, b in batches}
    global_ = {round(k * b, 6) for k, b in batches}
    if len(per_rank) == 1:
        return f"weak scaling: the same batch per rank ({next(iter(per_rank)):g} samples) in every run; both efficiencies apply"
    if len(global_) == 1:
        return (
            f"strong scaling: the same global batch ({next(iter(global_)):g} samples) split over the ranks; "
            f"read the strong-scaling efficiency"
        )
    return "batch sizes differ between runs in neither weak nor strong pattern: compare throughputs with care"


def table(rows: Sequence[ScalingRow]) -> Table:
    out = Table(
        ["run", "ranks", "mode", "samples/s", "+/-", "speedup", "strong eff", "weak eff", "data wait"],
        right=[False, True, False, True, True, True, True, True, True],
    )
    for r in rows:
        figures = [cell(x, spec=".3f") for x in (r.mean, r.interval, r.speedup, r.strong_efficiency, r.weak_efficiency)]
        wait = "" if r.data_wait is None else f"{100.0 * r.data_wait:.1f} %"
        out.rows.append([r.run.label, str(r.ranks), r.mode.value, *figures, wait])
    return out


# The CSV's figures: the rows' own fields, with full precision.
_CSV_FIGURES = ("mean", "interval", "n", "speedup", "strong_efficiency", "weak_efficiency", "data_wait", "samples_per_rank_batch")


def csv_table(rows: Sequence[ScalingRow]) -> Table:
    """The same rows with full precision and machine-friendly headers."""

    def num(x: Optional[float]) -> str:
        return "" if x is None else str(x) if isinstance(x, int) else repr(float(x))

    out = Table(["run", "path", "ranks", "mode", *_CSV_FIGURES])
    for r in rows:
        out.rows.append([r.run.label, r.run.path or "", str(r.ranks), r.mode.value, *(num(getattr(r, f)) for f in _CSV_FIGURES)])
    return out
