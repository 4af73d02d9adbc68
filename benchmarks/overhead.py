"""benchy's own cost per batch on a trivial in-memory loader with a no-op step.

    python benchmarks/overhead.py [--nbatches 200000] [--runs 5] [--batch all|tensor|tuple|dict|tokens]
                                  [--count samples|tokens]

Batches are realistic structures: a single tensor, an ``(inputs, labels)`` tuple and a
``{"image": ..., "label": ...}`` dict (``--batch all``, the default, measures the three); ``--batch
tokens`` is a Hugging Face-style ``{"input_ids", "attention_mask", "labels"}`` dict of 32 x 512, and
``--count tokens`` runs with ``count: tokens`` (each batch's tokens added up, the mask summed on a sample).

For each trial kind, the per-batch time of the wrapped loop minus that of the plain loop
over the same in-memory batches, as the median over ``--runs`` runs with min-max. Two
views: "wall" times the user's whole ``for`` loop from outside (trial set-up included,
amortised over ``nbatches``); "in-trial" uses the trial time benchy itself records (the only
view of the hidden IO trials, compared with a bare ``for`` loop). Periodic lines every 1000 steps, to /dev/null.
Each is measured with benchy's ``nvtx`` key on and off: without an NVTX tool attached the
two should agree (benchy pushes no range either way); run under ``NVTX_INJECTION64_PATH=...`` to
see the cost of the ranges with a tool attached.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, List

import torch

from benchy import Mode
from benchy.torch import BenchmarkGenericIteratorWrapper


def bare_per_batch(batches: List[torch.Tensor]) -> float:
    """A bare ``for`` over the plain list: the baseline for benchy's in-trial time."""
    t0 = time.perf_counter()
    for _ in batches:
        pass
    return (time.perf_counter() - t0) / len(batches)


def plain_per_batch(batches: List[torch.Tensor]) -> float:
    """The same loop body as the wrapped "wall" loop, over the plain list."""
    clock = time.perf_counter
    first = last = 0.0
    for k, _ in enumerate(batches):
        if k == 0:
            first = clock()
        last = clock()
    return (last - first) / (len(batches) - 1)


def wrapped_run(batches: List[torch.Tensor], out_dir: str, nvtx: bool, count: str = "samples") -> Dict[str, float]:
    n = len(batches)
    mode = {"nbatches": n, "ntrials": 1, "nwarmup": 0}
    cfg = {
        "global": {
            "report_freq": 1000,
            "exit_after_tests": False,
            "output_dir": out_dir,
            "console": "plain",
            "nvtx": nvtx,
            "count": count,
        },
        "IO": mode,
        "synthetic": mode,
        "full": mode,
    }
    wrapper = BenchmarkGenericIteratorWrapper(batches, 2, benchy_config=cfg)
    wall: Dict[str, float] = {}
    clock = time.perf_counter
    for label in ("SYNTHETIC", "FULL"):
        first = last = 0.0
        extra = len(wrapper) - n  # SYNTHETIC's untimed extra step, whose FLOPs are counted: not a batch's cost
        for k, _ in enumerate(wrapper):
            if k == extra:
                first = clock()
            last = clock()
        # First to last batch as the loop sees them: trial set-up and close-out excluded.
        wall[label] = (last - first) / (n - 1)
    results = wrapper.benchy.results
    tag = "nvtx on" if nvtx else "nvtx off"
    out = {f"{m.value} in-trial, {tag}": results.measured(m)[0].seconds / n for m in Mode}
    out.update({f"{k} wall, {tag}": v for k, v in wall.items()})
    return out


def make_batches(kind: str, n: int) -> List[Any]:
    """Distinct batch objects of one structure, as a loader gives."""
    if kind == "tensor":
        return [torch.zeros(2, 2) for _ in range(n)]
    if kind == "tuple":
        return [(torch.zeros(2, 2), torch.zeros(2)) for _ in range(n)]
    if kind == "tokens":  # distinct dicts over shared tensors: 200 000 batches of 32 x 512 would not fit
        ids, mask = torch.ones(32, 512, dtype=torch.long), torch.ones(32, 512, dtype=torch.long)
        return [{"input_ids": ids, "attention_mask": mask, "labels": ids} for _ in range(n)]
    return [{"image": torch.zeros(2, 2), "label": torch.zeros(2)} for _ in range(n)]


def describe(batch: Any) -> str:
    if isinstance(batch, torch.Tensor):
        return "one tensor"
    if isinstance(batch, tuple):
        return "(inputs, labels) tuple"
    if "input_ids" in batch:
        return "{'input_ids', 'attention_mask', 'labels'} dict of 32 x 512"
    return "{'image', 'label'} dict"


def components(batch: Any, number: int = 1_000_000) -> Dict[str, float]:
    """What one FULL step of the hot loop is made of, each timed alone (ns)."""
    import timeit

    from benchy.measure.counting import make_counter

    def gen(items):
        for x in items:  # noqa: UP028 - the plain generator is the baseline being measured
            yield x

    items = [batch] * number
    leaf = (
        batch
        if isinstance(batch, torch.Tensor)
        else (batch[0] if isinstance(batch, tuple) else batch.get("image", batch.get("input_ids")))
    )
    env = {
        "counter": make_counter(batch),
        "b": batch,
        "leaf": leaf,
        "clock": time.perf_counter,
        "stamps": [0.0] * 4,
        "sizes": [0] * 4,
        "i": 2,
        "nr": -1,
    }

    def per(stmt: str) -> float:
        return timeit.timeit(stmt, globals=env, number=number) / number * 1e9

    t0 = time.perf_counter()
    for _ in items:
        pass
    plain = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in gen(items):
        pass
    generator = time.perf_counter() - t0
    found = {
        "count samples: counter(batch)": per("counter(b)"),
        "  of which the leaf's .shape[0]": per("leaf.shape[0]"),
        "timestamp: stamps[i] = clock()": per("stamps[i] = clock()"),
        "store the size: sizes[i] = 2": per("sizes[i] = 2"),
        "report check: i == nr": per("i == nr"),
        "generator resume + yield vs list": (generator - plain) / number * 1e9,
    }
    if isinstance(batch, dict) and "attention_mask" in batch:
        from benchy.measure.counting import TokenTally

        tally = TokenTally(make_counter(batch), batch)
        env.update(tally=tally.count, mask=batch["attention_mask"])
        found["count: tokens, tally(batch)"] = per("tally(b)")
        found[f"  its mask sum on 1 in {tally.every} batches"] = per("int(mask.sum())") / tally.every
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nbatches", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--batch", choices=["all", "tensor", "tuple", "dict", "tokens"], default="all")
    parser.add_argument(
        "--count", choices=["samples", "tokens"], default="samples", help="tokens: count: tokens (needs --batch tokens)"
    )
    args = parser.parse_args()
    kinds = ["tensor", "tuple", "dict"] if args.batch == "all" else [args.batch]
    if args.count == "tokens" and kinds != ["tokens"]:
        parser.error("--count tokens needs --batch tokens (batches with token ids)")
    tool = os.environ.get("NVTX_INJECTION64_PATH")
    print(
        f"benchy per-batch overhead, ns (median of {args.runs} runs, min-max); "
        f"{args.nbatches} batches; Python {platform.python_version()}, torch {torch.__version__}, "
        f"{platform.processor() or platform.machine()}, "
        + (f"NVTX tool attached: {tool}" if tool else "no NVTX tool attached")
        + f"; count: {args.count}"
    )
    for kind in kinds:
        # Distinct objects, as a loader gives; a list so the "loader" costs only the iteration.
        batches = make_batches(kind, args.nbatches + 2)
        overheads: Dict[str, List[float]] = {}
        with tempfile.TemporaryDirectory() as out_dir:
            for _ in range(args.runs):
                bare = statistics.median(bare_per_batch(batches) for _ in range(3))
                plain = statistics.median(plain_per_batch(batches) for _ in range(3))
                for nvtx in (True, False):
                    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
                        wrapped = wrapped_run(batches[: args.nbatches], out_dir, nvtx, args.count)
                    for key, value in wrapped.items():
                        # The hidden IO trial runs no loop body: compare it with a bare loop. The
                        # other trials' times include the loop body, as the plain loop's do.
                        base = bare if key.startswith("IO") else plain
                        overheads.setdefault(key, []).append((value - base) * 1e9)
        print(f"\n{kind} batches: {describe(batches[0])}")
        print(f"{'measure':<32} {'median':>8} {'min':>8} {'max':>8}")
        for key in sorted(overheads):
            values = overheads[key]
            print(f"{key:<32} {statistics.median(values):8.1f} {min(values):8.1f} {max(values):8.1f}")
        print(f"where a FULL step's time goes with {kind} batches (each piece timed alone with timeit, ns)")
        for key, value in components(batches[0]).items():
            print(f"{key:<36} {value:6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
