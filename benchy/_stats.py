"""Summary statistics over trials (pure, no torch).

The 95 % interval is the Student-t one: ``t(0.975, n-1) * s / sqrt(n)`` with the sample
standard deviation ``s``. The t quantile is computed exactly for integer degrees of
freedom (closed-form CDF, Abramowitz & Stegun 26.7.3-4, inverted by bisection), which
avoids a SciPy dependency for one function.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Sequence

import numpy as np

__all__ = ["Estimate", "estimate", "t_quantile", "t_two_sided_cdf"]


def t_two_sided_cdf(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with ``df`` (integer >= 1) degrees of freedom."""
    if df < 1 or int(df) != df:
        raise ValueError(f"degrees of freedom: got {df!r}; expected an integer >= 1")
    if t <= 0.0:
        return 0.0
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    s = math.sin(theta)
    if df % 2 == 1:
        # (2/pi) * (theta + sin*cos * (1 + 2/3 c2 + 2*4/(3*5) c2^2 + ...)), df-2 power at most
        total, term = 0.0, 1.0
        if df > 1:
            total = 1.0
            for k in range(1, (df - 1) // 2):
                term *= c2 * (2 * k) / (2 * k + 1)
                total += term
            total *= s * math.cos(theta)
        return min(1.0, (2.0 / math.pi) * (theta + total))
    # sin * (1 + 1/2 c2 + 1*3/(2*4) c2^2 + ...), df-2 power at most
    total, term = 1.0, 1.0
    for k in range(1, df // 2):
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return min(1.0, s * total)


@lru_cache(maxsize=256)
def t_quantile(confidence: float, df: int) -> float:
    """The t such that P(|T| <= t) = ``confidence`` (two-sided), for integer ``df``."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence: got {confidence!r}; expected a number strictly between 0 and 1")
    low, high = 0.0, 1.0
    while t_two_sided_cdf(high, df) < confidence:
        high *= 2.0
    for _ in range(200):
        mid = 0.5 * (low + high)
        if t_two_sided_cdf(mid, df) < confidence:
            low = mid
        else:
            high = mid
        if high - low < 1e-12 * high:
            break
    return 0.5 * (low + high)


@dataclass(frozen=True)
class Estimate:
    """Mean of ``n`` values and the half-width of its interval (None when ``n < 2``)."""

    mean: Optional[float]
    half_width: Optional[float]
    n: int
    confidence: float = 0.95


def estimate(values: Sequence[float], confidence: float = 0.95) -> Estimate:
    """Mean and Student-t half-width; no interval with fewer than two values."""
    data = np.asarray(values, dtype=float)
    n = int(data.size)
    if n == 0:
        return Estimate(None, None, 0, confidence)
    mean = float(data.mean())
    if n == 1:
        return Estimate(mean, None, 1, confidence)
    sd = float(data.std(ddof=1))
    return Estimate(mean, t_quantile(confidence, n - 1) * sd / math.sqrt(n), n, confidence)
