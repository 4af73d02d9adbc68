"""Ranks: what benchy's own distributed layer costs as the job grows (2 to 32 gloo ranks on one machine).

    python benchmarks/ranks.py                      # 2, 4, 8, 16, 32 ranks; about 4 minutes on 2 cores
    python benchmarks/ranks.py --ranks 2 4 --trials 10

Each size is one ``torchrun`` job (``OMP_NUM_THREADS=1``) whose ranks first make the job's own gloo
group, as a training script does, and then measure, each on its own, what benchy adds on top:

* set-up: :class:`benchy.measure.ranks.TorchComm` (benchy's own gloo group with its bounded wait) and
  the schedule check (:func:`benchy.measure.ranks.agree`: an object all-gather up to ``dist_rank_lists``
  ranks, a hash reduced up and down a tree past it; both timed), as at the first epoch;
* per trial: the exchange of (samples, seconds, drift, start) (an all-gather: up to ``dist_rank_lists``
  ranks), the summary reduced up and down a binomial tree in its place past that bound, the barrier that
  ``use_distributed_barrier`` adds, and the keys benchy wrote to the rendezvous store meanwhile (all
  ranks together);
* per process: sockets, other file descriptors, threads and RSS that benchy added, read after the
  trials (a lazily connected group opens its sockets at its collectives' first use).

The ranks are aligned with a barrier on the job's group before each timed call, so a time is the
collective's own (what the slowest rank makes the others wait shows in the max). Every rank is a
process on this machine: with more ranks than cores they take turns on the CPU, so times at 4 ranks
and up carry the machine's oversubscription, not the network's latency; sockets, threads and memory
do not depend on it.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

HERE = Path(__file__).resolve().parent


def _fds() -> Dict[str, int]:
    """This process's open file descriptors: sockets, and the rest."""
    sockets = others = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:"):
            sockets += 1
        else:
            others += 1
    return {"sockets": sockets, "fds": others}


def _process() -> Dict[str, float]:
    import psutil

    me = psutil.Process()
    return {**_fds(), "threads": me.num_threads(), "rss": me.memory_info().rss}


def worker(trials: int, out: str) -> int:
    import torch.distributed as dist

    from benchy.core.schedule import Schedule
    from benchy.measure.ranks import TorchComm, agree, merge_summaries
    from benchy.results.configfile import load_config

    dist.init_process_group("gloo")  # the job's own group, as a training script makes it
    rank, world = dist.get_rank(), dist.get_world_size()
    job = dist.new_group(backend="gloo")  # to align the ranks without touching benchy's group
    dist.barrier(job)
    before = _process()
    dist.barrier(job)
    start = time.perf_counter()
    comm = TorchComm(600.0)
    made = time.perf_counter() - start
    dist.barrier(job)
    start = time.perf_counter()
    fingerprint = Schedule.from_config(load_config(environ={})).fingerprint()
    agree(comm, fingerprint)  # up to dist_rank_lists ranks: every rank's schedule gathered
    checked = time.perf_counter() - start
    dist.barrier(job)
    start = time.perf_counter()
    agree(comm, fingerprint, lists=0)  # past it: a hash reduced up and down the tree
    hashed = time.perf_counter() - start
    after = _process()
    exchange: List[float] = []
    summary: List[float] = []
    barrier: List[float] = []
    store = dist.distributed_c10d._get_default_store()
    dist.barrier(job)
    keys = store.num_keys()
    for k in range(trials):
        dist.barrier(job)
        start = time.perf_counter()
        comm.exchange(f"T{k}", 32, 0.5, 0.0, time.time())
        exchange.append(time.perf_counter() - start)
        dist.barrier(job)
        start = time.perf_counter()
        comm.reduce(f"T{k}", [32.0, 0.5, float(rank), 0.5, float(rank), 0.5, 0.0, 0.0], merge_summaries)
        summary.append(time.perf_counter() - start)
        dist.barrier(job)
        start = time.perf_counter()
        comm.barrier(f"T{k}")
        barrier.append(time.perf_counter() - start)
    dist.barrier(job)
    written = (store.num_keys() - keys) / trials  # every rank's, per trial (job barriers write none)
    end = _process()  # after the trials: a lazily connected group has opened what its collectives need
    found = {
        "rank": rank,
        "world": world,
        "setup_s": made,
        "agree_s": checked,
        "agree_hash_s": hashed,
        "exchange_s": exchange,
        "barrier_s": barrier,
        "summary_s": summary,
        "store_keys_per_trial": written,
        "added": {key: end[key] - before[key] for key in before},
        "added_at_setup": {key: after[key] - before[key] for key in before},
    }
    everyone: List[Any] = [None] * world
    dist.all_gather_object(everyone, found, group=job)
    if rank == 0:
        Path(out).write_text(json.dumps(everyone))
    comm.shutdown()  # destroys every group, the job's included
    return 0


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(nranks: int, trials: int) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ranks.json")
        env = dict(os.environ, OMP_NUM_THREADS="1", TMPDIR=tmp)
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            str(nranks),
            "--master_addr",
            "127.0.0.1",
            "--master_port",
            str(_port()),
            str(HERE / "ranks.py"),
            "--worker",
            "--trials",
            str(trials),
            "--out",
            out,
        ]
        started = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise SystemExit(f"{nranks} ranks failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        ranks = json.loads(Path(out).read_text())
    return {"ranks": ranks, "wall_s": wall}


def _ms(values: List[float]) -> str:
    return f"{1e3 * statistics.median(values):.2f} / {1e3 * max(values):.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--json", metavar="OUT.json", help="also write every rank's figures")
    args = parser.parse_args()
    if args.worker:
        return worker(args.trials, args.out)
    print(
        f"benchy's own distributed layer, gloo on one machine ({os.cpu_count()} cores), OMP_NUM_THREADS=1, "
        f"{args.trials} trials; times in ms, median / max over ranks (and trials)"
    )
    header = (
        f"{'ranks':>5} | {'set-up':>15} | {'schedule check':>17} | {'hash check':>15} | {'exchange':>15} | "
        f"{'summary':>15} | "
        f"{'barrier':>15} | "
        f"{'store keys':>10} | {'sockets':>7} | {'fds':>4} | {'threads':>7} | {'RSS MB':>6}"
    )
    print(header)
    print("-" * len(header))
    kept: Dict[int, Any] = {}
    for n in args.ranks:
        found = run(n, args.trials)
        kept[n] = found
        ranks = found["ranks"]
        added = [r["added"] for r in ranks]

        def med(key: str, added: List[Dict[str, float]] = added) -> float:
            return float(statistics.median(a[key] for a in added))

        print(
            f"{n:>5} | {_ms([r['setup_s'] for r in ranks]):>15} | {_ms([r['agree_s'] for r in ranks]):>17} | "
            f"{_ms([r['agree_hash_s'] for r in ranks]):>15} | "
            f"{_ms([x for r in ranks for x in r['exchange_s']]):>15} | "
            f"{_ms([x for r in ranks for x in r['summary_s']]):>15} | "
            f"{_ms([x for r in ranks for x in r['barrier_s']]):>15} | "
            f"{ranks[0]['store_keys_per_trial']:>10.0f} | {med('sockets'):>7.0f} | "
            f"{med('fds'):>4.0f} | {med('threads'):>7.0f} | {med('rss') / 1e6:>6.1f}",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(kept))
    return 0


if __name__ == "__main__":
    sys.exit(main())
