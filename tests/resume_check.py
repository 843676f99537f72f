"""A shared check of the trainers' tests: a run stopped half-way and resumed equals one trained straight through."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Callable

import pytest

from trainers.algorithms.registry import train


def train_straight_and_resumed(algorithm: str, config: Callable[..., Any], root: Path, steps: int = 6) -> None:
    """Trains ``config("straight", steps=steps)`` in one go, and ``config("resumed")`` stopped at ``steps // 2``
    and resumed; asserts that the loss fell and that every logged loss after the stop equals the straight run's.
    ``config(out, **overrides)`` returns the algorithm's config writing to ``root / out``."""
    half = steps // 2
    train(algorithm, config("straight", steps=steps), progress=False)
    part = config("resumed", steps=half, checkpoint_every=half)
    train(algorithm, part, progress=False)
    train(algorithm, dataclasses.replace(part, steps=steps), progress=False)
    rows = {name: [json.loads(line) for line in (root / name / "metrics.jsonl").read_text().splitlines()]
            for name in ("straight", "resumed")}
    assert rows["straight"][-1]["loss"] < rows["straight"][0]["loss"]
    for a, b in zip(rows["straight"][half:], rows["resumed"][half:]):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-6, abs=1e-7), (a, b)
