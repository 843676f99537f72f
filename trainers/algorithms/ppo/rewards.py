"""Where PPO's scores come from: the environment, a learned reward model, or any scorer function.

A *turn* is one agent utterance: the observations ``o_0..o_t`` and earlier actions ``a_0..a_{t-1}`` it was
generated from (the query) and the action ``a_t`` (the response). PPO gives each turn a per-turn reward
``r_t`` and trains on the turn's return-to-go ``sum_{k >= t} r_k`` (undiscounted across turns, like the
recipe's gamma = 1), placed on the turn's last kept response token.

The interface a reward source implements (document of the contract with ``trainers.algorithms.reward.model``):

- a **turn scorer**: any callable ``scorer(turns: list[Turn]) -> Sequence[float]`` (one reward per turn),
  or an object with such a ``score_turns`` method. The query + response text a reward model reads is
  ``turn.query_text`` + ``turn.response`` (``Turn.text()`` gives them concatenated).
- an **episode scorer**: an object with ``score_episodes(episodes: list[dict]) -> Sequence[float]``, the
  episodes as ``loggers.read_episodes`` returns them (RLDS steps + metadata); the score is the reward of
  the episode's last turn (so every turn's return-to-go is the episode's score).

``reward_source("env" | "model:<dir>" | "scorer:<module>:<function>")`` resolves a command-line spec:
``env`` uses the environment's own rewards; ``model:<dir>`` loads a trained reward model with
``trainers.algorithms.reward.scorer.load_reward_model(dir)`` (a reward model trained from preferences; it returns
one of the two kinds above); ``scorer:pkg.mod:fn`` imports a function.

Example::

    from trainers.algorithms.ppo.rewards import Turn, turn_rewards

    def longer_is_better(turns):
        return [len(t.response) / 10 for t in turns]
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable, Sequence

import numpy as np

ENV = "env"


@dataclasses.dataclass(frozen=True)
class Turn:
    """One agent utterance in context: what a reward model or scorer reads."""

    observations: tuple[str, ...]
    actions: tuple[str, ...]
    response: str

    @property
    def query_text(self) -> str:
        """The context as text: observations and earlier actions interleaved, one per line."""
        parts: list[str] = []
        for i, observation in enumerate(self.observations):
            parts.append(observation)
            if i < len(self.actions):
                parts.append(self.actions[i])
        return "\n".join(parts) + "\n"

    def text(self) -> str:
        """Query and response concatenated (what the recipe's reward model reads)."""
        return self.query_text + self.response


def episode_turns(episode: dict[str, Any]) -> list[Turn]:
    """The turns of a recorded episode (``loggers.read_episodes`` format), in order."""
    steps = episode["steps"]
    observations = [str(s["observation"]["text"]) if isinstance(s["observation"], dict) else str(s["observation"])
                    for s in steps]
    actions = [str(s["action"]) for s in steps[:-1]]
    return [Turn(tuple(observations[:t + 1]), tuple(actions[:t]), actions[t]) for t in range(len(actions))]


def returns_to_go(rewards: Sequence[float]) -> list[float]:
    """``[sum(rewards[t:]) for t]``.

    >>> returns_to_go([-1.0, -1.0, 0.0])
    [-2.0, -1.0, 0.0]
    """
    return [float(x) for x in np.cumsum(np.asarray(rewards, dtype=np.float64)[::-1])[::-1]]


def turn_rewards(episodes: Sequence[dict[str, Any]], source: Any) -> list[list[float]]:
    """Per-turn rewards ``r_t`` of every episode from ``source`` (``ENV``, a turn or an episode scorer)."""
    if source == ENV:
        return [[float(s["reward"]) for s in ep["steps"][:-1]] for ep in episodes]
    if hasattr(source, "score_episodes"):
        scores = list(source.score_episodes(list(episodes)))
        _check_count(scores, len(episodes), "score_episodes")
        out = []
        for episode, score in zip(episodes, scores):
            n = len(episode["steps"]) - 1
            out.append([0.0] * (n - 1) + [float(score)] if n else [])
        return out
    score_turns: Callable[[list[Turn]], Sequence[float]] = getattr(source, "score_turns", source)
    if not callable(score_turns):
        raise TypeError(f"reward source {source!r} is neither 'env', a callable over turns, nor an object with "
                        f"score_turns / score_episodes")
    per_episode = [episode_turns(ep) for ep in episodes]
    flat = [turn for turns in per_episode for turn in turns]
    scores = [float(s) for s in score_turns(flat)]
    _check_count(scores, len(flat), "the turn scorer")
    out, start = [], 0
    for turns in per_episode:
        out.append(scores[start:start + len(turns)])
        start += len(turns)
    return out


def _check_count(scores: Sequence[float], expected: int, what: str) -> None:
    if len(scores) != expected:
        raise ValueError(f"{what} returned {len(scores)} scores for {expected} items")


def reward_source(spec: str) -> Any:
    """The reward source named by a command-line spec (see the module docstring); errors name the spec."""
    if spec == ENV:
        return ENV
    kind, _, rest = spec.partition(":")
    if kind == "model" and rest:
        from trainers.algorithms.reward.scorer import load_reward_model

        return load_reward_model(rest)
    if kind == "scorer" and ":" in rest:
        module, _, name = rest.rpartition(":")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as error:
            raise ValueError(f"--reward {spec!r}: cannot import {name} from {module}: {error}") from None
    raise ValueError(f"--reward {spec!r}: expected 'env', 'model:<dir>' or 'scorer:<module>:<function>'")


__all__ = ["ENV", "Turn", "episode_turns", "returns_to_go", "turn_rewards", "reward_source"]
