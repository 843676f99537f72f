"""How the roles of a two-role Wordle team use the board: ``BoardReading`` counts, over a team's games, whether
its first proposals fit the feedback and how often its checker accepts fitting and non-fitting proposals
(``trainers.algorithms.malt.team.play_team``'s ``on_step``); ``reading_table`` is the table of ``docs/malt.md``'s
two-role section (``trainers.experiments.malt_roles``)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from rlds_lang.wordle_roles.env import ACCEPT, CHECKER


@dataclasses.dataclass
class BoardReading:
    """How a team's roles use the board, counted over its evaluation games (an ``on_step`` of ``play_team``): at
    every check after the first guess, whether the proposal fits the feedback so far (``proposal_fits``) and whether
    the checker accepted it. ``first`` counts first proposals of a turn (before any send-back), ``checks`` every
    check, as ``[fits][accepted]``."""

    first: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(2, np.int64))
    checks: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((2, 2), np.int64))

    def __call__(self, observation: Any, action: str) -> None:
        if int(observation["agent"]) != CHECKER or int(observation["turn"]) == 0:
            return
        fits = int(observation["proposal_fits"]) == 1
        if int(observation["sendbacks"]) == 0:
            self.first[int(fits)] += 1
        self.checks[int(fits), int(action == ACCEPT)] += 1

    @property
    def fitting_first(self) -> float:
        """Share of first proposals after the first guess that fit the feedback (nan without any)."""
        return float(self.first[1] / self.first.sum()) if self.first.sum() else float("nan")

    def accepts(self, fits: bool) -> float:
        """Share of fitting (or not fitting) proposals the checker accepted (nan without any)."""
        row = self.checks[int(fits)]
        return float(row[1] / row.sum()) if row.sum() else float("nan")



def reading_table(rows: list[tuple[str, BoardReading]]) -> str:
    """Markdown: per ``(row name, BoardReading)`` how the row's roles use the board, on its evaluation games."""
    lines = ["| row | first proposals that fit the feedback | checker accepts a fitting proposal | "
             "checker accepts one that does not fit |", "| --- | --- | --- | --- |"]
    for name, r in rows:
        lines.append(f"| {name} | {r.fitting_first:.2f} (of {int(r.first.sum())}) | {r.accepts(True):.2f} "
                     f"(of {int(r.checks[1].sum())}) | {r.accepts(False):.2f} (of {int(r.checks[0].sum())}) |")
    return "\n".join(lines)


__all__ = ["BoardReading", "reading_table"]
