"""What ``docs/baselines.md`` is written from: each trained row and each setting's outcome
(``trainers.experiments.baselines.run`` makes them, ``trainers.experiments.baselines.document`` writes them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from trainers.experiments.baselines.settings import Setting
from trainers.experiments.beta_choice import BetaChoice
from trainers.experiments.common import Experiment


@dataclasses.dataclass
class TrainedRun:
    """A trained row: its run folder, optimizer steps and training minutes (summed over resumed calls)."""

    experiment: Experiment
    run: Path
    steps: int
    minutes: float


@dataclasses.dataclass
class SettingOutcome:
    """What the page says about one setting: every row's result on the same games (in the setting's order), the
    Decision Transformer's sweep (one result per target, ascending), the β choices, the Section-5 ranking of each
    value row (a dict of fractions, or why it is not measured), the top-advantage table, what was trained, and the
    scripted reference players' results on the same games (``trainers.evaluation.guess_quality.reference_results``:
    how winnable those games are)."""

    setting: Setting
    results: list
    dt_sweep: list[tuple[float, Any]]
    betas: list[BetaChoice]
    ranks: dict[str, Any]
    top_advantage: str | None
    trained: dict[str, TrainedRun]
    references: list

    @property
    def by_name(self) -> dict[str, Any]:
        """The results by row name."""
        return {r.name: r for r in self.results}


__all__ = ["TrainedRun", "SettingOutcome"]
