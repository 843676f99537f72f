"""The statistics of every table and verdict: mean ± standard error, the paired difference of two agents on the
same seeded games, and the "beyond two standard errors" verdict.

``paired_difference`` takes any two results with ``name``, ``games``, ``answers`` and a per-game ``rewards``
array (``trainers.evaluation.wordle.EvalResult`` and the results of the other tasks' evaluations).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def standard_error(values: np.ndarray) -> float:
    """Sample standard deviation / sqrt(n) (NaN for fewer than two values)."""
    n = len(values)
    return float(np.std(values, ddof=1) / math.sqrt(n)) if n > 1 else float("nan")

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
    diff = result.rewards - baseline.rewards
    return float(diff.mean()), standard_error(diff)


def mean_and_se(values: list[float]) -> tuple[float, float]:
    """Mean and standard error (sample standard deviation / sqrt(n); 0 for a single value)."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(variance / n)


def paired_separation(agent: Any, baseline: Any) -> tuple[float, float, int]:
    """``(difference, its paired SE, side)``: side +1 / -1 when ``agent - baseline`` is above / below two SEs,
    else 0."""
    diff, se = paired_difference(agent, baseline)
    return diff, se, (1 if diff > 2 * se else -1 if diff < -2 * se else 0)


__all__ = ["standard_error", "mean_and_se", "paired_difference", "paired_separation"]
