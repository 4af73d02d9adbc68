"""Number formatters, one definition each, for every renderer (no torch)."""

from __future__ import annotations

import math
from typing import Optional, Sequence


def ratio(value: float) -> str:
    """A ratio as ``1.48x``; below 0.1 with 3 significant digits (``0.00269x``, never ``0.00x``)."""
    if not math.isfinite(value) or value >= 0.1:
        return f"{value:.2f}x"
    if value <= 0:
        return "0x"
    return f"{value:.{2 - math.floor(math.log10(value))}f}x"


def percent(confidence: float) -> str:
    """``99 %``: a confidence as the interval's name."""
    return f"{100.0 * confidence:g} %"


def flop(flops: float) -> str:
    """``1.23 GFLOP``: a FLOP count with its SI prefix."""
    for unit, scale in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if flops >= scale:
            return f"{flops / scale:.4g} {unit}"
    return f"{flops:.4g} FLOP"


def flops_rate(flops_per_s: float) -> str:
    """``2.31 TFLOP/s``: a rate with its SI prefix."""
    return flop(flops_per_s) + "/s"


def triple(t: Sequence[Optional[float]]) -> str:
    """``123.4 (110.2 to 140.7)``: a figure with its range."""
    return f"{t[1]:.1f} ({t[0]:.1f} to {t[2]:.1f})"


def ms(seconds: float) -> str:
    """``12.345 ms``: seconds as milliseconds."""
    return f"{1e3 * seconds:.3f} ms"


def cell(value: Optional[float], scale: float = 1.0, spec: str = ".2f") -> str:
    """A figure in a table cell: ``value / scale`` formatted with ``spec``; empty for None."""
    return "" if value is None else format(value / scale, spec)


def signed_percent(x: Optional[float]) -> str:
    """``-12.50 %``, ``+3.00 %``, ``0.00 %`` (never signed zero), ``n/a``: a change as a percentage."""
    if x is None:
        return "n/a"
    text = f"{100.0 * x:+.2f} %"
    return "0.00 %" if text in ("+0.00 %", "-0.00 %") else text


def spread(mean: Optional[float], half_width: Optional[float], digits: int = 3) -> str:
    """``123.456 +/- 7.890``, ``n/a`` for no interval."""
    hw = "n/a" if half_width is None else f"{half_width:.{digits}f}"
    return f"{mean:.{digits}f} +/- {hw}" if mean is not None else "n/a"
