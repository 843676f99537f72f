"""trainers.evaluation.stats against hand computations: standard errors, paired differences, the 2-SE verdict."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from trainers.evaluation.stats import (
    SEPARATION_FACTOR,
    column_standard_errors,
    in_standard_errors,
    mean_and_se,
    paired_difference,
    paired_separation,
    sample_difference,
    sample_separation,
    separation,
    standard_error,
)


@dataclasses.dataclass
class Result:
    """The fields ``paired_difference`` reads of an evaluation result."""

    name: str
    rewards: np.ndarray
    answers: list[str] = dataclasses.field(default_factory=list)

    @property
    def games(self) -> int:
        return len(self.rewards)


def test_standard_error_by_hand():
    # 1, 2, 3, 6: mean 3, squared deviations 4 + 1 + 0 + 9 = 14, variance 14 / 3, SE sqrt(14 / 3) / 2
    assert standard_error([1.0, 2.0, 3.0, 6.0]) == pytest.approx(math.sqrt(14 / 3) / 2, rel=1e-15)
    assert standard_error(np.array([5, 5, 5])) == 0.0
    assert isinstance(standard_error([1.0, 2.0]), float)


def test_standard_error_is_nan_below_two_values():
    assert math.isnan(standard_error([7.0])) and math.isnan(standard_error([]))
    with pytest.raises(ValueError, match="1-D"):
        standard_error(np.zeros((2, 2)))


def test_column_standard_errors_by_hand():
    values = np.array([[1.0, 0.0, 4.0], [3.0, 0.0, 2.0], [5.0, 3.0, 0.0]])
    # columns: (1, 3, 5) variance 4; (0, 0, 3) variance 3; (4, 2, 0) variance 4; SE sqrt(var / 3)
    np.testing.assert_allclose(column_standard_errors(values), [math.sqrt(4 / 3), 1.0, math.sqrt(4 / 3)], rtol=1e-15)
    assert [standard_error(values[:, k]) for k in range(3)] == column_standard_errors(values).tolist()
    assert np.isnan(column_standard_errors(np.ones((1, 4)))).all() and column_standard_errors(np.ones((1, 4))).shape == (4,)
    with pytest.raises(ValueError, match="2-D"):
        column_standard_errors(np.zeros(3))


def test_mean_and_se_by_hand():
    assert mean_and_se([1.0, 3.0]) == (2.0, 1.0)  # variance 2, SE sqrt(2 / 2)
    mean, se = mean_and_se([4.0])
    assert mean == 4.0 and math.isnan(se)
    with pytest.raises(ValueError, match="empty"):
        mean_and_se([])


def test_sample_difference_pairs_item_by_item():
    # differences 2, 0.5, 3.5, 1: mean 1.75, variance (0.0625 + 1.5625 + 3.0625 + 0.5625) / 3 = 1.75, SE sqrt(1.75) / 2
    a, b = [2.0, 1.5, 3.5, 1.0], [0.0, 1.0, 0.0, 0.0]
    assert sample_difference(a, b) == pytest.approx((1.75, math.sqrt(1.75) / 2), rel=1e-15)
    # pairing, not two independent samples: a constant shift has SE 0 whatever the spread of each sample
    assert sample_difference([1.0, 5.0, 9.0], [0.0, 4.0, 8.0]) == (1.0, 0.0)
    with pytest.raises(ValueError, match="cannot pair samples of shapes"):
        sample_difference([1.0, 2.0], [1.0])


def test_paired_difference_refuses_different_games():
    a = Result("a", np.array([1.0, 2.0, 3.0]), ["x", "y", "z"])
    b = Result("b", np.array([0.0, 2.0, 1.0]), ["x", "y", "z"])
    diff, se = paired_difference(a, b)  # differences 1, 0, 2: mean 1, variance 1, SE 1 / sqrt(3)
    assert diff == 1.0 and se == pytest.approx(1 / math.sqrt(3), rel=1e-15)
    with pytest.raises(ValueError, match=r"'a' \(3 games\) with baseline 'c' \(2 games\)"):
        paired_difference(a, Result("c", np.array([0.0, 1.0])))
    with pytest.raises(ValueError, match="different answers"):
        paired_difference(a, Result("d", np.zeros(3), ["x", "y", "w"]))


def test_separation_is_beyond_two_standard_errors_either_way():
    assert SEPARATION_FACTOR == 2.0
    assert separation(2.01, 1.0) == 1 and separation(-2.01, 1.0) == -1
    assert separation(2.0, 1.0) == 0 and separation(-2.0, 1.0) == 0  # exactly 2 SE is not beyond
    assert separation(1e-9, 0.0) == 1 and separation(0.0, 0.0) == 0
    assert separation(1e9, float("nan")) == 0  # an undefined SE separates nothing
    # around a reference: 0.7 against 0.9 ± 2 * 0.05
    assert separation(0.7, 0.05, reference=0.9) == -1 and separation(0.85, 0.05, reference=0.9) == 0
    assert separation(1.01, 0.05, reference=0.9) == 1


def test_in_standard_errors():
    assert in_standard_errors(3.0, 1.5) == 2.0 and in_standard_errors(-3.0, 1.5) == -2.0
    assert in_standard_errors(0.5, 0.0) == math.inf and in_standard_errors(-0.5, 0.0) == -math.inf
    assert in_standard_errors(0.0, 0.0) == 0.0
    assert math.isnan(in_standard_errors(1.0, float("nan")))


def test_paired_and_sample_separation_agree():
    a = Result("a", np.array([3.0, 3.5, 2.5, 3.0]))
    b = Result("b", np.zeros(4))
    # differences 3, 3.5, 2.5, 3: mean 3, variance 0.5 / 3, SE sqrt(1 / 6) / 2 ~ 0.204: separated upwards
    diff, se, side = paired_separation(a, b)
    assert (diff, side) == (3.0, 1) and se == pytest.approx(math.sqrt(1 / 6) / 2, rel=1e-15)
    assert sample_separation(a.rewards, b.rewards) == (diff, se, side)
    assert paired_separation(b, a)[2] == -1
    assert sample_separation([1.0], [0.0])[2] == 0  # one pair: no SE, no verdict
