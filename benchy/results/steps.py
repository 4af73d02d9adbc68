"""Per-step files: each trial's step times and sample counts, saved once, when the trial ends.

The JSON is rewritten after every trial so that a killed run keeps what it measured. Holding
every earlier trial's per-step data, each rewrite cost the whole run so far (1.2 to 3.1 s for
6 trials of 200 000 batches). Instead each trial is saved once, as
``<output name>.steps/<trial label>.npy``: a structured array with fields ``seconds``
(float64) and ``samples`` (int64), 16 bytes per step, read with ``numpy.load``. Rank 0 saves
its own steps; the final JSON still has the original's ``rates`` for the counted trials.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List

import numpy as np

from ..core.config import STEPS_TEMP_SUFFIX
from ..core.results import TrialResult
from .files import write_atomic

__all__ = ["DTYPE", "clear", "load", "save"]

DTYPE = np.dtype([("seconds", "<f8"), ("samples", "<i8")])
_OURS = re.compile(r"^(IO|SYNTHETIC|FULL)(_WARMUP)?_[0-9]+\.npy$")


def step_array(result: TrialResult) -> np.ndarray[Any, Any]:
    """The trial's periods as one structured array (``seconds``, ``samples``)."""
    out = np.empty(len(result.step_seconds), dtype=DTYPE)
    out["seconds"] = np.frombuffer(result.step_seconds, dtype=np.float64)
    out["samples"] = result.samples_array()
    return out


def clear(directory: str) -> List[str]:
    """Create ``directory`` or remove a previous run's trial files from it; the names removed."""
    os.makedirs(directory, exist_ok=True)
    removed = []
    for entry in os.scandir(directory):
        if _OURS.match(entry.name) and entry.is_file(follow_symlinks=False):
            os.unlink(entry.path)
            removed.append(entry.name)
    return removed


SLICE = 65_536  # steps written at a time


def _write(handle: Any, result: TrialResult) -> None:
    """The ``.npy`` file of :func:`step_array`, built a slice at a time (1 MB, whatever the trial's length)."""
    n = len(result.step_seconds)
    np.lib.format.write_array_header_1_0(handle, {"descr": np.lib.format.dtype_to_descr(DTYPE),
                                                  "fortran_order": False, "shape": (n,)})
    seconds = np.frombuffer(result.step_seconds, dtype=np.float64)
    samples = result.samples_array()
    part = np.empty(min(n, SLICE), dtype=DTYPE)
    for start in range(0, n, SLICE):
        count = min(SLICE, n - start)
        part["seconds"][:count] = seconds[start:start + count]
        part["samples"][:count] = samples[start:start + count]
        handle.write(part[:count].tobytes())


def save(directory: str, result: TrialResult) -> str:
    """Write one trial's file atomically (temporary file, then rename); its path."""
    path = os.path.join(directory, f"{result.label}.npy")
    write_atomic(path, lambda handle: _write(handle, result), binary=True, suffix=STEPS_TEMP_SUFFIX)
    return path


def load(directory: str) -> Dict[str, np.ndarray[Any, Any]]:
    """Every trial file in ``directory``, by trial label."""
    return {
        name[: -len(".npy")]: np.load(os.path.join(directory, name), allow_pickle=False)
        for name in sorted(os.listdir(directory)) if _OURS.match(name)
    }
