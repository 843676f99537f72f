"""Tests of the Wordle policies: valid play, determinism, optimal play, behaviours, registry, pickling."""

from __future__ import annotations

import io
import json
import pickle

import numpy as np
import pytest

from rlds_lang.env import Policy, policy_params_json, run_episode
from rlds_lang.wordle import game
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import (
    MixturePolicy,
    MonteCarloPolicy,
    OptimalPolicy,
    RandomMixturePolicy,
    RepeatPolicy,
    StartWordPolicy,
    UserPolicy,
    WrongPolicy,
    feedback_history,
    make_policy,
)


@pytest.fixture(scope="module")
def env() -> WordleEnv:
    return WordleEnv(seed=0)


def consistent_words(words, history, rule="official"):
    """Scalar reference: words that would have produced every (guess, pattern) of history."""
    return {w for w in words if all(game.colour(g, w, rule) == p for g, p in history)}


def scalar_history(episode):
    return [(a, tuple(int(c) for c in o["feedback"])) for a, o in zip(episode.actions, episode.observations[1:])]


def all_policies() -> dict[str, Policy]:
    return {
        "start_word": StartWordPolicy("crane", OptimalPolicy()),
        "optimal": OptimalPolicy(),
        "optimal_consistent": OptimalPolicy(guess_pool="consistent"),
        "repeat": RepeatPolicy(),
        "random_mixture": RandomMixturePolicy(prob_smart=0.5),
        "wrong": WrongPolicy(),
        "mixture": MixturePolicy(OptimalPolicy(), RandomMixturePolicy(0.0), prob_a=0.5),
        "monte_carlo": MonteCarloPolicy(RandomMixturePolicy(0.7), RandomMixturePolicy(1.0), n_samples=3, n_rollouts=3),
    }


@pytest.mark.parametrize("key", list(all_policies()))
def test_policy_plays_valid_games(env, key):
    policy = all_policies()[key]
    assert isinstance(policy, Policy)
    for seed in range(3):
        ep = run_episode(env, policy, seed=seed)
        assert 1 <= ep.num_actions <= env.max_guesses
        assert all(a in env.guesses for a in ep.actions)
        won = ep.actions[-1] == ep.metadata["answer"]
        assert ep.total_reward == -(ep.num_actions - (1 if won else 0))
        json.loads(policy_params_json(policy))


@pytest.mark.parametrize("key", list(all_policies()))
def test_determinism(env, key):
    def actions(seed):
        policy = all_policies()[key]
        return [run_episode(env, policy, seed=s).actions for s in (seed, seed + 1, seed + 2)]

    assert actions(10) == actions(10)
    if key not in ("optimal", "optimal_consistent", "start_word"):
        assert actions(10) != actions(20)


def test_optimal_wins_sample_official_fixed(env):
    rng = np.random.default_rng(0)
    sample = rng.choice(len(env.answers), size=300, replace=False)
    policy = OptimalPolicy()
    lengths = []
    for i in sample:
        word = env.answers.words[int(i)]
        env.set_next_answer(word)
        ep = run_episode(env, policy, seed=int(i))
        assert ep.actions[-1] == word, (word, ep.actions)
        lengths.append(ep.num_actions)
    assert np.mean(lengths) < 3.7


@pytest.mark.parametrize("mode,rule", [("adversarial_resample", "official"), ("fixed", "ilql"),
                                       ("adversarial_resample", "ilql")])
def test_optimal_other_modes_and_rules(mode, rule):
    env = WordleEnv(mode=mode, rule=rule, seed=0)
    policy = OptimalPolicy(rule=rule)
    wins = 0
    for seed in range(40):
        ep = run_episode(env, policy, seed=seed)
        hist = scalar_history(ep)
        assert consistent_words(env.answers.words, hist, rule)  # the feedback stayed coherent
        wins += ep.actions[-1] == ep.metadata["answer"]
    assert wins >= 38


def test_optimal_guesses_directly_with_two_candidates(env):
    policy = OptimalPolicy()
    for seed in range(20):
        ep = run_episode(env, policy, seed=seed)
        hist = scalar_history(ep)
        for t in range(1, ep.num_actions):
            cands = consistent_words(env.answers.words, hist[:t])
            if len(cands) <= 2:
                assert ep.actions[t] in cands


def test_random_mixture_smart_only_guesses_consistent(env):
    policy = RandomMixturePolicy(prob_smart=1.0)
    for seed in range(15):
        ep = run_episode(env, policy, seed=seed)
        hist = scalar_history(ep)
        for t, action in enumerate(ep.actions):
            assert action in consistent_words(env.answers.words, hist[:t])


def test_random_mixture_dumb_uses_whole_guess_list(env):
    policy = RandomMixturePolicy(prob_smart=0.0)
    guesses = [a for s in range(10) for a in run_episode(env, policy, seed=s).actions]
    assert any(g not in env.answers for g in guesses)


def test_wrong_policy_guesses_are_inconsistent(env):
    policy = WrongPolicy()
    sample = env.guesses.words[::25]  # scalar check on a slice of the guess list plus the guesses themselves
    for seed in range(8):
        ep = run_episode(env, policy, seed=seed)
        hist = scalar_history(ep)
        for t in range(1, ep.num_actions):
            action = ep.actions[t]
            assert action not in consistent_words([action], hist[:t])
            # and the vectorised mask agrees with the scalar rule on a sample
            mask = policy.knowledge.consistent_guess_mask([(g, game.pattern_id(p)) for g, p in hist[:t]])
            ref = consistent_words(sample, hist[:t])
            assert {w for w in sample if mask[env.guesses.index(w)]} == ref


def test_repeat_policy_repeats(env):
    ep = run_episode(env, RepeatPolicy(), seed=4)
    assert set(ep.actions[1:]) <= {ep.actions[0]}


def test_start_word_policy(env):
    ep = run_episode(env, StartWordPolicy("slate", RandomMixturePolicy(1.0)), seed=2)
    assert ep.actions[0] == "slate"


def test_mixture_extremes(env):
    a_only = MixturePolicy(OptimalPolicy(), RepeatPolicy(), prob_a=1.0)
    assert run_episode(env, a_only, seed=5).actions == run_episode(env, OptimalPolicy(), seed=5).actions


def test_user_policy_scripted_input_with_invalid_word(env):
    env.set_next_answer("crane")
    script = iter(["xyzzy", "toolong", "QQQQQ", "slate", "crane"])
    out = io.StringIO()
    policy = UserPolicy(input_fn=lambda prompt: next(script), output_fn=lambda s: print(s, file=out))
    ep = run_episode(env, policy, seed=0)
    assert ep.actions == ["slate", "crane"]
    text = out.getvalue()
    assert "'xyzzy' is not a valid guess" in text and "'toolong' is not a valid guess" in text
    assert "'qqqqq' is not a valid guess" in text
    assert game.render(game.colour("slate", "crane")) + "  SLATE" in text


def test_feedback_history_matches_env(env):
    ep = run_episode(env, RandomMixturePolicy(0.5), seed=9)
    hist = feedback_history(ep.observations, ep.actions)
    assert hist == [(g, game.pattern_id(p)) for g, p in scalar_history(ep)]
    ids = OptimalPolicy().knowledge.consistent(hist)
    assert {env.answers.words[i] for i in ids} == consistent_words(env.answers.words, scalar_history(ep))


def test_make_policy_round_trip_and_pickle(env):
    nested = make_policy("monte_carlo", base={"name": "mixture", "params": {
        "a": {"name": "optimal", "params": {}}, "b": "wrong", "prob_a": 0.3}},
        rollout={"name": "start_word", "params": {"start_word": "crane", "then": {"name": "random_mixture",
                                                                                 "params": {"prob_smart": 0.9}}}},
        n_samples=2, n_rollouts=2)
    policies = list(all_policies().values()) + [nested, UserPolicy()]
    for policy in policies:
        spec = json.loads(json.dumps({"name": policy.name, "params": policy.params()}))
        rebuilt = make_policy(spec["name"], **spec["params"])
        assert type(rebuilt) is type(policy) and rebuilt.params() == policy.params()
        clone = pickle.loads(pickle.dumps(policy))
        assert clone.params() == policy.params()
    for policy in [nested, OptimalPolicy(), RandomMixturePolicy(0.4)]:
        clone = pickle.loads(pickle.dumps(policy))
        assert run_episode(env, clone, seed=3).actions == run_episode(env, policy, seed=3).actions
    with pytest.raises(ValueError, match="unknown Wordle policy"):
        make_policy("nope")
