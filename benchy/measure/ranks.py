"""Ranks: who this process is, and the exchange of per-trial results between ranks.

Under ``torch.distributed`` each rank measures its own trials; at each trial end the ranks
swap (samples, seconds) with an all-gather on a gloo group of benchy's own, which works
whatever the training's backend (gloo, NCCL) and carries benchy's bounded wait
(``dist_timeout``). A rank that died or left the schedule makes the others stop with an error
naming the trial and the ranks that did not report, instead of hanging.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..core.errors import BenchyError
from ..core.results import TrialResult

__all__ = ["DistributedError", "LocalComm", "TorchComm", "agree", "combine", "disagreement", "make_comm"]

Report = Tuple[int, float, float, float]  # (samples, seconds, extra, started) of one rank's trial


class DistributedError(BenchyError, RuntimeError):
    """The ranks could not exchange a trial's results within the bounded wait."""


DistributedError.__module__ = "benchy"


class LocalComm:
    """One process: nothing to exchange."""

    rank = 0
    world = 1

    def exchange(self, label: str, samples: int, seconds: float, extra: float = 0.0,
                 started: float = math.nan) -> List[Report]:
        return [(samples, seconds, extra, started)]

    def barrier(self, label: str) -> None:
        return None

    def gather(self, label: str, value: Any) -> List[Any]:
        return [value]

    def shutdown(self) -> None:
        return None


class TorchComm:
    """Exchange over ``torch.distributed``; construct on every rank (it creates a group)."""

    def __init__(self, timeout_s: float) -> None:
        import torch.distributed as dist

        self._dist = dist
        self.rank = int(dist.get_rank())
        self.world = int(dist.get_world_size())
        self.timeout_s = timeout_s
        self._group = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=timeout_s))
        try:  # the rendezvous store, to name the ranks that did not report (private API)
            self._store: Any = dist.distributed_c10d._get_default_store()
        except Exception:  # pragma: no cover - older or unusual builds
            self._store = None
        self._round = 0
        # The last work of each collective, held until shutdown: were its handle dropped at once,
        # gloo's worker thread could free the work (and the Python tensors in it) after this
        # thread, which needs the GIL for them, has gone on into interpreter exit: an abort.
        self._held: Dict[str, Any] = {}

    def _wait(self, what: str, work: Any) -> None:
        work.wait()
        self._held[what] = work

    def _missing(self, key: str) -> Optional[List[int]]:
        if self._store is None:
            return None
        try:
            return [r for r in range(self.world) if not self._store.check([f"{key}/{r}"])]
        except Exception:  # pragma: no cover - the store may be gone with rank 0
            return None

    def _collective(self, label: str, what: str, call: Any) -> Any:
        self._round += 1
        key = f"benchy/{self._round}"
        if self._store is not None:
            try:
                self._store.set(f"{key}/{self.rank}", label)
            except Exception:  # pragma: no cover
                pass
        start = time.monotonic()
        try:
            return call()
        except Exception as err:
            missing = self._missing(key)
            who = (f"rank(s) {', '.join(map(str, missing))} did not report" if missing
                   else "some rank did not report")
            raise DistributedError(
                f"benchy: trial {label}: the exchange of the ranks' {what} failed after "
                f"{time.monotonic() - start:.1f} s (bounded wait: dist_timeout = {self.timeout_s:g} s); "
                f"{who} (a rank died or stopped asking for epochs before the schedule's end). "
                f"This rank (rank {self.rank} of {self.world}) stops here; the results measured so far "
                f"are in the JSON written by rank 0. Cause: {err}"
            ) from None

    def exchange(self, label: str, samples: int, seconds: float, extra: float = 0.0,
                 started: float = math.nan) -> List[Report]:
        """Every rank's (samples, seconds, extra, started); ``extra`` carries a warm-up's step-time drift,
        ``started`` the trial's start in Unix seconds (the timeline's)."""
        import torch

        mine = torch.tensor([float(samples), float(seconds), float(extra), float(started)], dtype=torch.float64)
        gathered = [torch.empty_like(mine) for _ in range(self.world)]
        self._collective(label, "trial results", lambda: self._wait(
            "exchange", self._dist.all_gather(gathered, mine, group=self._group, async_op=True)))
        return [(round(t[0].item()), float(t[1].item()), float(t[2].item()), float(t[3].item())) for t in gathered]

    def barrier(self, label: str) -> None:
        self._collective(label, "barrier", lambda: self._wait(
            "barrier", self._dist.barrier(group=self._group, async_op=True)))

    def gather(self, label: str, value: Any) -> List[Any]:
        """Every rank's ``value`` (a small picklable object), in rank order."""
        out: List[Any] = [None] * self.world
        self._collective(label, "schedules", lambda: self._dist.all_gather_object(out, value, group=self._group))
        return out

    def shutdown(self) -> None:
        """Tear the process groups down (before benchy ends the process).

        Then the works held and benchy's group are let go here, on this thread: the group's
        destructor joins its worker threads, so none is left to free a tensor during exit.
        """
        if self._dist.is_initialized():
            self._dist.destroy_process_group()
        self._held.clear()
        self._group = None


def disagreement(values: Sequence[Any]) -> Optional[str]:
    """None when every rank holds the same mapping; else the keys that differ, rank by rank."""
    first = values[0]
    if all(v == first for v in values[1:]):
        return None
    keys = sorted({k for v in values for k in v if len({repr(w.get(k)) for w in values}) > 1})
    parts = []
    for key in keys:
        by_rank = ", ".join(f"rank {r}: {values[r].get(key)!r}" for r in range(len(values)))
        parts.append(f"{key} ({by_rank})")
    return "; ".join(parts)


def make_comm(timeout_s: float) -> Any:
    """A :class:`TorchComm` when torch.distributed runs with several ranks, else local."""
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover
        return LocalComm()
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return TorchComm(timeout_s)
    return LocalComm()


def combine(comm: Any, result: TrialResult, change: Optional[float]) -> Tuple[TrialResult, Optional[float]]:
    """All ranks' view of a trial: samples of all ranks over the slowest rank's time, and the
    warm-up change of the rank still speeding up most (None when a rank could not tell)."""
    if comm.world == 1:
        return result, change
    reports = comm.exchange(result.label, result.samples, result.seconds, math.nan if change is None else change,
                            math.nan if result.started is None else result.started)
    changes = [c for _, _, c, _ in reports]
    combined = dataclasses.replace(
        result,
        samples=sum(n for n, _, _, _ in reports),
        seconds=max(t for _, t, _, _ in reports),
        rank_samples=tuple(n for n, _, _, _ in reports),
        rank_seconds=tuple(t for _, t, _, _ in reports),
        rank_started=() if any(math.isnan(s) for _, _, _, s in reports) else tuple(s for _, _, _, s in reports),
    )
    return combined, (None if any(math.isnan(c) for c in changes) else min(changes))


def agree(comm: Any, fingerprint: Any) -> None:
    """Ranks must run the same trials (each trial's results are exchanged and combined): raise a
    DistributedError on every rank, together, when their schedules differ."""
    differ = disagreement(comm.gather("start (schedule check)", fingerprint))
    if differ is None:
        return
    try:  # every rank found the same difference: leave together, none still inside the gather
        comm.barrier("start (schedule check)")
    except DistributedError:
        pass
    raise DistributedError(
        f"benchy: the ranks were given different schedules: {differ}. Every rank must run the same trials "
        f"(their results are combined trial by trial): give all ranks the same benchy config."
    )
