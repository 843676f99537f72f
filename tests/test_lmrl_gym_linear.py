"""The linear reference of the LMRL-Gym setting: board features and a fit that learns from the data policy."""

import numpy as np
import pytest

from rlds_lang.env import run_episode
from rlds_lang.wordle import lmrl_gym
from trainers.experiments.lmrl_gym.linear import (
    COLOURS,
    FEATURES,
    board_features,
    linear_reference,
)


def _index(place: int, letter: str, colour: int) -> int:
    return (place * 26 + ord(letter) - ord("a")) * COLOURS + colour


def test_board_features_mark_each_place_letter_and_colour_the_board_shows():
    episode = run_episode(lmrl_gym.make_env(), lmrl_gym.behaviour_policy(), seed=5)
    assert len(episode.actions) >= 2
    assert board_features(episode.observations[:1], []).tolist() == [0.0] * (FEATURES - 1) + [1.0]
    turns = len(episode.actions)
    features = board_features(episode.observations, episode.actions)
    expected = {_index(p, guess[p], int(obs["feedback"][p]))
                for guess, obs in zip(episode.actions, episode.observations[1:]) for p in range(5)}
    assert set(np.flatnonzero(features[:-1])) == expected and features[-1] == 1.0
    assert len(expected) <= 5 * turns
    with pytest.raises(ValueError, match="one more observation"):
        board_features(episode.observations, episode.actions[:-1])


def test_linear_reference_learns_from_the_data_policy_and_stays_above_its_floor():
    report = linear_reference(train_games=5000, held_out_games=100, steps=64, batch=256, lr=1e-2)
    assert report.steps == [16, 32, 64] and len(report.nats) == 3
    assert report.uniform_nats == pytest.approx(np.log(431))
    # the board's linear part carries information: held-out guesses become likelier than uniform ones
    assert report.nats[-1] < report.uniform_nats - 0.05
    assert report.behaviour_nats < report.uniform_nats
    assert 0.0 < report.learned(report.nats[-1]) < 1.0
    assert "linear reference" in report.line() and f"{report.states} guesses" in report.line()


def test_the_setting_command_prints_the_linear_reference():
    from trainers.experiments.lmrl_gym.__main__ import main

    line = main(["--linear-reference", "--linear-train-games", "200", "--linear-held-out-games", "10",
                 "--linear-steps", "16"])
    assert line.startswith("linear reference, held-out nats per guess by Adam step (16: ")
