"""The loader pipeline as a discrete-event simulation: workers, their prefetch queue, in-order delivery, the main
process's receive and the step, driven by resampled measured times (pure: numpy, no torch). The model and its
rules (round-robin indices, ``W x prefetch_factor`` ahead, in-order delivery, cores shared fairly among the
running threads) are described in docs/guide/whatif.md, "Queues" and "Shared cores".

:func:`periods` plays several variants of one pipeline (columns) from the same seeded draws (common random
numbers: their differences are the model's, not the draws'; a run's prediction does not move when worked out again).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

BATCHES = 1200  # batches simulated; the first WARM are left out (the queues filling)
WARM = 200
QUANTILES = 41  # points a measured distribution's shape keeps
SEED = 20211115  # the draws: fixed, so that the same inputs give the same figures

Shape = Tuple[float, ...]  # a distribution's quantiles over its mean (QUANTILES points, ascending); () = constant


def shape_of(*pieces: Sequence[float] | np.ndarray) -> Shape:
    """The shape of a measured distribution (in one or more pieces): its 1st to 99th percentiles (one stray reading
    does not make the tail) over its mean; () with fewer than 8 values. Pooled in single precision: 4 bytes a
    value for a moment, whatever the run's length."""
    x = np.empty(sum(len(piece) for piece in pieces), dtype=np.float32)
    at = 0
    for piece in pieces:
        x[at : at + len(piece)] = np.asarray(piece, dtype=np.float32)
        at += len(piece)
    finite = np.isfinite(x)
    if not finite.all():
        x = x[finite]
    del finite
    if x.size < 8 or x.mean(dtype=np.float64) <= 0:
        return ()
    q = np.quantile(x, np.linspace(0.01, 0.99, QUANTILES), overwrite_input=True).astype(np.float64)
    mean = float(q.mean())  # the shape's own mean is 1: resampling keeps the measured mean
    return tuple(float(v) / mean for v in q) if mean > 0 else ()


# A column's inputs as :func:`periods` plays it (workers, depth, its three means, slow, the shapes, batches, the
# shares, the cores): equal keys give equal figures (the draws are seeded), so a caller that plays many variants
# of one pipeline can keep each column's figure by its key (``memo``).
Column = Tuple[int, int, float, float, float, float, "Shapes", int, Tuple[float, float, float], float]


@dataclass(frozen=True)
class Shapes:
    """The measured shapes of a worker's time a batch, the main process's receive and the step."""

    worker: Shape = ()
    main: Shape = ()
    step: Shape = ()


def _draw(shape: Shape, rng: np.random.Generator, n: int) -> np.ndarray:
    return np.ones(n) if not shape else np.interp(rng.random(n), np.linspace(0.0, 1.0, len(shape)), np.asarray(shape))


def periods(
    workers: int,
    depth: int,
    worker: np.ndarray,
    main: np.ndarray,
    step: np.ndarray,
    *,
    slow: float = 1.0,
    shapes: Shapes = Shapes(),
    batches: int = BATCHES,
    shares: Tuple[float, float, float] = (0.0, 0.0, 0.0),
    cores: float = math.inf,
    memo: Optional[Dict[Column, float]] = None,
) -> np.ndarray:
    """Steady seconds a batch for each column of ``worker``, ``main`` and ``step`` (mean seconds a batch; ``step``
    0: the IO trials); ``slow``: the slowest worker's time over the workers' mean; ``shares``: the CPU share of a
    worker's time, of the receive's, and the cores the step keeps busy; ``memo``: figures by :data:`Column` key,
    read and filled (a model's variants share many columns)."""
    if workers < 1:
        raise ValueError(f"periods: workers must be 1 or more, got {workers}")
    if batches <= WARM:
        raise ValueError(f"periods: batches must be more than the {WARM} left out while the queues fill, got {batches}")
    if not cores > 0 or any(not 0.0 <= f < math.inf for f in shares):
        raise ValueError(f"periods: cores must be more than 0 and the CPU shares 0 or more, got {cores} and {shares}")
    w_mean, m_mean, s_mean = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (worker, main, step)))
    depth = max(workers, depth)
    rng = np.random.default_rng(SEED)
    fw, fm, fs = _draw(shapes.worker, rng, batches), _draw(shapes.main, rng, batches), _draw(shapes.step, rng, batches)
    pace = np.ones(workers)
    if workers > 1 and slow > 1.0:  # worker 0 at the slowest one's pace, the others' mean keeps the measured mean
        pace[0] = slow
        pace[1:] = max(0.05, (workers - slow) / (workers - 1))
    out = np.empty(w_mean.shape)
    on_w, on_m, on_s = shares
    for c in np.ndindex(w_mean.shape):  # a column's batches one after the other: plain floats beat numpy's per-call cost here
        w, m, stepping = float(w_mean[c]), float(m_mean[c]), float(s_mean[c])
        key: Column = (workers, depth, w, m, stepping, slow, shapes, batches, shares, cores)
        if memo is not None and key in memo:
            out[c] = memo[key]
            continue
        ws = (w * fw * pace[np.arange(batches) % workers]).tolist()
        ms = (m * fm).tolist()
        ss = (stepping * fs).tolist()
        # The threads can ask for more cores than there are (the step's only where there is one: not in IO).
        shared = workers * min(1.0, on_w) + max(min(1.0, on_m), on_s if stepping > 0 else 0.0) > cores
        out[c] = _play_shared(workers, depth, ws, ms, ss, shares, cores) if shared else _play(workers, depth, ws, ms, ss)
        if memo is not None:
            memo[key] = float(out[c])
    return out


def _play(workers: int, depth: int, ws: Sequence[float], ms: Sequence[float], ss: Sequence[float]) -> float:
    n = len(ws)
    got = [0.0] * n
    free = [0.0] * workers  # each worker's end of its last batch
    asked = 0.0
    for b in range(n):
        lane = b % workers
        handed = got[b - depth] if b >= depth else 0.0
        last = free[lane]
        ready = (handed if handed > last else last) + ws[b]
        free[lane] = ready
        g = (asked if asked > ready else ready) + ms[b]
        got[b] = g
        asked = g + ss[b]
    return (got[n - 1] - got[WARM - 1]) / (n - WARM)


def _paces(workers: int, shares: Tuple[float, float, float], cores: float) -> List[List[Tuple[float, float]]]:
    """The paces (a busy worker's, the main process's), ``[n workers busy][main: waiting, receiving, stepping]``: a
    thread goes at ``1 / ((1 - on) + on / room)``, ``on`` its CPU share up to 1, ``room`` the cores over the demand."""
    fw, fm, fs = shares

    def pace(on: float, room: float) -> float:
        return 1.0 / ((1.0 - on) + on / room)

    table: List[List[Tuple[float, float]]] = []
    for n in range(workers + 1):
        row: List[Tuple[float, float]] = []
        for own in (0.0, fm, fs):
            demand = n * fw + own
            room = cores / demand if demand > cores else 1.0
            row.append((pace(min(1.0, fw), room), pace(min(1.0, own), room)))
        table.append(row)
    return table


def _play_shared(
    workers: int,
    depth: int,
    ws: Sequence[float],
    ms: Sequence[float],
    ss: Sequence[float],
    shares: Tuple[float, float, float],
    cores: float,
) -> float:
    """One column with the cores shared: every busy worker goes at the same pace, so the workers' progress is one
    clock (``done``) and their batches' ends a heap on it."""
    paces = _paces(workers, shares, cores)
    n = len(ws)
    got = [0.0] * n
    ready = [math.inf] * n
    ends: List[Tuple[float, int]] = []  # (the workers' clock at which the batch is made, the batch)
    idle = [True] * workers  # a worker whose next batch's index is not handed out yet (batch b is worker b mod W's)
    handed = min(depth, n)  # the batches whose index was handed out
    done = now = 0.0
    push, pop = heapq.heappush, heapq.heappop
    for lane in range(workers):
        if lane < handed:
            idle[lane] = False
            push(ends, (ws[lane], lane))
    b, phase, left = 0, 0, 0.0  # the main process: 0 waits for batch b, 1 receives it, 2 runs its step
    while b < n:
        if phase == 0 and ready[b] <= now:
            phase, left = 1, ms[b]
        pace_w, pace_m = paces[len(ends)][phase]
        to_worker = (ends[0][0] - done) / pace_w if ends else math.inf
        to_main = left / pace_m if phase else math.inf
        if to_worker <= to_main:
            if to_worker == math.inf:
                raise RuntimeError("periods: the pipeline stalled (no worker busy, the main process waiting)")
            now += to_worker
            done = ends[0][0]
            if phase:
                left -= to_worker * pace_m
            while ends and ends[0][0] <= done:
                made = pop(ends)[1]
                ready[made] = now
                following = made + workers
                if following < handed:
                    push(ends, (done + ws[following], following))
                else:
                    idle[made % workers] = True
            if not phase or left > 0.0:
                continue
        else:
            now += to_main
            done += to_main * pace_w
        if phase == 1:  # received: the next index goes out, the step starts
            got[b] = now
            if b + depth < n:  # the next index goes to its worker; an idle one was waiting for just this one
                handed = b + depth + 1
                lane = (b + depth) % workers
                if idle[lane]:
                    idle[lane] = False
                    push(ends, (done + ws[b + depth], b + depth))
            phase, left = 2, ss[b]
            if left > 0.0:
                continue
        b, phase = b + 1, 0
    return (got[n - 1] - got[WARM - 1]) / (n - WARM)
