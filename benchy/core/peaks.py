"""The accelerators' peak FLOP/s and ``global.peak_flops`` (pure, no torch).

The table lists dense figures only: the datasheets print "with sparsity" figures twice as high, and a
mix-up doubles MFU. Each row names its source; ``global.peak_flops`` gives a peak the table lacks (a CPU,
a new device) or overrides it, as one figure for every dtype or one per dtype.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple, Union


def _tflops(**peaks: float) -> Dict[str, float]:
    """Peaks per dtype given in TFLOP/s, as FLOP/s."""
    return {dtype: figure * 1e12 for dtype, figure in peaks.items()}


# The dtype keys of the peak table and of global.peak_flops: what a FLOP is done in.
DTYPES = ("float64", "float32", "tf32", "bfloat16", "float16", "float8")


@dataclass(frozen=True)
class Accelerator:
    """One row of the peak table: a device-name pattern, its dense peaks per dtype (FLOP/s), the source."""

    pattern: str  # a regular expression matched against the device's name, case-insensitively
    name: str
    peaks: Mapping[str, float]
    source: str


_NV_H100 = "NVIDIA H100 Tensor Core GPU datasheet (dense: the 'with sparsity' figures halved)"
# H100 SXM and H200 SXM: the same dense peaks
_HOPPER_SXM = _tflops(float64=34, float32=67, tf32=494.7, bfloat16=989.4, float16=989.4, float8=1978.9)
# The most specific pattern first ("A100" before "A10", "H100 PCIe" before "H100").
ACCELERATORS: Tuple[Accelerator, ...] = (
    Accelerator(
        r"\bh100\b.*(pcie|pci-e)",
        "NVIDIA H100 PCIe",
        _tflops(float64=25.6, float32=51.2, tf32=378, bfloat16=756, float16=756, float8=1513),
        _NV_H100,
    ),
    Accelerator(r"gh200|\bh100\b", "NVIDIA H100 SXM", _HOPPER_SXM, _NV_H100),
    Accelerator(
        r"\bh200\b",
        "NVIDIA H200 SXM",
        _HOPPER_SXM,
        "NVIDIA H200 Tensor Core GPU datasheet (dense: the 'with sparsity' figures halved)",
    ),
    Accelerator(
        r"\ba100\b",
        "NVIDIA A100",
        _tflops(float64=9.7, float32=19.5, tf32=156, bfloat16=312, float16=312),
        "NVIDIA A100 Tensor Core GPU datasheet (dense: the 'with sparsity' figures halved)",
    ),
    Accelerator(
        r"\ba10g?\b",
        "NVIDIA A10",
        _tflops(float32=31.2, tf32=62.5, bfloat16=125, float16=125),
        "NVIDIA A10 Tensor Core GPU datasheet (dense)",
    ),
    Accelerator(
        r"\bl4\b",
        "NVIDIA L4",
        _tflops(float32=30.3, tf32=60, bfloat16=121, float16=121, float8=242.5),
        "NVIDIA L4 Tensor Core GPU datasheet (dense: the 'with sparsity' figures halved)",
    ),
    Accelerator(
        r"\bv100\b.*(pcie|pci-e)",
        "NVIDIA V100 PCIe",
        _tflops(float64=7, float32=14, float16=112),
        "NVIDIA Tesla V100 datasheet (tensor cores, float16)",
    ),
    Accelerator(
        r"\bv100\b",
        "NVIDIA V100 SXM2",
        _tflops(float64=7.8, float32=15.7, float16=125),
        "NVIDIA Tesla V100 datasheet (tensor cores, float16)",
    ),
    Accelerator(
        r"\bt4\b",
        "NVIDIA T4",
        _tflops(float32=8.1, float16=65),
        "NVIDIA T4 Tensor Core GPU datasheet (mixed precision float16)",
    ),
    Accelerator(
        r"\bmi300x\b",
        "AMD Instinct MI300X",
        _tflops(float64=81.7, float32=163.4, tf32=653.7, bfloat16=1307.4, float16=1307.4, float8=2614.9),
        "AMD Instinct MI300X data sheet (dense matrix figures)",
    ),
    Accelerator(
        r"\bmi250x?\b",
        "AMD Instinct MI250X",
        _tflops(float64=95.7, float32=95.7, bfloat16=383, float16=383),
        "AMD Instinct MI250X data sheet (matrix figures)",
    ),
)


def dtype_key(name: str) -> str:
    """A torch dtype's name as a peak-table key: ``torch.float8_e4m3fn`` -> ``float8``, ``half`` -> ``float16``."""
    name = name.replace("torch.", "")
    aliases = {
        "half": "float16",
        "float": "float32",
        "double": "float64",
        "bf16": "bfloat16",
        "fp16": "float16",
        "fp32": "float32",
        "fp64": "float64",
        "fp8": "float8",
    }
    name = aliases.get(name, name)
    return "float8" if name.startswith("float8") else name


def known_accelerator(device: str) -> Optional[Accelerator]:
    """The peak table's row for a device name (``NVIDIA H100 80GB HBM3``), or None."""
    return next((row for row in ACCELERATORS if re.search(row.pattern, device, re.IGNORECASE)), None)


# global.peak_flops: one FLOP/s figure for every dtype, or one per dtype.
PeakConfig = Union[None, float, Mapping[str, float]]

_UNITS = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}
_PEAK_TEXT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgGtTpP]?)\s*(?:flop/?s|flops)?\s*$", re.IGNORECASE)


def _one_peak(value: Any) -> Optional[float]:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        found = _PEAK_TEXT.match(value)
        if found is None:
            return None
        number = float(found.group(1)) * _UNITS[found.group(2).lower()]
    else:
        return None
    return number if math.isfinite(number) and number > 0 else None


def parse_peak(value: Any) -> Tuple[PeakConfig, Optional[str]]:
    """``global.peak_flops`` as a value, and what is wrong with it (None: nothing); a string such as ``"989e12"`` is
    read too (YAML reads ``989e12`` without a dot as a string)."""
    if value is None:
        return None, None
    if isinstance(value, Mapping):
        out: Dict[str, float] = {}
        for key, item in value.items():
            if not isinstance(key, str) or dtype_key(key) not in DTYPES:
                return None, f"unknown dtype {key!r} (allowed: {', '.join(DTYPES)})"
            number = _one_peak(item)
            if number is None:
                return None, f"{key}: {item!r} is not a positive FLOP/s figure"
            out[dtype_key(key)] = number
        return (None, "an empty mapping") if not out else (out, None)
    number = _one_peak(value)
    return (None, f"{value!r} is not a positive FLOP/s figure") if number is None else (number, None)
