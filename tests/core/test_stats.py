"""Statistics: Student-t quantiles against published tables, mean and half-width."""

from __future__ import annotations

import math

import pytest

from benchy.core.stats import estimate, t_quantile, t_two_sided_cdf

# Two-sided 95 % and 99 % critical values of Student's t (standard statistical tables).
TABLE_95 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    15: 2.131,
    20: 2.086,
    25: 2.060,
    29: 2.045,
    30: 2.042,
    40: 2.021,
    60: 2.000,
    120: 1.980,
}
TABLE_99 = {1: 63.657, 2: 9.925, 3: 5.841, 5: 4.032, 10: 3.169, 30: 2.750, 120: 2.617}


@pytest.mark.parametrize("df, value", sorted(TABLE_95.items()))
def test_t_quantile_95(df: int, value: float) -> None:
    assert t_quantile(0.95, df) == pytest.approx(value, abs=6e-4)


@pytest.mark.parametrize("df, value", sorted(TABLE_99.items()))
def test_t_quantile_99(df: int, value: float) -> None:
    assert t_quantile(0.99, df) == pytest.approx(value, abs=6e-4)


def test_large_df_tends_to_the_normal_quantile() -> None:
    assert t_quantile(0.95, 5000) == pytest.approx(1.95996, abs=1e-3)


def test_cdf_edges_and_bad_input() -> None:
    assert t_two_sided_cdf(0.0, 3) == 0.0
    assert t_two_sided_cdf(1e9, 4) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="expected an integer >= 1"):
        t_two_sided_cdf(1.0, 0)
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        t_quantile(1.0, 3)


def test_estimate_matches_the_formula() -> None:
    values = [10.0, 12.0, 11.0, 13.0]
    est = estimate(values)
    mean = sum(values) / 4
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 3)
    assert est.mean == pytest.approx(mean)
    assert est.half_width == pytest.approx(3.182446 * sd / 2, rel=1e-5)
    assert est.n == 4


def test_one_trial_has_no_interval_and_none_has_no_mean() -> None:
    one = estimate([5.0])
    assert (one.mean, one.half_width, one.n) == (5.0, None, 1)
    none = estimate([])
    assert (none.mean, none.half_width, none.n) == (None, None, 0)


def test_the_welch_satterthwaite_df_is_the_pooled_one_for_equal_sides_and_the_smaller_side_s_for_a_lopsided_one() -> None:
    from benchy.core.stats import welch_df

    assert welch_df(0.5 / 6, 6, 0.5 / 6, 6) == pytest.approx(10)  # equal sides: na + nb - 2
    assert welch_df(1e-9, 3, 1.0, 5) == pytest.approx(4, rel=1e-6)  # one side's spread alone: its n - 1
    assert 2 <= welch_df(0.2, 3, 0.1, 9) <= 10
