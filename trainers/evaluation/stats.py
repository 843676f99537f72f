"""The statistics of every table and verdict: mean ± standard error, the paired difference of two agents on the
same seeded games (or two paired samples), and the "beyond two standard errors" verdict.

One definition each, so every results page computes the same thing:

- the standard error is the sample standard deviation (``ddof=1``) over ``sqrt(n)``; it is **NaN for fewer than
  two values** (one value says nothing about its spread), never 0 or infinity;
- a difference is *separated* from its reference when it lies more than ``SEPARATION_FACTOR`` (2) standard errors
  away from it; a NaN standard error separates nothing, a zero one separates every non-zero difference;
- a difference measured in standard errors is ``difference / SE``: ±infinity for a non-zero difference with SE 0,
  0 for no difference with SE 0, NaN when the SE is NaN.

``paired_difference`` takes any two results with ``name``, ``games``, ``answers`` and a per-game ``rewards``
array (``trainers.evaluation.wordle.EvalResult`` and the results of the other tasks' evaluations);
``sample_difference`` takes two aligned arrays.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

#: How many standard errors a difference must exceed to count as separated ("beyond 2 SE").
SEPARATION_FACTOR = 2.0


def standard_error(values: Sequence[float] | np.ndarray) -> float:
    """Sample standard deviation (``ddof=1``) / sqrt(n) of a 1-D sample; NaN for fewer than two values."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"standard_error takes a 1-D sample, got shape {values.shape}")
    n = len(values)
    return float(np.std(values, ddof=1) / math.sqrt(n)) if n > 1 else float("nan")


def column_standard_errors(values: np.ndarray) -> np.ndarray:
    """``standard_error`` of each column of a 2-D array (rows are the sample: seeds, episodes); all NaN for fewer
    than two rows."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"column_standard_errors takes a 2-D array (rows x columns), got shape {values.shape}")
    return np.array([standard_error(values[:, k]) for k in range(values.shape[1])], dtype=np.float64)


def mean_and_se(values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Mean and ``standard_error`` of a non-empty sample (SE NaN for a single value).

    Raises ``ValueError`` for an empty sample.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        raise ValueError("mean_and_se of an empty sample: no values to average")
    return float(values.mean()), standard_error(values)


def sample_difference(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Mean and standard error of the paired differences ``a[i] - b[i]`` (same length required)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"cannot pair samples of shapes {a.shape} and {b.shape}: a paired difference needs one "
                         "value of each per item")
    diff = a - b
    return float(diff.mean()), standard_error(diff)


def paired_difference(result: Any, baseline: Any) -> tuple[float, float]:
    """Mean and standard error of the per-game return difference ``result - baseline`` on the same games.

    Raises ``ValueError`` when the two were not evaluated on the same games (count or answers differ).
    """
    if result.games != baseline.games:
        raise ValueError(f"cannot pair {result.name!r} ({result.games} games) with baseline {baseline.name!r} "
                         f"({baseline.games} games): evaluate both with the same EvalConfig")
    if result.answers and baseline.answers and result.answers != baseline.answers:
        raise ValueError(f"cannot pair {result.name!r} with baseline {baseline.name!r}: they played different "
                         f"answers (different EvalConfig seed or answer list)")
    return sample_difference(result.rewards, baseline.rewards)


def separation(value: float, se: float, reference: float = 0.0) -> int:
    """+1 / -1 when ``value`` lies more than ``SEPARATION_FACTOR`` standard errors above / below ``reference``,
    else 0 (also for a NaN ``se``)."""
    if value > reference + SEPARATION_FACTOR * se:
        return 1
    if value < reference - SEPARATION_FACTOR * se:
        return -1
    return 0


def in_standard_errors(difference: float, se: float) -> float:
    """``difference / se``: ±inf for a non-zero difference with SE 0, 0.0 for no difference with SE 0, NaN for a
    NaN SE."""
    if se == 0:
        return 0.0 if difference == 0 else math.copysign(math.inf, difference)
    return difference / se


def paired_separation(agent: Any, baseline: Any) -> tuple[float, float, int]:
    """``(difference, its paired SE, side)`` of ``paired_difference``; side is ``separation`` of the difference."""
    diff, se = paired_difference(agent, baseline)
    return diff, se, separation(diff, se)


def sample_separation(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> tuple[float, float, int]:
    """``(difference, its paired SE, side)`` of ``sample_difference``; side is ``separation`` of the difference."""
    diff, se = sample_difference(a, b)
    return diff, se, separation(diff, se)


__all__ = ["SEPARATION_FACTOR", "standard_error", "column_standard_errors", "mean_and_se", "sample_difference",
           "paired_difference", "separation", "in_standard_errors", "paired_separation", "sample_separation"]
