"""Ranks: who this process is, and the exchange of per-trial results between ranks (docs/guide/distributed.md).

The exchange runs on a gloo group of benchy's own, whatever the training's backend, with benchy's bounded wait
(``dist_timeout``): a rank that died or left the schedule makes the others stop with an error naming it, instead
of hanging. At scale the group connects lazily (:func:`_lazy_group`), and the rendezvous store's keys are read only
when a collective fails (:func:`missing_ranks`).
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import os
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..core.errors import BenchyError
from ..core.results import RankSummary, TrialResult

Report = Tuple[int, float, float, float]  # (samples, seconds, extra, started) of one rank's trial


class DistributedError(BenchyError, RuntimeError):
    """The ranks could not exchange a trial's results within the bounded wait."""


DistributedError.__module__ = "benchy"


class LocalComm:
    """One process: nothing to exchange (:func:`combine` and :func:`agree` exchange only with several ranks)."""

    rank = 0
    world = 1

    def failures(self) -> List[Tuple[int, str]]:
        return []

    def barrier(self, label: str) -> None: ...

    def report_failure(self, reason: str) -> None: ...

    def shutdown(self) -> None: ...


class TorchComm:
    """Exchange over ``torch.distributed``; construct on every rank (it creates a group)."""

    def __init__(self, timeout_s: float) -> None:
        import torch.distributed as dist

        self._dist = dist
        self.rank = int(dist.get_rank())
        self.world = int(dist.get_world_size())
        self.timeout_s = timeout_s
        self._group = _lazy_group(dist, timeout_s)
        try:  # the rendezvous store, to name the ranks that did not report (private API)
            self._store: Any = dist.distributed_c10d._get_default_store()
        except Exception:  # pragma: no cover - older or unusual builds
            self._store = None
        self._round = 0
        # The last work of each collective, held until shutdown: were its handle dropped at once, gloo's worker thread
        # could free its Python tensors after this thread has gone on into interpreter exit: an abort.
        self._held: Dict[str, Any] = {}

    def _wait(self, what: str, work: Any) -> None:
        work.wait()
        self._held[what] = work

    def _missing(self, key: str) -> Optional[List[int]]:
        """After a failed collective: the ranks that never entered it (None: the store cannot tell). Read until
        unchanged for :data:`SETTLE_S`: a rank next to a dead one fails at once, while others are still on their way."""
        if self._store is None:
            return None
        try:
            found = missing_ranks(self._store, key, self.world)
            now = time.monotonic()
            deadline, stable = now + min(SETTLE_CAP_S, 0.25 * self.timeout_s), now
            while found and now < deadline and now - stable < SETTLE_S:
                time.sleep(0.1)
                again = missing_ranks(self._store, key, self.world)
                now = time.monotonic()
                if again != found:
                    found, stable = again, now
            return found
        except Exception:  # the store may be gone with rank 0
            return None

    def _named(self, key: str, missing: Optional[List[int]]) -> None:
        """Say this rank has read the missing ranks; rank 0, when the store lives in its process (srun, say),
        waits until the others have read them too: were it to leave first, they could not name anyone."""
        store = self._store
        if store is None:
            return
        try:
            store.set(f"{key}/named/{self.rank}", "1")
            if self.rank != 0 or "TORCHELASTIC_RUN_ID" in os.environ:
                return
            gone = set(missing or ())
            deadline = time.monotonic() + self.timeout_s
            while time.monotonic() < deadline and not set(missing_ranks(store, f"{key}/named", self.world)) <= gone:
                time.sleep(0.1)
        except Exception:  # the store itself failed: nothing to wait for
            return

    def _collective(self, label: str, what: str, call: Any) -> Any:
        self._round += 1
        key = f"benchy/{self._round}"
        if self._store is not None:
            try:  # which ranks entered it, read only if it fails (the write does not wait for the store)
                self._store.set(f"{key}/{self.rank}", label)
            except Exception:  # pragma: no cover
                pass
        start = time.monotonic()
        try:
            return call()
        except Exception as err:
            missing = self._missing(key)
            self._named(key, missing)
            shown = ", ".join(map(str, missing[:SHOWN_RANKS])) if missing else ""
            if missing and len(missing) > SHOWN_RANKS:
                shown += f" and {len(missing) - SHOWN_RANKS} more"
            who = f"rank(s) {shown} did not report" if missing else "some rank did not report"
            raise DistributedError(
                f"benchy: trial {label}: the exchange of the ranks' {what} failed after "
                f"{time.monotonic() - start:.1f} s (bounded wait: dist_timeout = {self.timeout_s:g} s); "
                f"{who} (a rank died or stopped asking for epochs before the schedule's end). "
                f"This rank (rank {self.rank} of {self.world}) stops here; the results measured so far "
                f"are in the JSON written by rank 0. Cause: {err}"
            ) from None

    def exchange(self, label: str, samples: int, seconds: float, extra: float = 0.0, started: float = math.nan) -> List[Report]:
        """Every rank's (samples, seconds, warm-up drift, start in Unix seconds)."""
        import torch

        mine = torch.tensor([float(samples), float(seconds), float(extra), float(started)], dtype=torch.float64)
        gathered = [torch.empty_like(mine) for _ in range(self.world)]
        self._collective(
            label,
            "trial results",
            lambda: self._wait("exchange", self._dist.all_gather(gathered, mine, group=self._group, async_op=True)),
        )
        return [(round(t[0].item()), float(t[1].item()), float(t[2].item()), float(t[3].item())) for t in gathered]

    def reduce(
        self,
        label: str,
        values: Sequence[float],
        merge: Callable[[np.ndarray[Any, Any], np.ndarray[Any, Any]], np.ndarray[Any, Any]],
        what: str = "trial summaries",
    ) -> np.ndarray[Any, Any]:
        """``values`` of every rank merged (``merge``: associative, commutative), the result on every rank: up a
        binomial tree and back down, log2 N rounds each way (gloo's all-reduce is a ring: 2 (N - 1) rounds)."""
        return np.asarray(self._collective(label, what, lambda: self._tree(values, merge)))

    def _tree(self, values: Sequence[float], merge: Any) -> Any:
        import torch

        dist, group, rank, world = self._dist, self._group, self.rank, self.world
        mine = np.asarray(values, dtype=np.float64)
        buffer = torch.empty(len(mine), dtype=torch.float64)
        low = rank & -rank if rank else 1 << max(0, (world - 1).bit_length())  # lowest set bit (rank 0: all)
        step = 1
        while step < low and rank + step < world:  # children, nearest first: their subtrees' merges
            dist.recv(buffer, src=rank + step, group=group)
            mine = merge(mine, buffer.numpy().copy())
            step <<= 1
        if rank:
            dist.send(torch.from_numpy(mine), dst=rank - low, group=group)
            dist.recv(buffer, src=rank - low, group=group)
            mine = buffer.numpy().copy()
        step = low >> 1 if rank else 1 << max(0, (world - 1).bit_length() - 1)
        while step >= 1:  # the result down to the children, farthest first
            if rank + step < world:
                dist.send(torch.from_numpy(mine), dst=rank + step, group=group)
            step >>= 1
        return mine

    def barrier(self, label: str) -> None:
        self._collective(label, "barrier", lambda: self._wait("barrier", self._dist.barrier(group=self._group, async_op=True)))

    def gather(self, label: str, value: Any) -> List[Any]:
        """Every rank's ``value`` (a small picklable object), in rank order."""
        out: List[Any] = [None] * self.world
        self._collective(label, "schedules", lambda: self._dist.all_gather_object(out, value, group=self._group))
        return out

    def report_failure(self, reason: str) -> None:
        """This rank's training failed: say so in the rendezvous store, so that the ranks the launcher stops next
        can name it (one counter and one key per failure: reading them costs the failures, not the ranks)."""
        store = self._store
        if store is None:
            return
        try:
            index = int(store.add(f"{FAILED_KEY}/count", 1))
            store.set(f"{FAILED_KEY}/{index}", f"{self.rank}\n{reason}")
        except Exception:  # the store is gone (its host ended): nothing to tell
            pass

    def failures(self) -> List[Tuple[int, str]]:
        """The ranks that said their training failed, as (rank, reason), in the order they said it."""
        store = self._store
        if store is None:
            return []
        out: List[Tuple[int, str]] = []
        try:
            count = int(store.add(f"{FAILED_KEY}/count", 0))
            for index in range(1, min(count, SHOWN_RANKS) + 1):
                key = f"{FAILED_KEY}/{index}"
                deadline = time.monotonic() + FAILED_READ_S  # the key follows its count at once
                while not store.check([key]) and time.monotonic() < deadline:
                    time.sleep(0.02)
                if not store.check([key]):
                    continue
                rank, _, reason = bytes(store.get(key)).decode("utf-8", "replace").partition("\n")
                out.append((int(rank), reason))
        except Exception:  # the store is gone, or its reads time out
            return out
        return out

    def shutdown(self) -> None:
        """Tear the process groups down on this thread, so no worker thread is left to free a tensor during exit."""
        if self._dist.is_initialized():
            self._dist.destroy_process_group()
        self._held.clear()
        self._group = None


RANK_LISTS_DEFAULT = 64  # global.dist_rank_lists' default: past it, the schedule check reduces a hash
SETTLE_S = 1.0  # a failed collective's missing ranks are read until unchanged this long ...
SETTLE_CAP_S = 10.0  # ... but no longer than this (or a quarter of dist_timeout)
SHOWN_RANKS = 32  # missing ranks named in the error; the rest are counted
FAILED_KEY = "benchy/failed"  # the store's keys where a failing rank says so (report_failure)
FAILED_READ_S = 1.0  # the longest wait for a failure's key once its count is there


def _lazy_group(dist: Any, timeout_s: float) -> Any:
    """benchy's gloo group, connecting each pair of ranks only when a collective first needs it (the variable is set
    only while the group is made: the job's own groups are left as they are)."""
    name = "TORCH_GLOO_LAZY_INIT"
    before = os.environ.get(name)
    os.environ[name] = "1"
    try:
        return dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=timeout_s))
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def missing_ranks(store: Any, key: str, world: int) -> List[int]:
    """The ranks without a ``<key>/<r>`` entry in ``store``, in about ``2 k log2(world)`` reads for ``k`` missing."""
    names = [f"{key}/{r}" for r in range(world)]
    out: List[int] = []

    def walk(low: int, high: int) -> None:
        if store.check(names[low:high]):
            return
        if high - low == 1:
            out.append(low)
            return
        middle = (low + high) // 2
        walk(low, middle)
        walk(middle, high)

    walk(0, world)
    return out


def disagreement(values: Sequence[Any]) -> Optional[str]:
    """None when every rank holds the same mapping; else the keys that differ, rank by rank."""
    first = values[0]
    if all(v == first for v in values[1:]):
        return None
    keys = sorted({k for v in values for k in v if len({repr(w.get(k)) for w in values}) > 1})
    return "; ".join(f"{key} ({', '.join(f'rank {r}: {v.get(key)!r}' for r, v in enumerate(values))})" for key in keys)


def make_comm(timeout_s: float) -> Any:
    """A :class:`TorchComm` when torch.distributed runs with several ranks, else local."""
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover
        return LocalComm()
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return TorchComm(timeout_s)
    return LocalComm()


def merge_summaries(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Two partial summaries (see :func:`summarised`) as one."""
    out = a.copy()
    out[0] += b[0]  # samples
    if b[1] > a[1] or (b[1] == a[1] and b[2] < a[2]):
        out[1], out[2] = b[1], b[2]  # the slowest time and rank (the lowest rank of a tie)
    if b[3] < a[3] or (b[3] == a[3] and b[4] < a[4]):
        out[3], out[4] = b[3], b[4]  # the fastest
    out[5] += b[5]  # the ranks' times, summed
    out[6] = min(a[6], b[6])  # the warm-up change of the rank still speeding up most
    out[7] += b[7]  # ranks that could not tell it
    return out


def summarised(comm: Any, result: TrialResult, change: Optional[float]) -> Tuple[TrialResult, Optional[float]]:
    """:func:`combine` past ``dist_rank_lists`` ranks: fixed-size figures reduced in place of every rank's list."""
    rank = float(comm.rank)
    unknown = change is None or math.isnan(change)
    mine = [
        float(result.samples),
        result.seconds,
        rank,
        result.seconds,
        rank,
        result.seconds,
        math.inf if unknown else float(change),  # type: ignore[arg-type]
        1.0 if unknown else 0.0,
    ]
    total = comm.reduce(result.label, mine, merge_summaries)
    summary = RankSummary(
        ranks=comm.world,
        slowest=int(total[2]),
        slowest_seconds=float(total[1]),
        fastest=int(total[4]),
        fastest_seconds=float(total[3]),
        mean_seconds=float(total[5]) / comm.world,
        own_samples=result.samples,
        own_seconds=result.seconds,
    )
    combined = dataclasses.replace(result, samples=int(np.rint(total[0])), seconds=float(total[1]), rank_summary=summary)
    return combined, (None if total[7] > 0 else float(total[6]))


def combine(comm: Any, result: TrialResult, change: Optional[float], lists: int = 1 << 30) -> Tuple[TrialResult, Optional[float]]:
    """All ranks' view of a trial: samples of all ranks over the slowest rank's time, and the warm-up change of the
    rank still speeding up most (None when a rank could not tell)."""
    if comm.world == 1:
        return result, change
    if comm.world > lists:
        return summarised(comm, result, change)
    reports = comm.exchange(
        result.label,
        result.samples,
        result.seconds,
        math.nan if change is None else change,
        math.nan if result.started is None else result.started,
    )
    samples, seconds, changes, started = zip(*reports)
    combined = dataclasses.replace(
        result,
        samples=sum(samples),
        seconds=max(seconds),
        rank_samples=samples,
        rank_seconds=seconds,
        rank_started=() if any(math.isnan(s) for s in started) else started,
    )
    return combined, (None if any(math.isnan(c) for c in changes) else min(changes))


def schedule_digest(fingerprint: Any) -> List[float]:
    """A fingerprint's hash as two 26-bit halves (exact in float64) and their negatives: reduced by ``max``, equal
    halves and negatives say every rank holds the same."""
    import hashlib

    value = int.from_bytes(hashlib.sha256(repr(sorted(fingerprint.items())).encode()).digest()[:7], "big") >> 4
    high, low = float(value >> 26), float(value & ((1 << 26) - 1))
    return [high, low, -high, -low]


def agree(comm: Any, fingerprint: Any, lists: int = RANK_LISTS_DEFAULT) -> None:
    """Raise a DistributedError on every rank, together, when their schedules differ (their results are combined
    trial by trial). Past ``lists`` ranks a hash is compared first; the schedules are gathered only when it differs."""
    if comm.world > lists and hasattr(comm, "reduce"):
        found = comm.reduce("start (schedule check)", schedule_digest(fingerprint), np.maximum, "schedule hashes")
        if found[0] == -found[2] and found[1] == -found[3]:
            return
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
