"""Long runs: about 7 bytes kept per timed batch, at most 12 at the peak, and checkpoints that cost the new trial only.

In-process runs of a wrapper over in-memory ``(inputs, labels)`` batches; memory is read
with ``tracemalloc`` (deterministic: no timing is asserted here).
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import math
import os
import tracemalloc
from array import array
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest
import torch

from benchy import ConfigError, Mode, load_config
from benchy.core.results import TrialResult
from benchy.core.schedule import TrialSpec
from benchy.results.document import read_file
from benchy.results.files import write_document
from benchy.torch import BenchmarkGenericIteratorWrapper


def batches(n: int, size: int = 300) -> List[Tuple[torch.Tensor, torch.Tensor]]:
    # 300 samples: above CPython's cached small ints, so a per-step list of counts pays for them.
    return [(torch.zeros(size, 1), torch.zeros(size, dtype=torch.long)) for _ in range(n)]


def wrapper(data: List[Any], out: Path, nbatches: int, ntrials: int = 1, nwarmup: int = 0, **global_: Any) -> Any:
    mode = {"nbatches": nbatches, "ntrials": ntrials, "nwarmup": nwarmup}
    g = {"report_freq": 0, "exit_after_tests": False, "output_dir": str(out), "console": "plain"}
    g.update(global_)
    return BenchmarkGenericIteratorWrapper(data, 300, benchy_config={"global": g, "IO": mode, "synthetic": mode, "full": mode})


def epochs(w: Any, k: int) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        for _ in range(k):
            for _ in w:
                pass


def until_done(w: Any, most: int = 50) -> None:
    """Epochs of the loop until the schedule is over (at most ``most``)."""
    for _ in range(most):
        if w.benchy.done:
            return
        epochs(w, 1)
    assert w.benchy.done, "the schedule did not finish"


def held_bytes(data: List[Any], out: Path, nbatches: int) -> Tuple[int, int]:
    """Memory still held by a finished schedule (1 trial per mode) over the memory before it, and the most it
    held at any moment of the run (its final JSON and summary included)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        w = wrapper(data, out, nbatches)
        until_done(w)
        gc.collect()
        kept, peak = tracemalloc.get_traced_memory()
        return kept - before, peak - before
    finally:
        tracemalloc.stop()


def test_a_finished_schedule_keeps_about_7_bytes_per_timed_batch_and_held_at_most_12(tmp_path: Path) -> None:
    data = batches(24_577)
    until_done(wrapper(data[:11], tmp_path, 10))  # imports and one-time caches, not per batch
    # Both at least as long as the buffers of a fixed size (the loop's chunk of 4 096 stamps, the slices the per-step
    # file and the final JSON are written in), which then cost both runs the same.
    small, large = 8_192, 24_576
    # Objects that other tests' sessions leave behind and free at unforeseen times add or take some
    # 20 to 80 kB to either run (0.4 to 1.4 bytes a batch): the least of two pairs is the schedule's own.
    kept, peak = [], []
    for k in range(2):
        held_small, held_large = (
            held_bytes(data[: small + 1], tmp_path / f"a{k}", small),
            held_bytes(data, tmp_path / f"b{k}", large),
        )
        for found, i in ((kept, 0), (peak, 1)):  # 3 trials each
            found.append(((held_large[i] - held_small[i]) / (3 * (large - small)), held_small[i], held_large[i]))
    # Lists of Python floats and ints kept 32 to 68 bytes per batch (issue 10 measured 87); then
    # 16 (8-byte counts); then 8 for the time and 2 for the count of these 300-sample batches and in FULL 4 for
    # the wait; now 4 for the time (single precision), 2 for the count and in FULL 4 for the wait: 4 + 2 + 4/3
    # on average over the three, 7.3, and up to 1/16 more where an array grew last (CPython over-allocates by
    # about that): 7.8.
    per_batch, kept_small, kept_large = min(kept)
    assert per_batch <= 7.8, (
        f"{per_batch:.1f} bytes kept per timed batch (runs of {small} and {large} batches kept {kept_small} and "
        f"{kept_large} bytes)"
    )
    # The most held at any moment: the trials kept so far, the running trial's series (4 bytes a stamp, 4 more a
    # FULL wait, 4 a count where batches differ), its result being built, the end's figures (the percentiles read
    # the trials in place; the what-if model's step shape pools 4 bytes a SYNTHETIC step for a moment).
    per_batch, peak_small, peak_large = min(peak)
    assert per_batch <= 12.0, (
        f"{per_batch:.1f} bytes per timed batch at the peak (runs of {small} and {large} batches peaked at "
        f"{peak_small} and {peak_large} bytes)"
    )


def test_trial_results_store_their_steps_in_compact_arrays() -> None:
    result = TrialResult(
        TrialSpec(Mode.FULL, 1, False, 3), samples=6, seconds=0.3, step_seconds=(0.1, 0.1, 0.1), step_samples=[2, 2, 2]
    )
    assert isinstance(result.step_seconds, array) and result.step_seconds.typecode == "f"
    assert isinstance(result.step_samples, array) and result.step_samples.typecode == "B"
    assert result.step_seconds.buffer_info()[1] * result.step_seconds.itemsize == 12  # 4 bytes a period
    assert result == TrialResult(TrialSpec(Mode.FULL, 1, False, 3), 6, 0.3, [0.1] * 3, (2, 2, 2))
    assert result.step_rates().tolist() == pytest.approx([20.0] * 3) and result.mean_step_rate == pytest.approx(20.0)


def test_a_long_run_s_rates_are_double_precision_and_its_file_within_the_reader_s_bound() -> None:
    """The periods are kept in single precision; each per-step rate is the double-precision quotient of the count
    by the period as kept. Quotients in single precision print in 15 or 16 characters, and 40 000 of them made a
    long run's final JSON look too dense for benchy's reader (more than 3 times its size in memory)."""
    from benchy.core.results import StepRates
    from benchy.results.document import parse

    rng = np.random.default_rng(3)
    periods = rng.normal(0.00066, 0.00003, 40_000).astype(np.float32)
    trial = TrialResult(TrialSpec(Mode.FULL, 1, False, 40_000), 320_000, float(periods.sum()), periods, [8] * 40_000)
    rates = StepRates(trial).slice(0, 40_000).tolist()
    assert rates[:3] == [8 / float(p) for p in periods[:3]]  # exactly: the double-precision quotient
    text = json.dumps({"FULL": {"rates": [rates]}}, separators=(",", ":"))
    assert len(parse(text, "run.json")["FULL"]["rates"][0]) == 40_000


def test_step_counts_take_the_smallest_integer_type_that_holds_them() -> None:
    from benchy.core.results import samples_typecode

    assert [samples_typecode(c) for c in ([], [0, 255], [256], [65536], [1 << 32], [-1, 3])] == ["B", "B", "H", "I", "Q", "q"]
    big = TrialResult(TrialSpec(Mode.FULL, 1, False, 2), 70_000, 1.0, [0.5, 0.5], [35_000, 35_000])
    assert big.step_samples.typecode == "H" and big.samples_array().tolist() == [35_000, 35_000]
    assert big.step_rates().tolist() == [70_000.0, 70_000.0]


def snapshot(out: Path) -> Dict[str, Tuple[int, int]]:
    """Each per-step file's (inode, modification time in ns)."""
    steps = out / "benchy_result.steps"
    if not steps.exists():
        return {}
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in steps.iterdir()}


def test_checkpoints_cost_the_new_trial_and_the_final_json_keeps_the_rates(tmp_path: Path) -> None:
    sizes: Dict[int, List[int]] = {}
    for n in (10, 2_000):
        out = tmp_path / f"n{n}"
        data = batches(n + 1)
        w = wrapper(data, out, n, ntrials=2, nwarmup=1)
        seen: Dict[str, Tuple[int, int]] = {}
        sizes[n] = []
        for _ in range(20):  # SYNTHETIC and FULL: a warm-up and 2 trials each (IO runs before the first batch)
            if w.benchy.done:
                break
            epochs(w, 1)
            doc = json.loads((out / "benchy_result.json").read_text())
            now = snapshot(out)
            # Every trial that ended has its steps file and its system readings beside it; files written earlier were
            # not written again. (A FULL trial followed by another FULL window has its files with that one's: no
            # checkpoint comes between two FULL windows, where the loader's workers would make batches ahead.)
            ended = [name for t in w.benchy.results.trials for name in (f"{t.label}.npy", f"{t.label}.system.npy")]
            missing = sorted(set(ended) - set(now))
            assert set(now) <= set(ended) and len(missing) <= 2 and all(x.startswith("FULL_") for x in missing), missing
            assert all(now[name] == seen[name] for name in seen), "an earlier trial's file was rewritten"
            seen = now
            if not w.benchy.done:
                assert doc["complete"] is False and doc["steps_dir"] == "benchy_result.steps"
                assert all(doc[m]["rates"] is None for m in ("IO", "SYNTHETIC", "FULL")), "per-step data in a checkpoint"
                sizes[n].append(len(json.dumps(doc)))
        assert w.benchy.done
        assert read_file(str(out / "benchy_result.json"))["complete"] is True  # benchy's own reader takes it whole
        # The final JSON has the original's per-step rates, equal to the saved steps' samples / seconds.
        for mode in ("IO", "SYNTHETIC", "FULL"):
            rates = doc[mode]["rates"]
            # Every window measures its n periods (those its epochs' ends left out are made up); an IO trial leaves out
            # the period that holds a new pass's start-up where it runs into one (its passes of n + 1 batches).
            lengths = [len(r) for r in rates]
            assert lengths == [n, n] if mode != "IO" else all(k in (n - 1, n) for k in lengths), lengths
            for k, r in enumerate(rates, start=1):
                steps = np.load(out / "benchy_result.steps" / f"{mode}_{k}.npy")
                fields = ("seconds", "samples", "wait") if mode == "FULL" else ("seconds", "samples")
                assert steps.dtype.names == fields and len(steps) == lengths[k - 1]
                if mode == "FULL":  # each period's wait for data lies within the period
                    assert ((steps["wait"] >= 0) & (steps["wait"] <= steps["seconds"] * (1 + 1e-6))).all()
                assert (steps["samples"] == 300).all()
                assert r == pytest.approx((steps["samples"] / steps["seconds"]).tolist())
    # A checkpoint's size does not grow with the trials' length: a trial of 2 000 steps would add
    # some 36 KB of per-step rates; the figures per trial differ by a few hundred bytes at most.
    assert all(abs(big - small) < 2_000 for small, big in zip(sizes[10], sizes[2_000])), sizes


def test_save_steps_false_writes_no_per_step_files(tmp_path: Path) -> None:
    w = wrapper(batches(6), tmp_path, 5, save_steps=False)
    until_done(w)
    doc = json.loads((tmp_path / "benchy_result.json").read_text())
    assert doc["steps_dir"] is None and len(doc["FULL"]["rates"]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["benchy_result.json"]


def test_the_per_step_directory_is_checked_up_front(tmp_path: Path) -> None:
    (tmp_path / "run.steps").write_text("a file where benchy's directory would go")
    with pytest.raises(ConfigError, match=r"run\.steps is a file; benchy keeps per-step times in a directory"):
        load_config(overrides={"global": {"output_dir": str(tmp_path), "output_filename": "run.json"}})
    load_config(overrides={"global": {"output_dir": str(tmp_path), "output_filename": "run.json", "save_steps": False}})
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    name = "r" * (limit - 5) + ".json"  # fits; "<stem>.steps" is 1 byte longer than the limit
    with pytest.raises(ConfigError, match=r"per-step directory's name .* allows at most .*: shorten the name by 1"):
        load_config(overrides={"global": {"output_dir": str(tmp_path), "output_filename": name}})


def test_write_document_puts_each_per_step_list_on_one_line() -> None:
    doc = {
        "schema_version": 1,
        "note": "a \u0000benchy-per-step- lookalike",
        "IO": {"rates": [[1.5, 2.0], [None]], "n": 2},
        "FULL": {"rates": None},
        "SYNTHETIC": {"rates": [[3.25]]},
    }
    handle = io.StringIO()
    write_document(handle, doc)
    text = handle.getvalue()
    assert json.loads(text) == doc
    assert "[1.5, 2.0]" in text and "[3.25]" in text and text.endswith("}\n")
    with pytest.raises(ValueError):
        write_document(io.StringIO(), {"IO": {"rates": [[math.inf]]}})
    # Per-step arrays (the final document's rates): sliced, json's spelling, non-finite as null.
    import numpy as np

    from benchy.results import files

    values = np.array([0.1, 1e-7, 2.5e20, math.inf, 3.0, math.nan, 12345.678])
    default = files.SLICE
    try:
        for slice_ in (2, default):
            files.SLICE = slice_
            handle = io.StringIO()
            write_document(handle, {"IO": {"rates": [values, np.zeros(0)]}})
            expected = [[0.1, 1e-7, 2.5e20, None, 3.0, None, 12345.678], []]
            assert json.loads(handle.getvalue()) == {"IO": {"rates": expected}}
            assert json.dumps([0.1, 1e-07, 2.5e20, None, 3.0])[1:-1] in handle.getvalue()
    finally:
        files.SLICE = default


def test_written_files_get_the_usual_permissions(tmp_path: Path) -> None:
    """The JSON and per-step files are written privately, then renamed: they end with open()'s mode."""
    mask = os.umask(0o022)
    os.umask(mask)
    w = wrapper(batches(6), tmp_path, 5)
    until_done(w)
    files = [tmp_path / "benchy_result.json", *sorted((tmp_path / "benchy_result.steps").iterdir())]
    assert len(files) == 7  # the JSON, and a steps file and a readings file per trial
    for path in files:
        assert path.stat().st_mode & 0o777 == 0o666 & ~mask, (path, oct(path.stat().st_mode))


def test_step_files_written_a_slice_at_a_time_are_numpy_s_own(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from benchy.results import steps

    trial = TrialResult(TrialSpec(Mode.FULL, 1, False, 5), 40, 1.0, [0.1, 0.2, 0.3, 0.15, 0.25], [8, 8, 8, 8, 300])
    array = np.empty(len(trial.step_seconds), dtype=steps.DTYPE)  # no waits: FULL's without a split
    array["seconds"] = trial.periods()
    array["samples"] = trial.samples_array()
    expected = io.BytesIO()
    np.save(expected, array, allow_pickle=False)
    for slice_ in (2, 5, 65_536):
        monkeypatch.setattr(steps, "SLICE", slice_)
        got = io.BytesIO()
        steps._write(got, trial)
        assert got.getvalue() == expected.getvalue(), slice_
