"""trainers.evaluation.guess_quality: the shares of an agent's guesses that could have won, counted by replaying its
evaluated games, and the scripted players that say how winnable the games are."""

import dataclasses

import numpy as np
import pytest

from trainers.evaluation.guess_quality import guess_shares, mixture_player, reference_results
from trainers.evaluation.wordle import EvalConfig, evaluate

#: the ILQL MDP on LMRL-Gym's 400 answers, any official guess accepted: the answer is redrawn among the consistent
#: ones after every guess.
CONFIG = EvalConfig(games=40, seed=3, rule="ilql", mode="adversarial_resample", answers="lmrl_gym",
                    guesses="official_guesses")


def _played(prob_smart: float, config: EvalConfig = CONFIG):
    return evaluate(mixture_player(config, prob_smart), config, name=f"mixture {prob_smart}", progress=False)


def test_a_player_that_always_says_a_consistent_answer_has_every_guess_counted_consistent():
    shares = guess_shares(_played(1.0))
    assert shares.guesses > CONFIG.games  # games of more than one guess: the later guesses read replayed feedback
    assert shares.consistent == shares.on_answer_list == shares.guesses


def test_random_words_are_rarely_consistent_and_the_mixture_lies_between():
    random_words, mixture = guess_shares(_played(0.0)), guess_shares(_played(0.5))
    assert random_words.consistent_share < 0.2 and random_words.on_answer_list_share < 1.0
    assert random_words.consistent_share < mixture.consistent_share < 1.0
    assert random_words.consistent <= random_words.on_answer_list
    list_words = guess_shares(_played(0.0, dataclasses.replace(CONFIG, guesses="lmrl_gym")))  # answers only
    assert list_words.on_answer_list_share == 1.0 and list_words.consistent_share < 0.5


def test_a_result_its_config_does_not_reproduce_is_refused_by_game():
    result = _played(0.5)
    moved = dataclasses.replace(result, config={**result.config, "seed": CONFIG.seed + 1})
    with pytest.raises(ValueError, match=r"game \d+ of 'mixture 0.5' replays to return .* recorded"):
        guess_shares(moved)  # other seeds redraw other answers: the guesses no longer end the games they ended
    with pytest.raises(ValueError, match="no per-game guesses"):
        guess_shares(dataclasses.replace(result, actions=[]))


def test_a_rejected_last_guess_is_counted_and_replays_as_the_lost_game_recorded():
    config = dataclasses.replace(CONFIG, games=1)
    result = _played(1.0, config)
    rejected = dataclasses.replace(result, actions=[["zzzzz"]], rewards=np.array([-6.0]), guesses=np.array([6]),
                                   wins=np.array([False]), invalid=1)
    assert guess_shares(rejected) == type(guess_shares(rejected))(guesses=1, on_answer_list=0, consistent=0)


def test_the_reference_players_show_how_winnable_the_games_are():
    always, mixture = reference_results(CONFIG)
    assert always.name == "always a consistent answer" and always.params["prob_smart"] == 1.0
    assert always.win_rate > mixture.win_rate > 0.0
    assert guess_shares(always).consistent_share == 1.0


def test_the_docstring_examples_hold():
    import doctest

    from trainers.evaluation import guess_quality

    result = doctest.testmod(guess_quality)
    assert result.attempted >= 2 and result.failed == 0
