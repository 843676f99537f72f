"""Scripted replay: turn recorded interactions (corpora, test data) into episodes born through the logger.

``ReplayEnv`` is a ``LanguageEnv`` that replays given observations and rewards; ``ReplayPolicy`` emits
the given actions. Played together through ``loggers.record`` they write exactly the given episode, so
tweets, dialogues or property-test data become RLDS logs the same way live interactions do.

A ``ScriptedEpisode`` holds observations o_0..o_T (T+1 of them, each a dict with ``text`` and the
schema's structured fields, or a plain string for text-only tasks), actions a_0..a_{T-1}, rewards
r_0..r_{T-1} and episode metadata. The environment terminates after the last action (discount 0) unless
``truncated`` is set (then the last discount is 1.0).

Example::

    from rlds_lang.env import run_episode
    from rlds_lang.replay import ReplayEnv, ReplayPolicy, ScriptedEpisode

    eps = [ScriptedEpisode(observations=["hi", "bye"], actions=["hello"], rewards=[1.0])]
    episode = run_episode(ReplayEnv(eps), ReplayPolicy(eps), seed=0)   # loggers.record(env, policy, ...) logs it
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Sequence

import numpy as np
from dm_env import specs

from rlds_lang.env import InvalidActionError, LanguageEnv, Observation, text_spec


@dataclasses.dataclass
class ScriptedEpisode:
    """One episode to replay (see the module docstring)."""

    observations: Sequence[Any]
    actions: Sequence[str]
    rewards: Sequence[float]
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    truncated: bool = False

    def __post_init__(self) -> None:
        if len(self.observations) != len(self.actions) + 1:
            raise ValueError(f"need len(observations) == len(actions) + 1, got {len(self.observations)} "
                             f"and {len(self.actions)}")
        if len(self.rewards) != len(self.actions):
            raise ValueError(f"need one reward per action, got {len(self.rewards)} for {len(self.actions)}")
        if not self.actions:
            raise ValueError("a replayed episode needs at least one action")


def _as_observation(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    return {"text": value}


class ReplayEnv(LanguageEnv):
    """Replays ``episodes`` in order (episode ``i`` on the ``i``-th reset, cycling), checking the actions.

    Args:
      episodes: the scripted episodes.
      task_name: the task recorded in metadata.
      observation_spec: specs of the structured observation fields beside ``text`` (default: inferred
        from the first episode's first observation: numpy arrays keep their dtype and shape).
      check_actions: raise ``InvalidActionError`` if an action differs from the script.
    """

    def __init__(self, episodes: Sequence[ScriptedEpisode], task_name: str = "replay",
                 observation_spec: Mapping[str, specs.Array] | None = None, check_actions: bool = True):
        super().__init__(seed=0)
        if not episodes:
            raise ValueError("ReplayEnv needs at least one episode")
        self.episodes = list(episodes)
        self.task_name = task_name
        self.check_actions = check_actions
        if observation_spec is None:
            first = _as_observation(self.episodes[0].observations[0])
            observation_spec = {k: specs.Array(np.shape(v), np.asarray(v).dtype, name=k)
                                for k, v in first.items() if k != "text"}
        self._extra_spec = dict(observation_spec)
        self._next = 0
        self._current: ScriptedEpisode | None = None
        self._t = 0

    def select(self, index: int) -> None:
        """Makes the next ``reset`` replay episode ``index``."""
        self._next = index % len(self.episodes)

    def observation_spec(self) -> dict[str, specs.Array]:
        return {"text": text_spec("text"), **self._extra_spec}

    def _reset(self) -> Observation:
        self._current = self.episodes[self._next]
        self._next = (self._next + 1) % len(self.episodes)
        self._t = 0
        return _as_observation(self._current.observations[0])

    def _step(self, action: str) -> tuple[Observation, float, bool]:
        ep = self._current
        assert ep is not None
        if self.check_actions and action != ep.actions[self._t]:
            raise InvalidActionError(f"replay step {self._t}: got action {action!r}, script says {ep.actions[self._t]!r}")
        reward = float(ep.rewards[self._t])
        self._t += 1
        done = self._t == len(ep.actions)
        return _as_observation(ep.observations[self._t]), reward, done

    def step(self, action: Any):
        timestep = super().step(action)
        if timestep.last() and self._current is not None and self._current.truncated:
            timestep = timestep._replace(discount=np.float64(1.0))
        return timestep

    def episode_metadata(self) -> dict[str, Any]:
        return dict(self._current.metadata) if self._current is not None else {}


class ReplayPolicy:
    """Emits the scripted actions of the episode the paired ``ReplayEnv`` is replaying.

    The policy follows the same order as ``ReplayEnv`` (episode ``i`` on the ``i``-th ``reset``).
    """

    name = "replay"

    def __init__(self, episodes: Sequence[ScriptedEpisode], policy_name: str = "replay"):
        self.episodes = list(episodes)
        self.name = policy_name
        self._next = 0
        self._current: ScriptedEpisode | None = None

    def select(self, index: int) -> None:
        """Makes the next ``reset`` follow episode ``index``."""
        self._next = index % len(self.episodes)

    def reset(self, seed: int) -> None:
        self._current = self.episodes[self._next]
        self._next = (self._next + 1) % len(self.episodes)

    def act(self, observations: Sequence[Observation], actions: Sequence[str]) -> str:
        assert self._current is not None, "reset() was not called"
        return self._current.actions[len(actions)]

    def params(self) -> Mapping[str, Any]:
        return {"episodes": len(self.episodes)}


__all__ = ["ReplayEnv", "ReplayPolicy", "ScriptedEpisode"]
