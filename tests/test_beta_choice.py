"""Choosing β on held-out games (``trainers.experiments.beta_choice``): the best mean wins, ties go to the smaller β, the
held-out seeds never meet the table's, and bad grids are named."""

from __future__ import annotations

import numpy as np
import pytest

from trainers.evaluation.wordle import EvalConfig, EvalResult
from trainers.experiments.beta_choice import (
    TUNING_SEED_OFFSET,
    BetaChoice,
    parse_grid,
    render_beta_choices,
    tuning_config,
)


def _result(rewards):
    rewards = np.array(rewards, dtype=float)
    return EvalResult("ILQL", rewards, np.full(len(rewards), 4), rewards > -6, 0, 1.0)


def test_the_best_mean_is_chosen_and_ties_go_to_the_smaller_beta():
    choice = BetaChoice("ILQL", [1.0, 4.0, 16.0], [_result([-5, -5]), _result([-3, -4]), _result([-4, -3])])
    assert choice.best == 4.0
    row = choice.row()
    assert row.startswith("| ILQL | -5.000 ± 0.000 | **-3.500 ± 0.500** | -3.500 ± 0.500 |")
    assert row.endswith("| 4 |")


def test_held_out_seeds_are_disjoint_from_the_tables():
    table = EvalConfig(games=4096, seed=0)
    held_out = tuning_config(table, 500)
    assert held_out.games == 500 and held_out.seed == TUNING_SEED_OFFSET
    assert not set(range(table.seed, table.seed + table.games)) & set(range(held_out.seed, held_out.seed + 500))
    text = render_beta_choices([BetaChoice("MC returns", [1.0, 2.0], [_result([-4]), _result([-3])])], held_out)
    assert "500 held-out games seeded from 10000000" in text and "| row | β=1 | β=2 | β chosen |" in text
    assert "each of its eval scripts plays one β, 16 by default" in text  # what LMRL-Gym's code does, as read there


def test_the_default_grid_is_the_one_lmrl_gym_s_results_loader_reads():
    from trainers.experiments.beta_choice import BETA_GRID, LMRL_GYM_BETAS

    assert BETA_GRID == (1, 2, 4, 8, 16, 32, 64, 128) and "β = 1, 2, 4, ..., 128" in LMRL_GYM_BETAS


@pytest.mark.parametrize("text, message", [("", "no β given"), ("1,x", "comma-separated numbers")])
def test_bad_grids_are_named(text, message):
    with pytest.raises(ValueError, match=message):
        parse_grid(text)
    assert parse_grid("1, 2,4") == (1.0, 2.0, 4.0)
