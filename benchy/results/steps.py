"""Per-step files: each trial's step times and sample counts, saved once, when the trial ends, as
``<output name>.steps/<trial label>.npy`` (and its system readings as ``<label>.system.npy``), so that a
checkpoint need not rewrite every earlier trial's steps. The format: docs/reference/output.md.
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import Any, Dict, List

import numpy as np

from ..core.config_rules import STEPS_TEMP_SUFFIX
from ..core.results import TrialResult
from .files import remove_matching, write_atomic

DTYPE = np.dtype([("seconds", "<f8"), ("samples", "<i8")])
WAIT_DTYPE = np.dtype([("seconds", "<f8"), ("samples", "<i8"), ("wait", "<f4")])
READINGS = ".system"  # <label>.system.npy: the trial's system readings
_OURS = re.compile(r"^(IO|SYNTHETIC|FULL)(_WARMUP)?_[0-9]+(\.system)?\.npy$")


def clear(directory: str) -> List[str]:
    """Create ``directory`` or remove a previous run's trial files from it; the names removed."""
    os.makedirs(directory, exist_ok=True)
    return remove_matching(directory, _OURS)


_RANK_DIR = re.compile(r"^rank[0-9]+$")


def clear_ranks(directory: str) -> List[str]:
    """Remove an earlier run's ``rank<r>/`` trial files (and the emptied folders) under ``directory``."""
    removed: List[str] = []
    for path in rank_dirs(directory).values():
        removed += clear(path)
        with contextlib.suppress(OSError):  # something not ours is in it: left alone
            os.rmdir(path)
    return removed


def rank_dirs(directory: str) -> Dict[int, str]:
    """The ``rank<r>/`` folders under ``directory`` (``save_steps: all``), by rank."""
    try:
        return {
            int(e.name[4:]): e.path for e in os.scandir(directory) if _RANK_DIR.match(e.name) and e.is_dir(follow_symlinks=False)
        }
    except OSError:
        return {}


SLICE = 4_096  # steps written at a time


def _write(handle: Any, result: TrialResult) -> None:
    """The trial's periods as one ``.npy`` file, built a slice at a time (at most 82 kB whatever the trial's
    length)."""
    n = len(result.step_seconds)
    dtype = WAIT_DTYPE if result.step_waits is not None else DTYPE
    np.lib.format.write_array_header_1_0(
        handle, {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (n,)}
    )
    seconds = result.periods()
    samples = result.samples_array()
    waits = result.waits()
    part = np.empty(min(n, SLICE), dtype=dtype)
    for start in range(0, n, SLICE):
        count = min(SLICE, n - start)
        part["seconds"][:count] = seconds[start : start + count]
        part["samples"][:count] = samples[start : start + count]
        if waits is not None:
            part["wait"][:count] = waits[start : start + count]
        handle.write(part[:count].data.cast("B"))


def save(directory: str, result: TrialResult) -> str:
    """Write one trial's file, and its system readings beside it when it has any; the steps file's path."""
    path = os.path.join(directory, f"{result.label}.npy")
    write_atomic(path, lambda handle: _write(handle, result), binary=True, suffix=STEPS_TEMP_SUFFIX)
    readings = result.readings
    if isinstance(readings, np.ndarray) and len(readings):
        write_atomic(
            os.path.join(directory, f"{result.label}{READINGS}.npy"),
            lambda handle: np.save(handle, readings, allow_pickle=False),
            binary=True,
            suffix=STEPS_TEMP_SUFFIX,
        )
    return path


def load(directory: str, readings: bool = False) -> Dict[str, np.ndarray[Any, Any]]:
    """Every trial's steps file in ``directory`` (``readings``: its system readings instead), by trial label."""
    out = {}
    for name in sorted(os.listdir(directory)):
        found = _OURS.match(name)
        if found and bool(found.group(3)) == readings:
            out[name[: -len(".npy")].removesuffix(READINGS)] = np.load(os.path.join(directory, name), allow_pickle=False)
    return out
