"""The Wordle reward-learning demonstration: its ranking measure by hand, and a tiny end-to-end run."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

pytest.importorskip("torch", reason="the reward model needs torch (installed by setup.cfg)")

from rlds_lang.preferences.types import Clip  # noqa: E402
from trainers.experiments.preferences.wordle_demo import (  # noqa: E402
    RewardDemoConfig,
    random_pairs,
    ranking_accuracy,
    run_demo,
)


def _clip(name: str, true_return: float) -> Clip:
    return Clip(f"{name}:0", name, 0, 1, ["⬛⬛⬛⬛⬛"], ["crane"], [true_return], [False])


class _Fixed:
    """A stand-in reward model whose predicted return of a clip is looked up by its id."""

    def __init__(self, predicted: dict[str, float]):
        self.predicted = predicted

    def returns(self, clips):
        return np.array([self.predicted[c.clip_id] for c in clips])


def test_ranking_accuracy_counts_pairs_ordered_like_the_true_return():
    a, b, c, d = _clip("a", -1.0), _clip("b", -3.0), _clip("c", -3.0), _clip("d", -5.0)
    model = _Fixed({"a:0": 2.0, "b:0": 0.5, "c:0": 9.0, "d:0": 0.5})
    # (a, b) right; (b, c) a tie in truth: left out; (c, d) right; (b, d) predicted tie: wrong; (d, a) right
    assert ranking_accuracy(model, [(a, b), (b, c), (c, d), (b, d), (d, a)]) == pytest.approx(3 / 4)
    assert np.isnan(ranking_accuracy(model, [(b, c)]))
    pairs = random_pairs([a, b, c, d], 50, np.random.default_rng(0))
    assert len(pairs) == 50 and all(x is not y for x, y in pairs)


def test_tiny_demo_runs_end_to_end(tmp_path):
    config = RewardDemoConfig(games_per_policy=6, labels=60, held_out_pairs=40, out=str(tmp_path / "demo"))
    config.reward = dataclasses.replace(config.reward, steps=10, members=2, log_every=5)
    results = run_demo(config, progress=False)
    written = json.loads((tmp_path / "demo" / "reward_demo.json").read_text())
    assert written["held_out_accuracy"] == results["held_out_accuracy"] and 0.0 <= results["held_out_accuracy"] <= 1.0
    assert 0.0 <= results["held_out_accuracy_normalised"] <= 1.0
    assert results["labels"] == 60 and results["games"] == 30 and results["held_out_games"] == 9
    assert results["verdict"] == ("reached" if results["held_out_accuracy"] >= 0.85 else "not reached")
    assert (tmp_path / "demo" / "reward" / "checkpoint" / "config.json").is_file()


def test_validation_games_are_held_out_whole_and_pairs_stay_on_their_side():
    import numpy as np

    from trainers.experiments.preferences.wordle_demo import split_games

    class Clip:
        def __init__(self, game, i):
            self.source_episode_id, self.clip_id = game, f"{game}/{i}"

    clips = [Clip(f"g{g}", i) for g in range(10) for i in range(3)]
    fit, check = split_games(clips, 0.2, np.random.default_rng(0))
    fit_games, check_games = {c.source_episode_id for c in fit}, {c.source_episode_id for c in check}
    assert len(check_games) == 2 and not fit_games & check_games and len(fit) + len(check) == len(clips)
    few = [Clip(f"g{g}", 0) for g in range(4)]
    assert len({c.source_episode_id for c in split_games(few, 0.1, np.random.default_rng(0))[1]}) == 2
