"""Recording an environment stepped by requests (inverted control): a person, a server, a remote client.

``loggers.record`` owns the loop (a policy acts); here the caller owns it: ``LiveEpisode`` wraps one
environment in EnvLogger for exactly one episode, in its own log directory, and the caller calls
``reset`` / ``step`` as the requests come. The episode's metadata follows ``loggers.metadata`` (``episode_id``,
``task``, ``policy`` -- ``human:<annotator>`` for a person --, ``policy_params``, ``seed``, the environment's
own metadata) plus recorder extras (annotator, session id, task config...); each step may carry extra
step metadata (e.g. client timing). The log directory is closed (indexed, durable) the moment the
episode ends, so a killed process loses at most the episode in progress.

``rewrite_episode`` writes an RLDS episode read back by ``loggers.reader`` into a new log directory, with
its metadata and step metadata (plus optional extras), replaying it through the same path: how
annotated versions and exports are made without editing the original log.

Example::

    from loggers.live import LiveEpisode
    from rlds_lang.wordle.env import WordleEnv

    env = WordleEnv()
    env.set_next_answer("crane")
    with LiveEpisode(env, "/tmp/human/game_00000", episode_id="human-s1-00000", policy="human:ann",
                     policy_params="{}", seed=0, step_keys={"client_ms": 0}) as live:
        live.reset()
        timestep = live.step("crane", {"client_ms": 1834})
    assert timestep.last()
"""

from __future__ import annotations

import os
from typing import Any, Mapping

import dm_env
import envlogger
import numpy as np

from loggers.metadata import episode_metadata
from loggers.writer import DurableRiegeliWriter
from rlds_lang.env import LanguageEnv
from rlds_lang.replay import ReplayEnv, ScriptedEpisode
from rlds_lang.schema import STEP_KEYS


class EpisodeClosedError(RuntimeError):
    """A step was requested after the episode ended or the recorder was closed."""


class LiveEpisode:
    """One episode of ``env`` logged to ``log_dir`` (new) with EnvLogger, stepped by the caller.

    Args:
      env: the (unwrapped) environment, already configured (e.g. ``set_next_answer``).
      log_dir: a new folder for this episode's log (must not exist or be empty).
      episode_id, policy, policy_params, seed: the common episode metadata (``loggers.metadata``);
        ``env`` is seeded with ``seed``.
      extra_metadata: recorder extras added to the episode metadata.
      dataset_metadata: dataset-level metadata stored beside the specs.
      step_keys: default values of the extra step metadata; every step carries exactly these keys
        (values given to ``reset``/``step`` override them), so all steps have one structure.
    """

    def __init__(self, env: LanguageEnv, log_dir: str | os.PathLike, *, episode_id: str, policy: str,
                 policy_params: str, seed: int, extra_metadata: Mapping[str, Any] | None = None,
                 dataset_metadata: Mapping[str, Any] | None = None, step_keys: Mapping[str, Any] | None = None):
        log_dir = os.fspath(log_dir)
        if os.path.isdir(log_dir) and os.listdir(log_dir):
            raise FileExistsError(f"{log_dir} is not empty: an episode is recorded into a new folder")
        os.makedirs(log_dir, exist_ok=True)
        self.env, self.log_dir, self.episode_id = env, log_dir, episode_id
        self._defaults = dict(step_keys or {})
        self._pending: dict[str, Any] = dict(self._defaults)
        common = dict(episode_id=episode_id, policy=policy, policy_params=policy_params, seed=int(seed),
                      extra=dict(extra_metadata or {}))
        env.seed(int(seed))
        self._logger = envlogger.EnvLogger(
            env, data_directory=log_dir, backend=DurableRiegeliWriter,
            episode_fn=lambda ts, action, e: episode_metadata(e, **common) if ts.last() else None,
            step_fn=self._step_fn, metadata=dict(dataset_metadata or {}))
        self.started = False
        self.closed = False
        self.last: dm_env.TimeStep | None = None

    def _step_fn(self, timestep: dm_env.TimeStep, action: Any, env: LanguageEnv) -> dict[str, Any] | None:
        meta = {**dict(env.step_metadata() or {}), **self._pending}
        return meta or None

    def _with(self, step_metadata: Mapping[str, Any] | None) -> None:
        unknown = sorted(set(step_metadata or {}) - set(self._defaults))
        if unknown:
            raise KeyError(f"step metadata {unknown} not declared in step_keys {sorted(self._defaults)}")
        self._pending = {**self._defaults, **dict(step_metadata or {})}

    def reset(self, step_metadata: Mapping[str, Any] | None = None) -> dm_env.TimeStep:
        """Starts the episode (once) and returns its first timestep."""
        if self.started or self.closed:
            raise EpisodeClosedError(f"{self.episode_id}: the episode was already started")
        self._with(step_metadata)
        self.started = True
        self.last = self._logger.reset()
        return self.last

    def step(self, action: Any, step_metadata: Mapping[str, Any] | None = None) -> dm_env.TimeStep:
        """Applies ``action`` (validate it first: an action the env rejects raises and is not logged).

        When the episode ends, the log is closed and durable before this returns.
        """
        if not self.started or self.closed:
            raise EpisodeClosedError(f"{self.episode_id}: no episode in progress")
        self._with(step_metadata)
        self.last = self._logger.step(action)
        if self.last.last():
            self.close()
        return self.last

    def close(self) -> None:
        """Closes the log (an unfinished episode stays unfinished: readers skip it)."""
        if not self.closed:
            self.closed = True
            self._logger.close()

    def __enter__(self) -> "LiveEpisode":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def split_step(step: Mapping[str, Any]) -> dict[str, Any]:
    """The step metadata of an RLDS step dict (every key beyond the RLDS step keys)."""
    return {k: v for k, v in step.items() if k not in STEP_KEYS}


def rewrite_episode(episode: Mapping[str, Any], log_dir: str | os.PathLike, *,
                    extra_metadata: Mapping[str, Any] | None = None,
                    extra_step_metadata: list[Mapping[str, Any]] | None = None) -> str:
    """Writes ``episode`` (as ``loggers.reader`` yields it) to the new folder ``log_dir``; returns the folder.

    The episode keeps its metadata and step metadata, with ``extra_metadata`` added (or replaced) and
    ``extra_step_metadata[i]`` added to step ``i`` (each must have the same keys).
    """
    steps = list(episode["steps"])
    meta = {k: v for k, v in episode.items() if k != "steps"}
    meta.update(extra_metadata or {})
    per_step = [split_step(s) for s in steps]
    if extra_step_metadata is not None:
        if len(extra_step_metadata) != len(steps):
            raise ValueError(f"{len(extra_step_metadata)} extra step metadata for {len(steps)} steps")
        per_step = [{**a, **dict(b)} for a, b in zip(per_step, extra_step_metadata)]
    scripted = ScriptedEpisode(observations=[s["observation"] for s in steps],
                               actions=[s["action"] for s in steps[:-1]],
                               rewards=[float(s["reward"]) for s in steps[:-1]], metadata=meta,
                               truncated=not bool(steps[-1]["is_terminal"]))
    env = ReplayEnv([scripted], task_name=str(meta.get("task", "replay")))
    keys = {k: v for k, v in per_step[0].items()}
    # ReplayEnv's metadata is the episode's own: the common fields below are overwritten by it.
    with LiveEpisode(env, log_dir, episode_id=str(meta.get("episode_id", "")), policy=str(meta.get("policy", "")),
                     policy_params=str(meta.get("policy_params", "{}")), seed=int(np.asarray(meta.get("seed", 0))),
                     step_keys=keys) as live:
        live.reset(per_step[0])
        for i, action in enumerate(scripted.actions):
            live.step(action, per_step[i + 1])
    return os.fspath(log_dir)


__all__ = ["EpisodeClosedError", "LiveEpisode", "rewrite_episode", "split_step"]
