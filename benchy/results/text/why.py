"""Why, in words: a trial that did not count, a side that did not run or stopped, FLOPs not counted, ranks that
failed (no torch); from the codes of :class:`benchy.core.outcomes.Reason`."""

from __future__ import annotations

from typing import Iterable, List

from ...core.outcomes import FailedRank, Reason, Why

__all__ = ["ranks", "reason"]


def ranks(failed: Iterable[FailedRank]) -> str:
    """``rank 1 failed first (ValueError: boom)``, for one or more failed ranks."""
    found: List[FailedRank] = list(failed)
    if not found:
        return ""
    first = found[0]
    text = f"rank {first.rank} failed first ({first.reason})"
    if len(found) > 1:
        text += "; then " + ", ".join(f"rank {f.rank} ({f.reason})" for f in found[1:4])
    return text


_REASONS = {
    Why.RANKS: "the ranks could not exchange its results",
    Why.SCRIPT_ENDED: "the script ended before the trial's window was complete",
    Why.NO_MODEL: "no counted IO and SYNTHETIC trials to build the model from",
    Why.NO_ACCELERATOR: "no accelerator in use (the run computes on the CPU)",
    Why.PASS_ENDED: "the loader's pass ended",
    Why.SCRIPT_ENDED_EARLY: "the script ended before it was complete",
    Why.BENCHMARK_ENDED: "the benchmark ended before it was complete",
    Why.LEFT_STEP: (
        "the loop left the counted step before asking for the next batch (a peek such "
        "as next(iter(loader)), or a break, during the step whose FLOPs were counted)"
    ),
    Why.NO_SYNTHETIC: "SYNTHETIC did not run: the FLOPs are counted on one untimed step on the cached batch",
    Why.NO_ROOM: (
        "not counted: the count takes one untimed step of the loop on the cached batch after the "
        "verdict, and the loop's known length left no room for it"
    ),
    Why.ENDED_BEFORE: (
        "not counted: the count takes one untimed step of the loop on the cached batch after the "
        "verdict, and the script ended before it"
    ),
}


def reason(r: Reason) -> str:
    """Why a trial did not count, a side did not run or stopped, or the FLOPs were not counted."""
    why = r.why
    if why is Why.LOADER_RAISED:
        return f"the data loader raised {r.error}"
    if why is Why.SIGNAL:
        who = "" if r.failed is None else f"; rank {r.failed.rank} failed first ({r.failed.reason})"
        return f"interrupted by {r.detail} after {r.steps} of {r.of} steps{who}"
    if why is Why.SCRIPT_RAISED:
        return f"the script ended with {r.error}"
    if why is Why.NOT_RUN_RAISED:
        return f"not run: trial {r.label} raised"
    if why is Why.NOT_RUN_SCRIPT_RAISED:
        return f"not run: the script ended with {r.error}"
    if why is Why.NOT_RUN_STOPPED:
        return f"not run: the script stopped after {r.epochs} epoch(s), {r.steps} step(s)"
    if why is Why.OFF:
        return f"{r.detail}: false"
    if why is Why.NOT_A_DATALOADER:
        return (
            f"only a DataLoader can be timed stage by stage (a BenchmarkDataLoader, or the loader benchy run chose); "
            f"this is a {r.detail}"
        )
    if why is Why.INSTRUMENTED_RAISED:
        kind, _, message = r.error.partition(": ")
        where = f" in {r.label}" if r.label else ""
        return f"the instrumented loader raised {kind}{where}: {message}"
    if why is Why.TRIAL_RAISED:
        return f"{r.label} raised {r.error}"
    if why is Why.EXTRA_RAISED:
        return f"{'' if r.extra is None else r.extra.value}: raised {r.error}"
    if why is Why.NO_WORKERS:
        return (
            f"{r.label}: no loader workers (the loading runs on the training thread, in FULL only), and no copy of the "
            "loader to give some (not a DataLoader)"
        )
    if why is Why.DRAINER_RAISED:
        return f"the loader raised {r.error}"
    if why is Why.NO_LOADER:
        cause = "" if r.cause is None else f" ({reason(r.cause)})"
        return f"{r.label}: the loader gave no batch beside the step{cause}; the step alone is not a contention figure"
    if why is Why.WINDOW_LOST:
        return f"{r.label}: {'' if r.cause is None else reason(r.cause)}"
    if why is Why.FLOPS_FAILED:
        return f"torch's FlopCounterMode could not start ({r.error})"
    if why is Why.FLOPS_RANKS:
        return (
            f"not counted with {r.steps} ranks: a rank whose counted step ran a collective "
            f"(a DDP all-reduce) under torch's FlopCounterMode aborted at exit in about 1 "
            f"run of 15 on the CPU (gloo); run one process to count the step's FLOPs"
        )
    return _REASONS[why]
