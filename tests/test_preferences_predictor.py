"""CheckpointRewardPredictor: the wrapper serves a trained reward model's reward, and picks up new checkpoints."""

from __future__ import annotations

import dataclasses

import dm_env
import numpy as np
import pytest
from dm_env import specs

from rlds_lang.preferences.wrapper import PreferenceEnv
from tests.reward_fixtures import judgements, vector_clip

torch = pytest.importorskip("torch", reason="the reward model needs torch (installed by setup.cfg)")

from trainers.algorithms.reward.model import RewardModelConfig  # noqa: E402
from trainers.algorithms.reward.predictor import CheckpointRewardPredictor  # noqa: E402
from trainers.algorithms.reward.trainer import train_reward  # noqa: E402


class VectorEnv(dm_env.Environment):
    """Random float32[3] observations, a float32[1] action, true reward ``observation[0] + action`` (as the
    fixtures' ``vector_clip``), 8 steps per episode."""

    def __init__(self, seed: int = 0):
        self._rng, self._t, self._obs = np.random.default_rng(seed), 8, None

    def reset(self):
        self._t, self._obs = 0, self._rng.normal(size=3).astype(np.float32)
        return dm_env.restart(self._obs)

    def step(self, action):
        if self._t >= 8:
            return self.reset()
        reward = float(self._obs[0] + np.asarray(action)[0])
        self._t, self._obs = self._t + 1, self._rng.normal(size=3).astype(np.float32)
        return (dm_env.termination if self._t == 8 else dm_env.transition)(np.float64(reward), self._obs)

    def observation_spec(self):
        return specs.Array((3,), np.float32)

    def action_spec(self):
        return specs.Array((1,), np.float32)


def test_the_wrapper_serves_a_saved_reward_model_and_reloads_new_checkpoints(tmp_path):
    torch.set_num_threads(1)
    config = RewardModelConfig(out=str(tmp_path / "reward"), steps=40, members=2, lr=3e-3, log_every=20)
    train, val = judgements(vector_clip, 150, seed=1), judgements(vector_clip, 30, seed=2, prefix="v")
    checkpoint = tmp_path / "reward" / "checkpoint"
    missing = CheckpointRewardPredictor(checkpoint)
    assert missing.training_steps == 0 and not missing.reload()
    with pytest.raises(RuntimeError, match="no reward-model checkpoint"):
        missing.predict_step(np.zeros(3, np.float32), np.zeros(1, np.float32))
    train_reward(config, train, val, progress=False)

    predictor = CheckpointRewardPredictor(checkpoint)
    twin = CheckpointRewardPredictor(checkpoint)  # the same model, queried directly
    assert predictor.training_steps == 40 and not predictor.reload()
    env = PreferenceEnv(VectorEnv(), predictor=predictor, n_initial_training_steps=40, collect=False)
    timestep = env.reset()
    assert env.using_predicted_reward
    served, true = [], []
    rng = np.random.default_rng(0)
    for _ in range(200):
        if timestep.last():
            timestep = env.reset()
        action = rng.normal(size=1).astype(np.float32)
        expected = twin.predict_step(timestep.observation, action)
        true.append(float(timestep.observation[0] + action[0]))
        timestep = env.step(action)
        served.append(float(timestep.reward))
        assert served[-1] == pytest.approx(expected)
    assert np.corrcoef(served, true)[0, 1] > 0.8  # the learned reward tracks the true one

    missing.reload()  # a checkpoint appeared where there was none
    assert missing.training_steps == 40
    train_reward(dataclasses.replace(config, steps=60), train, val, progress=False)  # the trainer saves again
    assert predictor.reload() and predictor.training_steps == 60 and predictor.reloads == 2


def test_a_failed_reload_is_counted_logged_and_raises_when_it_persists(tmp_path, caplog):
    torch.set_num_threads(1)
    config = RewardModelConfig(out=str(tmp_path / "reward"), steps=2, members=2, log_every=1)
    train, val = judgements(vector_clip, 20, seed=1), judgements(vector_clip, 8, seed=2, prefix="v")
    train_reward(config, train, val, progress=False)
    checkpoint = tmp_path / "reward" / "checkpoint"
    predictor = CheckpointRewardPredictor(checkpoint, max_failed_reloads=2)
    assert predictor.training_steps == 2
    train_reward(dataclasses.replace(config, steps=3), train, val, progress=False)  # a newer checkpoint ...
    weights = checkpoint / "weights.pt"
    weights.rename(tmp_path / "weights.pt")  # ... caught without its weights (as between two renames: an OSError)
    with caplog.at_level("WARNING", logger="trainers.algorithms.reward.predictor"):
        assert predictor.reload() is False
    assert predictor.failed_reloads == 1 and predictor.training_steps == 2  # the old weights, but not silently
    assert "reload failed" in caplog.text and "weights.pt" in predictor.last_reload_error
    with pytest.raises(RuntimeError, match="could not be reloaded 2 times in a row"):
        predictor.reload()
    (tmp_path / "weights.pt").rename(weights)
    predictor.failed_in_a_row = 0
    assert predictor.reload() and predictor.training_steps == 3 and predictor.failed_in_a_row == 0
