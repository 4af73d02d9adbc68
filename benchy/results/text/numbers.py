"""Number formatters, one definition each, for every renderer (no torch; those the values' own words use are
:mod:`benchy.core.words`', imported from here too)."""

from __future__ import annotations

import math
from typing import Optional, Sequence

from ...core.words import flop as flop
from ...core.words import flops_rate as flops_rate
from ...core.words import spread as spread


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
