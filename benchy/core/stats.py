"""Summary statistics over trials (pure, no torch). The t quantile is computed exactly for integer degrees of
freedom (closed-form CDF, Abramowitz & Stegun 26.7.3-4, inverted by bisection): no SciPy dependency for one function.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Sequence

import numpy as np


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
        low, high = (mid, high) if t_two_sided_cdf(mid, df) < confidence else (low, mid)
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


@dataclass(frozen=True)
class Comparison:
    """``b`` against ``a`` on a log scale: the ratio of geometric means and its interval.

    Welch's t-test on the logs of the trial throughputs: a ratio test that needs no equal variances, stays positive
    whatever the spread, and is sound with two or three trials a side (its df rounded down only widens the interval).
    """

    ratio: float  # geometric mean of b / geometric mean of a
    low: Optional[float]  # the interval of the ratio (None with fewer than two values a side)
    high: Optional[float]
    t: Optional[float]
    df: Optional[int]
    p: Optional[float]  # two-sided p-value of "the ratio is 1"
    n_a: int
    n_b: int
    confidence: float = 0.95


def welch_df(sa: float, na: int, sb: float, nb: int) -> float:
    """The Welch-Satterthwaite degrees of freedom of two means whose squared standard errors are ``sa`` and ``sb``
    (of ``na`` and ``nb`` values, two or more each, ``sa + sb > 0``)."""
    return (sa + sb) ** 2 / ((sa * sa) / (na - 1) + (sb * sb) / (nb - 1))


def compare_log(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> Optional[Comparison]:
    """Compare two samples of positive values (trial throughputs); None when one is empty or not positive."""
    la = np.asarray(a, dtype=float)
    lb = np.asarray(b, dtype=float)
    if la.size == 0 or lb.size == 0 or not (np.all(np.isfinite(la)) and np.all(np.isfinite(lb))):
        return None
    if np.any(la <= 0) or np.any(lb <= 0):
        return None
    la, lb = np.log(la), np.log(lb)
    diff = float(lb.mean() - la.mean())
    ratio = math.exp(diff)
    test = welch(la, lb)
    if test is None:
        return Comparison(ratio, None, None, None, None, None, int(la.size), int(lb.size), confidence)
    half = t_quantile(confidence, test.df_used) * test.se
    low, high = math.exp(diff - half), math.exp(diff + half)
    return Comparison(ratio, low, high, test.t, test.df_used, test.p, int(la.size), int(lb.size), confidence)


@dataclass(frozen=True)
class Welch:
    """Welch's unequal-variances t-test of ``mean(b) - mean(a)``; the p-value uses ``df`` rounded down (``df_used``),
    which can only raise p: a change called significant is significant at the exact df too."""

    t: float
    df: float
    df_used: int
    p: float
    se: float  # the standard error of the difference


def welch(a: Sequence[float], b: Sequence[float]) -> Optional[Welch]:
    """Two-sided Welch test on two samples; None with fewer than two values a side."""
    xa = np.asarray(a, dtype=float)
    xb = np.asarray(b, dtype=float)
    if xa.size < 2 or xb.size < 2 or not (np.isfinite(xa).all() and np.isfinite(xb).all()):
        return None
    va = float(xa.var(ddof=1)) / xa.size
    vb = float(xb.var(ddof=1)) / xb.size
    diff = float(xb.mean() - xa.mean())
    if va + vb == 0.0:
        df_equal = float(xa.size + xb.size - 2)
        return Welch(math.copysign(math.inf, diff) if diff else 0.0, df_equal, int(df_equal), 0.0 if diff else 1.0, 0.0)
    se = math.sqrt(va + vb)
    df = welch_df(va, xa.size, vb, xb.size)
    used = max(1, math.floor(df))
    t = diff / se
    return Welch(t, df, used, 1.0 - t_two_sided_cdf(abs(t), used), se)


def finite(x: float) -> Optional[float]:
    """``x``, or None when it is not finite (JSON has no inf or nan)."""
    return x if math.isfinite(x) else None
