"""The language-environment base on ``dm_env``, the ``Policy`` protocol and the interaction loop.

A ``LanguageEnv`` takes text actions and emits observations that are a dict with a ``text`` entry plus
the task's structured fields; its specs use ``dm_env.specs.StringArray`` for text. Subclasses implement
``_reset`` and ``_step`` and describe themselves through ``episode_metadata``/``step_metadata`` so that
``loggers.record`` can store where every episode came from. A ``Policy`` sees the observation history
and the actions it took so far and returns the next action as text.

Example::

    from rlds_lang.env import run_episode
    from rlds_lang.wordle.env import WordleEnv
    from rlds_lang.wordle.policies import OptimalPolicy

    env = WordleEnv(seed=0)
    episode = run_episode(env, OptimalPolicy(), seed=7)
    print(episode.actions, episode.total_reward)
"""

from __future__ import annotations

import abc
import dataclasses
import json
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

import dm_env
import numpy as np
from dm_env import specs

Observation = Mapping[str, Any]


class InvalidActionError(ValueError):
    """An action the environment cannot accept; the message says which action and why."""


def text_spec(name: str) -> specs.StringArray:
    """The spec of one text field (a scalar Python ``str``)."""
    return specs.StringArray(shape=(), string_type=str, name=name)


class LanguageEnv(dm_env.Environment, abc.ABC):
    """Base of every text-in/text-out environment of rlds-lang.

    Subclasses implement ``_reset() -> Observation`` and ``_step(action: str) -> (Observation, reward,
    done)``, ``observation_spec`` (which must hold a ``text`` StringArray) and ``task_name``. The base
    handles dm_env's contract (stepping a fresh or finished environment resets it), seeding, and the
    text action spec.
    """

    #: short task id recorded in episode metadata, e.g. ``wordle``.
    task_name: str = ""

    def __init__(self, seed: int = 0):
        self._seed = int(seed)
        self._rng = np.random.default_rng(self._seed)
        self._needs_reset = True
        self._num_steps = 0

    # -- what subclasses provide -------------------------------------------------------------------
    @abc.abstractmethod
    def _reset(self) -> Observation:
        """Starts a new episode and returns its first observation."""

    @abc.abstractmethod
    def _step(self, action: str) -> tuple[Observation, float, bool]:
        """Applies a validated text action: (next observation, reward, episode over)."""

    def episode_metadata(self) -> dict[str, Any]:
        """Metadata describing the current episode (config, hidden state revealed at the end)."""
        return {}

    def step_metadata(self) -> dict[str, Any]:
        """Per-step metadata for the current step (empty by default)."""
        return {}

    # -- dm_env API --------------------------------------------------------------------------------
    def seed(self, seed: int) -> None:
        """Re-seeds the environment's randomness; the next ``reset`` starts from this seed."""
        self._seed = int(seed)
        self._rng = np.random.default_rng(self._seed)

    @property
    def current_seed(self) -> int:
        """The seed last given to the environment."""
        return self._seed

    def reset(self) -> dm_env.TimeStep:
        self._needs_reset = False
        self._num_steps = 0
        return dm_env.restart(self._reset())

    def step(self, action: Any) -> dm_env.TimeStep:
        if self._needs_reset:
            return self.reset()
        text = as_text(action, "action")
        observation, reward, done = self._step(text)
        self._num_steps += 1
        if done:
            self._needs_reset = True
            return dm_env.termination(np.float64(reward), observation)
        return dm_env.transition(np.float64(reward), observation)

    def action_spec(self) -> specs.StringArray:
        return text_spec("action")

    def reward_spec(self) -> specs.Array:
        return specs.Array(shape=(), dtype=np.float64, name="reward")

    def discount_spec(self) -> specs.BoundedArray:
        return specs.BoundedArray(shape=(), dtype=np.float64, minimum=0.0, maximum=1.0, name="discount")


def as_text(value: Any, field: str) -> str:
    """A Python ``str`` from a str, bytes (UTF-8) or 0-d numpy string/object array; errors name ``field``."""
    if isinstance(value, np.ndarray):
        if value.shape != ():
            raise InvalidActionError(f"{field} must be a scalar string, got an array of shape {value.shape}")
        value = value.item()
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidActionError(f"{field} is not valid UTF-8: {e}") from None
    if isinstance(value, str):
        return str(value)
    raise InvalidActionError(f"{field} must be text, got {type(value).__name__}: {value!r}")


@runtime_checkable
class Policy(Protocol):
    """Anything that picks the next text action from the observations so far.

    ``observations`` holds o_0..o_t and ``actions`` a_0..a_{t-1} (one fewer). ``reset(seed)`` is called
    before every episode so that a seeded policy is deterministic. ``name`` and ``params()`` are recorded
    in episode metadata.
    """

    name: str

    def reset(self, seed: int) -> None:
        """Prepares for a new episode with this seed."""

    def act(self, observations: Sequence[Observation], actions: Sequence[str]) -> str:
        """The next action."""

    def params(self) -> Mapping[str, Any]:
        """JSON-serialisable parameters that, with ``name``, identify this policy's behaviour."""


def policy_params_json(policy: Policy) -> str:
    """The policy's parameters as canonical JSON (sorted keys), as stored in episode metadata."""
    return json.dumps(dict(policy.params()), sort_keys=True, ensure_ascii=False)


@dataclasses.dataclass
class Episode:
    """One played episode in memory: observations o_0..o_T, actions a_0..a_{T-1}, rewards r_0..r_{T-1}."""

    observations: list[Observation]
    actions: list[str]
    rewards: list[float]
    discounts: list[float]
    metadata: dict[str, Any]

    @property
    def total_reward(self) -> float:
        """Undiscounted return."""
        return float(sum(self.rewards))

    @property
    def num_actions(self) -> int:
        """Number of actions taken."""
        return len(self.actions)


def run_episode(env: dm_env.Environment, policy: Policy, seed: int | None = None, max_steps: int = 10_000) -> Episode:
    """Plays one episode of ``policy`` in ``env`` (seeding both when ``seed`` is given).

    ``env`` may be wrapped (e.g. by EnvLogger); ``seed`` reaches the innermost ``LanguageEnv``.
    """
    if seed is not None:
        innermost(env).seed(seed)
        policy.reset(seed)
    timestep = env.reset()
    observations = [timestep.observation]
    actions: list[str] = []
    rewards: list[float] = []
    discounts: list[float] = []
    while not timestep.last():
        if len(actions) >= max_steps:
            raise RuntimeError(f"episode exceeded max_steps={max_steps} with policy {policy.name!r}")
        action = policy.act(observations, actions)
        timestep = env.step(action)
        actions.append(action)
        rewards.append(float(timestep.reward))
        discounts.append(float(timestep.discount))
        observations.append(timestep.observation)
    return Episode(observations, actions, rewards, discounts, dict(innermost(env).episode_metadata()))


def innermost(env: dm_env.Environment) -> LanguageEnv:
    """The ``LanguageEnv`` inside any wrappers (EnvLogger exposes it as ``_environment``)."""
    while not isinstance(env, LanguageEnv):
        inner = getattr(env, "_environment", None)
        if inner is None:
            raise TypeError(f"{type(env).__name__} wraps no rlds_lang LanguageEnv")
        env = inner
    return env
