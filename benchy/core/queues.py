"""The loader pipeline as a discrete-event simulation: workers, their prefetch queue, in-order delivery, the main
process's receive and the step, driven by resampled measured times (pure: numpy, no torch).

A steady-pace model takes the slower of the loader's and the step's mean paces. Where the two are close (the
knee: "will more workers or a faster step pay off?") they queue for each other: a slow batch the step waits
for is not made up by a fast one later when the prefetch queue is full, and the main process can only hand a
worker its next index once it received a batch. This module plays PyTorch's ``DataLoader`` pipeline batch
by batch with the times the run measured:

* batch ``b`` goes to worker ``b mod W`` (the index queues are filled round robin); a worker makes its
  batches one after the other, in the order it got them;
* ``depth = W x prefetch_factor`` indices are handed out at the start; the next one, ``b + depth``, when
  the main process has received batch ``b`` (``_process_data`` puts an index before returning the batch);
* the main process asks for batch ``b`` when the step of batch ``b - 1`` ends, waits for it (in order:
  a later batch ready does not help), receives it (``m``) and runs the step (``s``).

Where the threads' CPU work can ask for more cores than there are (``shares``: the share of a worker's, the
receive's and the step's time on the CPU, the step's as the cores it keeps busy; ``cores``: the cores free), the
cores are shared as the operating system shares them, fairly among the threads that run (processor sharing):
each thread's CPU work goes at ``cores / demand`` of its pace while the running threads' CPU shares add up to
more than the cores, its waits (storage, sleeps) at their own. So a step beside busy workers takes longer, and
the cores stand idle while the workers, ahead by a full queue, wait for an index: the average of the CPU work
over the cores is a bound that such a loop does not reach.

Each time is a measured mean times a factor drawn from the measured distribution's shape (its quantiles
over its mean); the slowest worker keeps its measured pace over the others'. :func:`periods` gives the
steady seconds a batch of several variants of the same pipeline (columns: the ends of an interval, other
step times) from the same draws (common random numbers: their differences are the model's, not the
draws'); the draws are seeded, so a run's prediction does not move when it is worked out again.
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
    """The shape of a measured distribution (its values in one or more pieces: a run's trials): its quantiles
    at ``QUANTILES`` evenly spaced levels (the 1st to the 99th percentile: one stray reading does not make the
    tail), over its mean; () without a positive mean or with fewer than 8 values. Pooled in single precision
    and partitioned in place: 4 bytes a value for a moment, whatever the run's length."""
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
    if not shape:
        return np.ones(n)
    return np.interp(rng.random(n), np.linspace(0.0, 1.0, len(shape)), np.asarray(shape))


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
    """Steady seconds a batch of the pipeline with ``workers`` (at least 1) and ``depth`` indices handed out
    ahead, for each column of ``worker``, ``main`` and ``step`` (mean seconds a batch, each on a core of its
    own; ``step`` 0: the IO trials, nothing between the asks); ``slow``: the slowest worker's time over the
    workers' mean; ``shares``: the CPU share of a worker's time, of the receive's and the cores the step keeps
    busy; ``cores``: the cores they share (the module's docstring); ``memo``: each column's figure by its
    :data:`Column` key, read and filled (a model's variants share many columns: IO's do not depend on the step)."""
    if workers < 1:
        raise ValueError(f"periods: workers must be 1 or more, got {workers}")
    if batches <= WARM:
        raise ValueError(f"periods: batches must be more than the {WARM} left out while the queues fill, got {batches}")
    if not cores > 0 or any(not 0.0 <= f < math.inf for f in shares):
        raise ValueError(f"periods: cores must be more than 0 and the CPU shares 0 or more, got {cores} and {shares}")
    w_mean = np.asarray(worker, dtype=np.float64)
    m_mean = np.asarray(main, dtype=np.float64)
    s_mean = np.asarray(step, dtype=np.float64)
    depth = max(workers, depth)
    rng = np.random.default_rng(SEED)
    fw, fm, fs = _draw(shapes.worker, rng, batches), _draw(shapes.main, rng, batches), _draw(shapes.step, rng, batches)
    pace = np.ones(workers)
    if workers > 1 and slow > 1.0:  # worker 0 at the slowest one's pace, the others' mean keeps the measured mean
        pace[0] = slow
        pace[1:] = max(0.05, (workers - slow) / (workers - 1))
    cols = np.broadcast_shapes(w_mean.shape, m_mean.shape, s_mean.shape)
    out = np.empty(cols)
    on_w, on_m, on_s = shares
    for c in np.ndindex(cols):  # a column's batches one after the other: plain floats beat numpy's per-call cost here
        w, m = float(np.broadcast_to(w_mean, cols)[c]), float(np.broadcast_to(m_mean, cols)[c])
        stepping = float(np.broadcast_to(s_mean, cols)[c])
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
    """One column: the steady seconds a batch (see :func:`periods`)."""
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
    """The paces (a busy worker's, the main process's) with ``n`` workers busy and the main process waiting (0),
    receiving (1) or stepping (2): ``[n][phase]``. A thread whose time is ``share`` on the CPU (more than 1: all of
    it, on that many cores) goes at ``1 / ((1 - on) + on / room)`` of its pace, ``on`` its share up to 1 and
    ``room`` the cores over the running threads' demand (1 while the demand is within the cores)."""
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
    """One column with the cores shared among the running threads (see :func:`periods`): an event simulation
    in which every busy worker goes at the same pace, so the workers' progress is one clock (``done``: the
    seconds of its own work each busy worker has done since the start) and their batches' ends a heap on it."""
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
