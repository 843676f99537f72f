"""The episode and step metadata conventions every recorder of rlds-lang follows.

An episode's metadata holds ``episode_id``, ``task``, ``policy`` (a policy's name, or ``human:<annotator>``
for a person), ``policy_params`` (canonical JSON), ``seed`` and then the environment's own
``episode_metadata()`` (configuration, hidden state), plus any recorder-specific extras. A step's
metadata is the environment's ``step_metadata()`` plus extras. ``loggers.record`` (a policy plays) and
``loggers.live`` (requests step the environment) both build their metadata here.
"""

from __future__ import annotations

from typing import Any, Mapping

import dm_env
import numpy as np

from rlds_lang.env import LanguageEnv, innermost


def episode_metadata(env: LanguageEnv, *, episode_id: str, policy: str, policy_params: str, seed: int,
                     extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The metadata of the episode ``env`` is playing (common fields, then the env's, then ``extra``)."""
    meta: dict[str, Any] = {
        "episode_id": episode_id,
        "task": env.task_name,
        "policy": policy,
        "policy_params": policy_params,
        "seed": np.int64(seed),
    }
    meta.update(env.episode_metadata())
    meta.update(extra or {})
    return meta


def env_step_metadata(timestep: dm_env.TimeStep, action: Any, env: dm_env.Environment) -> dict[str, Any] | None:
    """An EnvLogger ``step_fn``: the (innermost) environment's ``step_metadata()``, ``None`` when empty."""
    meta = innermost(env).step_metadata()
    return dict(meta) if meta else None


__all__ = ["env_step_metadata", "episode_metadata"]
