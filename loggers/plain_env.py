"""Recording any ``dm_env.Environment``: the thin adapter ``loggers.record`` puts around an environment that is not
a ``rlds_lang.env.LanguageEnv``, and around a policy that is a plain function.

``as_language_env(env)`` returns a ``LanguageEnv`` unchanged; any other ``dm_env.Environment`` is wrapped in
``PlainEnv``, which passes ``reset``/``step`` and the four specs through untouched (so whatever the environment
emits is what EnvLogger records: text byte for byte, numbers, arrays, dicts of them) and gives ``record`` what
it needs from a ``LanguageEnv``: a task name (the environment's ``task_name`` attribute if it has one, else its
class name in snake case), seeding (the environment's own ``seed(seed)`` when it has one) and episode and step
metadata (its own ``episode_metadata()``/``step_metadata()`` when it has them, else none). The specs are checked
when it is made (``rlds_lang.spec_schema``): a field no dataset can hold is an error naming it, before anything
is written. ``LanguageEnv`` remains the richer path for the project's own tasks.

``as_policy(policy)`` returns a ``rlds_lang.env.Policy`` unchanged and wraps a function
``act(observations, actions) -> action`` as one (named after the function, no parameters).

Example::

    from loggers import record

    record(MyDmEnv(), lambda observations, actions: observations[-1], episodes=10, data_dir="my_logs")
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping, Sequence

import dm_env

from rlds_lang.env import LanguageEnv, Policy
from rlds_lang.spec_schema import describe_environment


def task_name_of(env: dm_env.Environment) -> str:
    """The task name recorded for ``env``: its ``task_name`` attribute, else its class name in snake case."""
    name = getattr(env, "task_name", "")
    if isinstance(name, str) and name:
        return name
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", type(env).__name__).lower()


class PlainEnv(LanguageEnv):
    """A ``dm_env.Environment`` seen as a ``LanguageEnv`` by ``loggers.record`` (see the module docstring).

    Args:
      env: the environment; its timesteps and specs pass through unchanged.
      task: the task name recorded in the metadata (default: ``task_name_of(env)``).
    """

    def __init__(self, env: dm_env.Environment, task: str | None = None):
        super().__init__(seed=0)
        if not isinstance(env, dm_env.Environment):
            raise TypeError(f"record needs a dm_env.Environment, got {type(env).__name__}")
        self.environment = env
        self.task_name = task or task_name_of(env)
        self.description = describe_environment(env)  # raises UnsupportedSpecError naming the field

    def _reset(self) -> Any:
        raise NotImplementedError("PlainEnv passes reset() through to its environment")

    def _step(self, action: str) -> Any:
        raise NotImplementedError("PlainEnv passes step() through to its environment")

    def seed(self, seed: int) -> None:
        """Records the seed and, when the environment has a ``seed`` method, seeds it."""
        super().seed(seed)
        own = getattr(self.environment, "seed", None)
        if callable(own):
            own(seed)

    def reset(self) -> dm_env.TimeStep:
        return self.environment.reset()

    def step(self, action: Any) -> dm_env.TimeStep:
        return self.environment.step(action)

    def observation_spec(self) -> Any:
        return self.environment.observation_spec()

    def action_spec(self) -> Any:
        return self.environment.action_spec()

    def reward_spec(self) -> Any:
        return self.environment.reward_spec()

    def discount_spec(self) -> Any:
        return self.environment.discount_spec()

    def episode_metadata(self) -> dict[str, Any]:
        """The environment's own ``episode_metadata()``, if it has one."""
        return _own_metadata(self.environment, "episode_metadata")

    def step_metadata(self) -> dict[str, Any]:
        """The environment's own ``step_metadata()``, if it has one."""
        return _own_metadata(self.environment, "step_metadata")

    def close(self) -> None:
        self.environment.close()


def _own_metadata(env: Any, method: str) -> dict[str, Any]:
    own = getattr(env, method, None)
    if not callable(own):
        return {}
    found = own()
    if found is None:
        return {}
    if not isinstance(found, Mapping):
        raise TypeError(f"{type(env).__name__}.{method}() must return a dict, got {type(found).__name__}")
    return dict(found)


def as_language_env(env: dm_env.Environment) -> LanguageEnv:
    """``env`` itself if it is a ``LanguageEnv`` (or already adapted), else ``PlainEnv(env)``."""
    return env if isinstance(env, LanguageEnv) else PlainEnv(env)


class FunctionPolicy:
    """A function ``act(observations, actions) -> action`` as a ``rlds_lang.env.Policy`` (named after it)."""

    def __init__(self, act: Callable[[Sequence[Any], Sequence[Any]], Any], name: str | None = None):
        self._act = act
        self.name = name or getattr(act, "__name__", type(act).__name__)

    def reset(self, seed: int) -> None:
        """A function keeps no state between episodes."""

    def act(self, observations: Sequence[Any], actions: Sequence[Any]) -> Any:
        """The function's action."""
        return self._act(observations, actions)

    def params(self) -> Mapping[str, Any]:
        """No parameters."""
        return {}


def as_policy(policy: Policy | Callable[[Sequence[Any], Sequence[Any]], Any]) -> Policy:
    """``policy`` itself if it has ``act``, ``reset``, ``params`` and ``name``, else ``FunctionPolicy(policy)``
    for a callable; anything else is a ``TypeError``."""
    if all(hasattr(policy, attr) for attr in ("act", "reset", "params", "name")):
        return policy
    if callable(policy):
        return FunctionPolicy(policy)
    raise TypeError(f"a policy needs act(observations, actions), reset(seed), params() and name, or is a function "
                    f"act(observations, actions); got {type(policy).__name__}")


__all__ = ["FunctionPolicy", "PlainEnv", "as_language_env", "as_policy", "task_name_of"]
