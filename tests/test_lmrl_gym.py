"""LMRL-Gym's Wordle setting: the shipped list and licence, the behaviour and scripted policies, the
normalisation, and the measurement beside the published figures."""

import importlib.resources

import numpy as np
import pytest

from rlds_lang.env import run_episode
from rlds_lang.wordle import lmrl_gym
from rlds_lang.wordle.knowledge import feedback_history
from rlds_lang.wordle.words import lmrl_gym_words, resolve_word_list
from trainers.experiments.lmrl_gym.__main__ import main
from trainers.experiments.lmrl_gym.setting import measure_setting, setting_table


def test_the_list_ships_with_its_licence():
    folder = importlib.resources.files("rlds_lang.wordle").joinpath("data", "lmrl_gym")
    assert "MIT License" in folder.joinpath("LICENSE").read_text() and "Charlie Snell" in folder.joinpath("LICENSE").read_text()
    assert "911d726b5b3732b468acada46ca60fa3cbc2f847" in folder.joinpath("README.md").read_text()
    words = lmrl_gym_words()
    assert len(words) == 431 and len(set(words.words)) == 431 and resolve_word_list("lmrl_gym") is words
    with open("setup.cfg") as f:
        assert "rlds_lang.wordle = data/*/*" in f.read()  # installed as package data


def test_behaviour_policy_mixes_random_and_consistent_words():
    env, policy = lmrl_gym.make_env(), lmrl_gym.behaviour_policy()
    assert policy.params()["prob_smart"] == pytest.approx(0.34) and env.answers is env.guesses
    consistent = later = 0
    for seed in range(300):
        episode = run_episode(env, policy, seed=seed)
        assert set(episode.actions) <= set(lmrl_gym_words().words)
        for turn in range(1, episode.num_actions):
            history = feedback_history(episode.observations[:turn + 1], episode.actions[:turn])
            mask = policy.knowledge.consistent_guess_mask(history)
            consistent += bool(mask[policy.knowledge.guesses.words.index(episode.actions[turn])])
            later += 1
    # 34% consistent on purpose, plus the random words that happen to be consistent (few on 431 words)
    assert 0.30 < consistent / later < 0.50


def test_normalised_score_reproduces_the_published_table():
    for method, (raw, published) in lmrl_gym.PUBLISHED_TABLE.items():
        ours = lmrl_gym.normalised_score(raw, lmrl_gym.PUBLISHED_DATASET["mean_return"], lmrl_gym.PUBLISHED_SCRIPTED)
        assert abs(ours - published) <= 0.15, method  # the published inputs are rounded to 2 decimals
    assert lmrl_gym.normalised_score(-6.0, -4.12, -1.94) == 0.0
    assert lmrl_gym.normalised_score(-4.12, -4.12, -1.94) == 50.0
    with pytest.raises(ValueError, match="min < dataset mean < scripted"):
        lmrl_gym.normalised_score(-3.0, -1.0, -2.0)


def test_recipes_split_by_seed():
    train, held = lmrl_gym.recipe("train"), lmrl_gym.recipe("eval")
    assert (train.episodes, held.episodes) == (1_000_000, 100_000)
    assert train.seed + train.episodes <= held.seed
    assert lmrl_gym.recipe("train", episodes=5).episodes == 5
    with pytest.raises(ValueError, match="split must be"):
        lmrl_gym.recipe("test")


def test_measured_setting_matches_the_published_figures(capsys):
    behaviour, scripted = measure_setting(games=600, scripted_games=200, seed=7)
    data = lmrl_gym.PUBLISHED_DATASET
    assert abs(behaviour.mean_reward - data["mean_return"]) < 4 * behaviour.stderr
    assert abs(behaviour.win_rate - data["success_rate"]) < 4 * behaviour.win_rate_stderr
    assert abs(scripted.mean_reward - lmrl_gym.PUBLISHED_SCRIPTED) < 4 * scripted.stderr + 0.01
    table = setting_table(behaviour, scripted)
    assert "| data policy mean return (600 games) |" in table and "| -4.12 |" in table and "| -1.94 |" in table
    printed = main(["--games", "20", "--scripted-games", "5"])
    assert printed in capsys.readouterr().out and "(20 games)" in printed
    assert np.isfinite(behaviour.mean_guesses)


def test_docstring_examples_run():
    import doctest

    result = doctest.testmod(lmrl_gym)
    assert result.attempted > 0 and result.failed == 0


def test_behaviour_probability_sums_to_one():
    import math

    env, policy = lmrl_gym.make_env(seed=3), lmrl_gym.behaviour_policy()
    policy.reset(3)
    step = env.reset()
    observations, actions = [step.observation], []
    for _ in range(2):  # at the start and after two guesses: a distribution over the list
        words = lmrl_gym_words().words
        probabilities = [policy.probability(observations, actions, w) for w in words]
        assert math.isclose(sum(probabilities), 1.0, rel_tol=1e-9) and min(probabilities) >= 0.66 / 431 - 1e-12
        np.testing.assert_allclose(policy.distribution(observations, actions), probabilities, rtol=1e-12)
        action = policy.act(observations, actions)
        step = env.step(action)
        observations.append(step.observation)
        actions.append(action)
    assert policy.probability(observations, actions, "zzzzz") == 0.0


def test_word_log_probs_are_the_language_models_and_consistency_of_an_untrained_model_is_uniform(tmp_path):
    import dataclasses

    import torch

    from rlds_lang.tokenizers import lmrl_gym_word_tokenizer
    from trainers.algorithms.bc import BCConfig, BCModel
    from trainers.core.checkpoint import LoadedModel
    from trainers.core.model import ModelConfig
    from trainers.evaluation.diagnostics import word_log_probs
    from trainers.experiments.lmrl_gym.setting import consistency_learned

    tokenizer = lmrl_gym_word_tokenizer()
    torch.manual_seed(0)
    config = BCConfig(dataset="unused", model=ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=32))
    model = BCModel(config, tokenizer).eval()
    loaded = LoadedModel("bc", config, model, tokenizer, step=0)
    state = (["", "⬛🟨⬛⬛🟩"], ["solar"])
    words = ["slate", "glade", "crane"]  # list words are one token each, "crane" (not in the list) several
    got = word_log_probs(loaded, state, words)
    prompt = tokenizer.encode_prompt(*state)
    for word, value in zip(words, got):
        continuation = tokenizer.encode(word) + [tokenizer.eoa_id]
        ids = torch.tensor([prompt + continuation])
        with torch.no_grad():
            logp = model.lm(input_ids=ids).logits[0, len(prompt) - 1:-1].log_softmax(-1)
        assert value == pytest.approx(float(logp[range(len(continuation)), continuation].sum()), abs=1e-4), word
    report = consistency_learned(loaded, games=4, seed=11)
    assert report.states > 0 and report.behaviour_mass > report.uniform_mass + 0.2
    assert abs(report.learned) < 0.1  # random weights: about uniform over the list
    # the data policy's own loss (the floor of BC) is below uniform guessing's: its consistent words carry information
    assert 4.0 < report.behaviour_nats < report.uniform_nats == pytest.approx(np.log(431))
    assert report.behaviour_nats < report.model_nats <= report.uniform_nats + 0.1
    assert "learned" in report.line() and dataclasses.is_dataclass(report)
    from trainers.core.checkpoint import save_checkpoint

    path = save_checkpoint(tmp_path, "bc", config, model, tokenizer, {"step": 0})
    assert main(["--consistency", str(path), "--consistency-games", "2"]).startswith(f"{path}: consistent-word mass")
