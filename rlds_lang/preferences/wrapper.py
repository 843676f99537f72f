"""A ``dm_env.Environment`` wrapper that collects clips for preference labelling and can hand out a learned reward.

``PreferenceEnv`` wraps any ``dm_env.Environment`` (text or arrays): every transition feeds a ``Segmenter``
whose clips go to ``clip_sink`` (a callback: a queue's ``put_nowait``, a list's ``append``...), and each
step's reward is either the environment's or the one a ``RewardPredictor`` predicts for ``(o_t, a_t)``:

- ``use_true_reward()`` / ``use_predicted_reward()`` force one of them; ``reward_source`` (``"true"`` or
  ``"predicted"``) and ``using_predicted_reward`` say which is active.
- Until forced, the wrapper switches to the predicted reward by itself once the predictor reports
  ``training_epochs >= n_initial_training_epochs`` (the anchor's ``n_initial_training_steps``, which are
  epochs over the preference database: default 50, ``rlds_lang.preferences.defaults``; 0 = use a saved
  reward model from the start). Given ``n_initial_training_steps`` instead, it counts optimizer steps
  (mini-batches, ``training_steps``).
- Every ``reload_every`` environment steps it calls ``predictor.reload()``, which re-reads a checkpoint
  that a reward trainer in another process may have replaced.

The predicted reward is ``r_hat(obs_transform(o_t), a_t)``, the same view of the observation the clips
hold, cast to the environment's reward spec; the true reward always reaches the clips (the synthetic
labeller needs it). The core never imports a trainer: the predictor is injected.

Example::

    env = PreferenceEnv(WordleEnv(), clip_sink=clips.append, predictor=my_predictor)
    timestep = env.reset()
    timestep = env.step("crane")     # env.reward_source == "true" until the predictor is trained enough
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import dm_env
import numpy as np

from rlds_lang.preferences.defaults import INITIAL_TRAINING_EPOCHS, SEGMENT_LENGTH
from rlds_lang.preferences.segments import ClipSink, ObsTransform, Segmenter


@runtime_checkable
class RewardPredictor(Protocol):
    """A learned per-step reward, e.g. a reward-model ensemble behind a checkpoint folder."""

    #: reward-training optimizer steps (mini-batches) behind the weights in use (0 when untrained).
    training_steps: int
    #: whole reward-training epochs over the preference database behind the weights in use (0 when untrained).
    training_epochs: int

    def predict_step(self, observation: Any, action: Any) -> float:
        """``r_hat(o, a)`` for one step (``observation`` already transformed by ``obs_transform``)."""

    def reload(self) -> bool:
        """Re-reads the checkpoint if it changed on disk; ``True`` when new weights were loaded."""


class PreferenceEnv(dm_env.Environment):
    """Collects clips and optionally replaces the reward (module docstring).

    Args:
      env: the wrapped environment.
      clip_sink: receives each clip (``None``: clips are only counted).
      predictor: the learned reward (``None``: the true reward only).
      segment_length, obs_transform, span_episodes: of the ``Segmenter``.
      n_initial_training_epochs: the predictor's training epochs that switch on the predicted reward.
      n_initial_training_steps: if given, the predictor's optimizer steps that switch it on instead.
      reload_every: environment steps between ``predictor.reload()`` calls (0 = never).
      episode_prefix: prefix of the wrapper's episode ids (``{prefix}-{n:08d}``; clip ids build on them).
      collect: feed the segmenter (``False``: only the reward is served, e.g. with a saved reward model).
    """

    def __init__(self, env: dm_env.Environment, clip_sink: ClipSink | None = None,
                 predictor: RewardPredictor | None = None, *, segment_length: int = SEGMENT_LENGTH,
                 obs_transform: ObsTransform | None = None, span_episodes: bool = False,
                 n_initial_training_epochs: int = INITIAL_TRAINING_EPOCHS, n_initial_training_steps: int | None = None,
                 reload_every: int = 1000, episode_prefix: str = "episode", collect: bool = True):
        self._env = env
        self._environment = env  # the name rlds_lang.env.innermost and EnvLogger follow
        self.predictor = predictor
        self.segmenter = Segmenter(segment_length, obs_transform, span_episodes, clip_sink, episode_prefix)
        self.n_initial_training_epochs = int(n_initial_training_epochs)
        self.n_initial_training_steps = None if n_initial_training_steps is None else int(n_initial_training_steps)
        self.reload_every = int(reload_every)
        self.collect = collect
        self.total_steps = 0
        self._forced: str | None = None
        self._observation: Any = None

    # -- reward source -----------------------------------------------------------------------------
    def use_predicted_reward(self) -> None:
        """Serves the predicted reward from now on (needs a predictor)."""
        if self.predictor is None:
            raise RuntimeError("use_predicted_reward: this PreferenceEnv has no reward predictor")
        self._forced = "predicted"

    def use_true_reward(self) -> None:
        """Serves the environment's reward from now on (until ``use_predicted_reward``)."""
        self._forced = "true"

    @property
    def reward_source(self) -> str:
        """``"predicted"`` or ``"true"``: the reward the next step returns."""
        if self._forced is not None:
            return self._forced
        if self.predictor is None:
            return "true"
        if self.n_initial_training_steps is not None:
            trained = int(self.predictor.training_steps) >= self.n_initial_training_steps
        else:
            trained = int(self.predictor.training_epochs) >= self.n_initial_training_epochs
        return "predicted" if trained else "true"

    @property
    def using_predicted_reward(self) -> bool:
        """Whether steps return the predicted reward."""
        return self.reward_source == "predicted"

    @property
    def clips_emitted(self) -> int:
        """Clips the segmenter has emitted so far."""
        return self.segmenter.clips_emitted

    # -- dm_env API --------------------------------------------------------------------------------
    def reset(self) -> dm_env.TimeStep:
        """Resets the wrapped environment and starts a new episode in the segmenter."""
        timestep = self._env.reset()
        self._begin(timestep)
        return timestep

    def _begin(self, timestep: dm_env.TimeStep) -> None:
        if self.collect:
            self.segmenter.start_episode(timestep.observation)
            self._observation = self.segmenter.current_observation
        else:
            self._observation = self.segmenter.transform(timestep.observation)

    def step(self, action: Any) -> dm_env.TimeStep:
        """Steps the wrapped environment, feeds the segmenter and serves the active reward (module docstring)."""
        timestep = self._env.step(action)
        if timestep.first():  # dm_env: stepping a finished environment starts a new episode
            self._begin(timestep)
            return timestep
        self.total_steps += 1
        if self.predictor is not None and self.reload_every and self.total_steps % self.reload_every == 0:
            self.predictor.reload()
        previous = self._observation
        if self.collect:
            self.segmenter.step(action, timestep.reward, timestep.observation, timestep.last())
            self._observation = self.segmenter.current_observation
        else:
            self._observation = self.segmenter.transform(timestep.observation)
        if self.using_predicted_reward:
            assert self.predictor is not None
            predicted = self.predictor.predict_step(previous, action)
            dtype = getattr(self._env.reward_spec(), "dtype", np.float64)
            timestep = timestep._replace(reward=np.asarray(predicted, dtype=dtype).reshape(np.shape(timestep.reward)))
        return timestep

    def flush(self) -> None:
        """Emits the partial segment of the episode in progress (padded), e.g. before closing."""
        if self.collect:
            self.segmenter.flush()

    def observation_spec(self) -> Any:
        """The wrapped environment's observation spec (observations pass through unchanged)."""
        return self._env.observation_spec()

    def action_spec(self) -> Any:
        """The wrapped environment's action spec."""
        return self._env.action_spec()

    def reward_spec(self) -> Any:
        """The wrapped environment's reward spec (a predicted reward is cast to it)."""
        return self._env.reward_spec()

    def discount_spec(self) -> Any:
        """The wrapped environment's discount spec."""
        return self._env.discount_spec()

    def close(self) -> None:
        """Closes the wrapped environment."""
        self._env.close()

    def __getattr__(self, name: str) -> Any:
        # Anything else (episode_metadata, seed, task_name...) is the wrapped environment's.
        if name.startswith("__") or name == "_env":
            raise AttributeError(name)
        return getattr(self._env, name)


__all__ = ["PreferenceEnv", "RewardPredictor"]
