"""The Section-5 recipes hold the authors' config/wordle/generate_adversarial_data.yaml (n_trajectories 2000,
n_adversarial 5 of RepeatPolicy(first_n=2) from the state after two moves of games of 3+ guesses, n_suboptimal 5 of
RandomMixturePolicy(prob_smart=0.5)), and a takeover repeats one of the game's first two words, as theirs."""

from __future__ import annotations

import json

from rlds_lang.env import run_episode
from rlds_lang.wordle import ilql_adversarial as A
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import RepeatPolicy, make_policy
from rlds_lang.wordle.recipes import TakeoverPolicy, recipe_policy


def test_the_recipes_are_the_authors_config():
    optimal, suboptimal = A.recipes()
    assert (optimal.policy, optimal.episodes, optimal.branch_policy, json.loads(optimal.branch_params)) == (
        "optimal", 2000, "repeat", {"first_n": 2})
    # len(expert_sequence) > 3 counts the terminal entry: 3 guesses or more; the takeover after expert_sequence[2]
    assert (optimal.branches_per_turn, optimal.branch_min_turns, optimal.branch_at_turn) == (5, 3, 2)
    assert (suboptimal.policy, json.loads(suboptimal.policy_params), suboptimal.episodes) == (
        "random_mixture", {"prob_smart": 0.5}, 5 * 2000)
    assert (optimal.mode, optimal.rule) == (suboptimal.mode, suboptimal.rule) == ("adversarial_resample", "ilql")
    # 1 : 5 : 5 when every optimal game branches: the paper's shares
    assert [round(x / 11, 3) for x in (1, 5, 5)] == [0.091, 0.455, 0.455]


def test_repeat_policy_keeps_to_the_first_n_guesses():
    said = set()
    for seed in range(6):
        take = TakeoverPolicy(RepeatPolicy(first_n=2, rule=A.RULE))
        take.prefix = ["crane", "slate", "moist"]
        said |= set(run_episode(WordleEnv(rule=A.RULE, mode=A.MODE, seed=seed), take, seed=seed).actions[3:])
    assert said == {"crane", "slate"}  # never "moist", the third guess
    assert RepeatPolicy().params()["first_n"] is None and make_policy("repeat", first_n=2).first_n == 2


def test_a_takeover_repeats_one_of_the_optimal_games_first_two_words_and_loses():
    optimal, _ = A.recipes(1)
    take = TakeoverPolicy(recipe_policy(optimal.branch_policy, optimal.branch_params, optimal))
    take.prefix = ["raise", "clout"]
    episode = run_episode(WordleEnv(rule=A.RULE, mode=A.MODE, seed=5), take, seed=5)
    assert episode.actions[:2] == ["raise", "clout"] and set(episode.actions[2:]) <= {"raise", "clout"}
    assert len(episode.actions) == 6 and sum(episode.rewards) == -6.0  # a guess already made is never the answer
