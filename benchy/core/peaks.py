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

_T = 1e12

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
_HOPPER_SXM = {  # H100 SXM and H200 SXM: the same dense peaks
    "float64": 34 * _T,
    "float32": 67 * _T,
    "tf32": 494.7 * _T,
    "bfloat16": 989.4 * _T,
    "float16": 989.4 * _T,
    "float8": 1978.9 * _T,
}
# The most specific pattern first ("A100" before "A10", "H100 PCIe" before "H100").
ACCELERATORS: Tuple[Accelerator, ...] = (
    Accelerator(
        r"\bh100\b.*(pcie|pci-e)",
        "NVIDIA H100 PCIe",
        {
            "float64": 25.6 * _T,
            "float32": 51.2 * _T,
            "tf32": 378 * _T,
            "bfloat16": 756 * _T,
            "float16": 756 * _T,
            "float8": 1513 * _T,
        },
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
        {"float64": 9.7 * _T, "float32": 19.5 * _T, "tf32": 156 * _T, "bfloat16": 312 * _T, "float16": 312 * _T},
        "NVIDIA A100 Tensor Core GPU datasheet (dense: the 'with sparsity' figures halved)",
    ),
    Accelerator(
        r"\ba10g?\b",
        "NVIDIA A10",
        {"float32": 31.2 * _T, "tf32": 62.5 * _T, "bfloat16": 125 * _T, "float16": 125 * _T},
        "NVIDIA A10 Tensor Core GPU datasheet (dense)",
    ),
    Accelerator(
        r"\bl4\b",
        "NVIDIA L4",
        {"float32": 30.3 * _T, "tf32": 60 * _T, "bfloat16": 121 * _T, "float16": 121 * _T, "float8": 242.5 * _T},
        "NVIDIA L4 Tensor Core GPU datasheet (dense: the 'with sparsity' figures halved)",
    ),
    Accelerator(
        r"\bv100\b.*(pcie|pci-e)",
        "NVIDIA V100 PCIe",
        {"float64": 7 * _T, "float32": 14 * _T, "float16": 112 * _T},
        "NVIDIA Tesla V100 datasheet (tensor cores, float16)",
    ),
    Accelerator(
        r"\bv100\b",
        "NVIDIA V100 SXM2",
        {"float64": 7.8 * _T, "float32": 15.7 * _T, "float16": 125 * _T},
        "NVIDIA Tesla V100 datasheet (tensor cores, float16)",
    ),
    Accelerator(
        r"\bt4\b",
        "NVIDIA T4",
        {"float32": 8.1 * _T, "float16": 65 * _T},
        "NVIDIA T4 Tensor Core GPU datasheet (mixed precision float16)",
    ),
    Accelerator(
        r"\bmi300x\b",
        "AMD Instinct MI300X",
        {
            "float64": 81.7 * _T,
            "float32": 163.4 * _T,
            "tf32": 653.7 * _T,
            "bfloat16": 1307.4 * _T,
            "float16": 1307.4 * _T,
            "float8": 2614.9 * _T,
        },
        "AMD Instinct MI300X data sheet (dense matrix figures)",
    ),
    Accelerator(
        r"\bmi250x?\b",
        "AMD Instinct MI250X",
        {"float64": 95.7 * _T, "float32": 95.7 * _T, "bfloat16": 383 * _T, "float16": 383 * _T},
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
    for row in ACCELERATORS:
        if re.search(row.pattern, device, re.IGNORECASE):
            return row
    return None


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
        if not out:
            return None, "an empty mapping"
        return out, None
    number = _one_peak(value)
    if number is None:
        return None, f"{value!r} is not a positive FLOP/s figure"
    return number, None
