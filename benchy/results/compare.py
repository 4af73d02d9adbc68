"""``benchy compare BASE NEW``: did a mode get slower, and is it more than noise? (pure)

A mode regressed when its mean fell by more than the threshold and Welch's t-test, Holm-adjusted for the number
of modes compared, calls the change significant (why the adjustment: docs/guide/comparing.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Dict, List, Optional, Sequence

from ..core.schedule import Mode
from ..core.stats import welch
from .saved import ModeRun, Run
from .tables import Table, markdown_text
from .text.numbers import signed_percent, spread

# What happened to a mode.
REGRESSION = "regression"  # significantly slower by more than the threshold
SLOWER = "slower"  # significantly slower, within the threshold
FASTER = "faster"  # significantly faster
UNCHANGED = "no significant change"
UNTESTED = "not tested"  # fewer than two trials on a side, or a side without trial throughputs


@dataclass(frozen=True)
class ModeChange:
    mode: str
    base_mean: Optional[float]
    base_interval: Optional[float]
    base_n: int
    new_mean: Optional[float]
    new_interval: Optional[float]
    new_n: int
    change: Optional[float]  # new / base - 1 of the means
    t: Optional[float] = None
    df: Optional[float] = None  # Welch-Satterthwaite
    df_used: Optional[int] = None  # rounded down for the p-value
    p: Optional[float] = None
    p_adjusted: Optional[float] = None  # Holm's adjustment over the modes tested
    significant: bool = False
    status: str = UNCHANGED
    why: Optional[str] = None  # for "not tested": the reason


def holm(p_values: Sequence[float]) -> List[float]:
    """Holm-Bonferroni adjusted p-values, in the input's order (family-wise error control)."""
    order = sorted(range(len(p_values)), key=lambda k: p_values[k])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, k in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[k]))
        adjusted[k] = running
    return adjusted


def _change(mode: Mode, base: ModeRun, new: ModeRun) -> ModeChange:
    """The change and the raw test; status and significance come with the adjustment."""
    change = (new.mean / base.mean - 1.0) if base.mean and new.mean is not None else None
    test = welch(base.trial_throughputs, new.trial_throughputs)
    sides = (base.mean, base.interval, len(base.trial_throughputs), new.mean, new.interval, len(new.trial_throughputs))
    common = ModeChange(mode.value, *sides, change)
    if test is None or change is None:
        short = [name for name, side in (("base", base), ("new", new)) if len(side.trial_throughputs) < 2]
        why = (
            f"{' and '.join(short)} {'have' if len(short) > 1 else 'has'} fewer than 2 trial throughputs"
            if short
            else "no mean to compare"
        )
        return replace(common, status=UNTESTED, why=why)
    return replace(common, t=test.t, df=test.df, df_used=test.df_used, p=test.p)


def _judged(c: ModeChange, p_adjusted: float, threshold: float, alpha: float) -> ModeChange:
    significant = p_adjusted < alpha
    status = UNCHANGED
    if significant and c.change is not None:
        if c.change < 0:
            status = REGRESSION if -c.change > threshold else SLOWER
        else:
            status = FASTER
    return replace(c, p_adjusted=p_adjusted, significant=significant, status=status)


@dataclass(frozen=True)
class Comparison:
    base: Run
    new: Run
    threshold: float
    confidence: float
    changes: List[ModeChange]
    skipped: List[str]  # modes in only one of the runs, said as such

    @property
    def regressed(self) -> List[str]:
        return [c.mode for c in self.changes if c.status == REGRESSION]

    @property
    def exit_status(self) -> int:
        return 1 if self.regressed else 0


def compare_runs(base: Run, new: Run, threshold: float = 0.05, confidence: float = 0.95) -> Comparison:
    """Compare every mode both runs have."""
    alpha = 1.0 - confidence
    changes: List[ModeChange] = []
    skipped: List[str] = []
    for mode in Mode:
        b, n = base.mode(mode), new.mode(mode)
        if b is None and n is None:
            continue
        if b is None or n is None:
            skipped.append(f"{mode.value}: only in {'new' if b is None else 'base'}")
            continue
        changes.append(_change(mode, b, n))
    tested = [k for k, c in enumerate(changes) if c.p is not None]
    for k, adjusted in zip(tested, holm([changes[k].p for k in tested])):  # type: ignore[misc]
        changes[k] = _judged(changes[k], adjusted, threshold, alpha)
    return Comparison(base, new, threshold, confidence, changes, skipped)


def _mean(mean: Optional[float], interval: Optional[float], n: int) -> str:
    """``mean +/- half-width (trials)``; ``?`` trials for a summary line read from a log without trial lines."""
    if mean is None:
        return "n/a"
    shown = f"{mean:.3f}" if interval is None else spread(mean, interval)
    return f"{shown} ({n if n else '?'})"


def _p(p: Optional[float]) -> str:
    if p is None:
        return "-"
    return f"{p:.3g}" if p >= 0.001 else "< 0.001"


def table(c: Comparison) -> Table:
    rows: List[Sequence[str]] = [
        [
            m.mode,
            _mean(m.base_mean, m.base_interval, m.base_n),
            _mean(m.new_mean, m.new_interval, m.new_n),
            signed_percent(m.change),
            _p(m.p),
            _p(m.p_adjusted),
            m.status + (f" ({m.why})" if m.why else ""),
        ]
        for m in c.changes
    ]
    return Table(
        ["mode", "base samples/s (trials)", "new samples/s (trials)", "change", "p", "p (Holm)", "result"],
        rows,
        right=[False, True, True, True, True, True, False],
    )


def _describe(run: Run) -> str:
    ranks = f"{run.nranks} rank" + ("s" if run.nranks != 1 else "")
    extra = "" if run.complete else ", incomplete"
    return f"{run.path} ({run.label}; {ranks}{extra})"


def header(c: Comparison) -> List[str]:
    lines = [f"base: {_describe(c.base)}", f"new:  {_describe(c.new)}"]
    if c.base.nranks != c.new.nranks:
        lines.append(
            f"note: the runs have different numbers of ranks ({c.base.nranks} and {c.new.nranks}); "
            f"throughputs are of all ranks together"
        )
    lines.extend(f"note: {s}, not compared" for s in c.skipped)
    return lines


def status_line(c: Comparison) -> str:
    """The one-line answer, with the rule that produced it."""
    rule = (
        f"a mode regresses when its mean falls by more than {100.0 * c.threshold:g} % and Welch's test on the "
        f"trial throughputs gives p < {1.0 - c.confidence:.2g} after Holm's adjustment for the "
        f"{len([m for m in c.changes if m.p is not None])} modes tested"
    )
    bad = [m for m in c.changes if m.status == REGRESSION]
    if bad:
        parts = ", ".join(
            f"{m.mode} {signed_percent(m.change)} (adjusted p {'= ' if (m.p_adjusted or 0) >= 0.001 else ''}{_p(m.p_adjusted)})"
            for m in bad
        )
        return f"REGRESSION: {parts}; {rule}"
    untested = [m for m in c.changes if m.status == UNTESTED]
    tail = f" ({', '.join(m.mode for m in untested)} not tested)" if untested else ""
    fell = [m for m in untested if m.change is not None and -m.change > c.threshold]
    if fell:
        tail += (
            "; WARNING: "
            + ", ".join(f"{m.mode} fell {signed_percent(m.change)}" for m in fell)
            + " but could not be tested (run with ntrials >= 2, or keep the JSON rather than the log)"
        )
    return f"OK: no significant regression beyond {100.0 * c.threshold:g} %{tail}; {rule}"


def markdown(c: Comparison) -> str:
    icon = "regression" if c.regressed else "no regression"
    lines = [f"### benchy compare: {icon}", ""]
    lines.extend(f"- {markdown_text(line)}" for line in header(c))
    lines += ["", table(c).markdown(), "", f"**{markdown_text(status_line(c))}**"]
    return "\n".join(lines)


def as_dict(c: Comparison) -> Dict[str, Any]:
    """The comparison for ``--format json`` (non-finite numbers are the caller's to null)."""

    # Each side is the run's row (as ``benchy summary --format json`` has it), with ``name``, the key this output
    # had before ``run_name``, kept for the scripts that read it.
    return {
        "base": {**c.base.row(), "name": c.base.name},
        "new": {**c.new.row(), "name": c.new.name},
        "threshold": c.threshold,
        "confidence": c.confidence,
        "method": ("Welch's t-test on the trial throughputs (p-value with df rounded down), Holm-adjusted over the modes tested"),
        "modes": [asdict(m) for m in c.changes],
        "skipped": c.skipped,
        "regressed": c.regressed,
        "exit_status": c.exit_status,
        "result": status_line(c),
    }
