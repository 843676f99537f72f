"""Our LMRL-Gym Wordle setting measured beside LMRL-Gym's published figures.

``measure_setting`` plays the setting's behaviour policy (the data recipe of ``wordle_synthetic/lmrl_gym``)
and its scripted upper bound in memory on seeded games (``trainers.evaluation.wordle.evaluate``, same games for both),
and ``setting_table`` prints our mean return, success rate and mean length beside the published
-4.12 / 0.70 / 4.82, and the scripted policy's return beside the published -1.94, each with its standard
error and its distance from the published figure in standard errors. The built dataset's own statistics
come from ``rlds-lang stats``.

Run: ``python -m trainers.experiments.lmrl_gym [--games 20000] [--scripted-games 4096] [--seed 0]``.
``python -m trainers.experiments.lmrl_gym --consistency runs/bc/checkpoint`` prints ``consistency_learned`` of a trained model;
``--linear-reference`` prints what a linear model of the board learns of the data (``trainers.experiments.lmrl_gym.linear``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator

import numpy as np

from rlds_lang.wordle import lmrl_gym
from trainers.evaluation.stats import in_standard_errors, standard_error
from trainers.evaluation.wordle import EvalConfig, EvalResult, evaluate


def setting_config(games: int, seed: int) -> EvalConfig:
    """An ``EvalConfig`` of the LMRL-Gym setting (its list, rule and hidden-word mode)."""
    return EvalConfig(games=games, seed=seed, rule=lmrl_gym.RULE, mode=lmrl_gym.MODE, answers=lmrl_gym.WORDS,
                      guesses=lmrl_gym.WORDS)


def measure_setting(games: int = 20_000, scripted_games: int = lmrl_gym.PUBLISHED_EVAL_GAMES, seed: int = 0,
                    progress: bool = False) -> tuple[EvalResult, EvalResult]:
    """``(behaviour policy, scripted policy)`` results on seeded games of the setting."""
    behaviour = evaluate(lmrl_gym.behaviour_policy(), setting_config(games, seed), name="behaviour (data)",
                         progress=progress)
    scripted = evaluate(lmrl_gym.scripted_policy(), setting_config(scripted_games, seed), name="scripted",
                        progress=progress)
    return behaviour, scripted


#: first seed of data-policy games that are in neither split of ``wordle_synthetic/lmrl_gym`` (train games are
#: seeded from ``lmrl_gym.TRAIN_SEED``, eval games from ``lmrl_gym.EVAL_SEED``, 1,000,000 and 100,000 of them).
HELD_OUT_SEED = 20_000_000


def data_policy_turns(policy: Any, games: int, seed: int) -> Iterator[tuple[tuple[list, list], str]]:
    """Every turn of ``games`` games of the setting played by ``policy`` (the data policy,
    ``lmrl_gym.behaviour_policy()``), game ``i`` seeded ``seed + i``: ``((observations, actions) before the guess,
    the guess)``."""
    from rlds_lang.env import run_episode

    env = lmrl_gym.make_env()
    for game in range(games):
        episode = run_episode(env, policy, seed=seed + game)
        for turn, guess in enumerate(episode.actions):
            yield (episode.observations[:turn + 1], episode.actions[:turn]), guess


@dataclasses.dataclass
class ConsistencyReport:
    """How much of the data's one learnable regularity a model took up, on held-out games of the data policy.

    The data policy guesses a uniform list word with probability 0.66, else a uniform *consistent* word (one
    that could still be the answer), so all that behaviour cloning can learn beyond uniform guessing is to move
    probability onto the consistent words. Over the states after the first feedback: the mean probability
    that the model (its word distribution renormalised over the list), the data policy and uniform guessing
    put on the consistent words; over every guess, the model's and the data policy's mean ``-log p`` of the
    guess the data policy made (nats per guess; uniform: ``log 431``)."""

    states: int
    model_mass: float
    behaviour_mass: float
    uniform_mass: float
    model_nats: float
    behaviour_nats: float
    uniform_nats: float

    @property
    def learned(self) -> float:
        """``(model - uniform) / (data policy - uniform)`` of the consistent mass: 0 = uniform, 1 = the data's."""
        return (self.model_mass - self.uniform_mass) / (self.behaviour_mass - self.uniform_mass)

    def line(self) -> str:
        """One line for logs and notes."""
        return (f"consistent-word mass {self.model_mass:.3f} (data policy {self.behaviour_mass:.3f}, uniform "
                f"{self.uniform_mass:.3f}; learned {self.learned:.0%}) over {self.states} states; nats per guess "
                f"{self.model_nats:.3f} (data policy {self.behaviour_nats:.3f}, uniform {self.uniform_nats:.3f})")


def consistency_learned(loaded: Any, games: int = 100, seed: int = HELD_OUT_SEED) -> ConsistencyReport:
    """``ConsistencyReport`` of a trained model (``trainers.algorithms.registry.load_agent_model``) on ``games`` games of
    the data policy seeded from ``seed`` (by default beyond the seeds of both splits of the dataset)."""
    from rlds_lang.wordle.knowledge import feedback_history
    from trainers.evaluation.diagnostics import word_log_probs

    policy = lmrl_gym.behaviour_policy()
    words = list(policy.knowledge.guesses.words)
    index = {word: i for i, word in enumerate(words)}
    mass: list[tuple[float, float, float]] = []
    nats: list[tuple[float, float]] = []
    for state, guess in data_policy_turns(policy, games, seed):
        model_logp = word_log_probs(loaded, state, words)
        model_p = np.exp(model_logp - np.logaddexp.reduce(model_logp))
        behaviour_p = policy.distribution(*state)
        nats.append((-float(np.log(model_p[index[guess]])), -float(np.log(behaviour_p[index[guess]]))))
        if state[1]:  # after the first feedback
            consistent = policy.knowledge.consistent_guess_mask(feedback_history(*state))
            mass.append((float(model_p[consistent].sum()), float(behaviour_p[consistent].sum()),
                         float(consistent.mean())))
    model_mass, behaviour_mass, uniform_mass = np.mean(mass, axis=0)
    model_nats, behaviour_nats = np.mean(nats, axis=0)
    return ConsistencyReport(len(mass), float(model_mass), float(behaviour_mass), float(uniform_mass),
                             float(model_nats), float(behaviour_nats), float(np.log(len(words))))


def _row(what: str, ours: float, se: float, published: float) -> str:
    gap = in_standard_errors(ours - published, se)
    return f"| {what} | {ours:.3f} ± {se:.3f} | {published:.2f} | {ours - published:+.3f} ({gap:+.1f} SE) |"


def setting_table(behaviour: EvalResult, scripted: EvalResult) -> str:
    """A markdown table: our figures (± standard error) beside LMRL-Gym's, with the gap in standard errors."""
    data = lmrl_gym.PUBLISHED_DATASET
    length_se = standard_error(behaviour.guesses)
    rows = [
        "| figure | ours (± SE) | LMRL-Gym | ours − theirs |",
        "| --- | --- | --- | --- |",
        _row(f"data policy mean return ({behaviour.games} games)", behaviour.mean_reward, behaviour.stderr,
             data["mean_return"]),
        _row("data policy success rate", behaviour.win_rate, behaviour.win_rate_stderr, data["success_rate"]),
        _row("data policy mean length (guesses)", behaviour.mean_guesses, length_se, data["mean_length"]),
        _row(f"scripted policy mean return ({scripted.games} games)", scripted.mean_reward, scripted.stderr,
             lmrl_gym.PUBLISHED_SCRIPTED),
    ]
    return "\n".join(rows)

