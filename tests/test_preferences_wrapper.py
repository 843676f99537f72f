"""PreferenceEnv: dm_env conformance (text and array envs), clips to the sink, true vs predicted reward, reloads."""

from __future__ import annotations

import unittest

import dm_env
import numpy as np
import pytest
from dm_env import specs, test_utils

from rlds_lang.preferences.wrapper import PreferenceEnv, RewardPredictor
from rlds_lang.wordle.env import WordleEnv


class ArrayEnv(dm_env.Environment):
    """A non-text toy: a float32 position moved by an integer action, reward = -|position|, 5 steps."""

    def __init__(self):
        self._t, self._pos = 5, np.zeros(2, np.float32)  # stepping a fresh environment resets it

    def reset(self):
        self._t, self._pos = 0, np.zeros(2, np.float32)
        return dm_env.restart(self._pos.copy())

    def step(self, action):
        if self._t >= 5:
            return self.reset()
        self._t += 1
        self._pos += np.float32(int(action) - 1)
        reward = np.float32(-np.abs(self._pos).sum())
        if self._t == 5:
            return dm_env.termination(reward, self._pos.copy())
        return dm_env.transition(reward, self._pos.copy())

    def observation_spec(self):
        return specs.Array((2,), np.float32, name="position")

    def action_spec(self):
        return specs.DiscreteArray(3, name="move")

    def reward_spec(self):
        return specs.Array((), np.float32, name="reward")


class FakePredictor:
    """A predictor whose reward is ``action - observation[0]`` and whose training steps and epochs the test sets."""

    def __init__(self, training_steps: int = 0, training_epochs: int = 0):
        self.training_steps, self.training_epochs, self.reloads, self.seen = training_steps, training_epochs, 0, []

    def predict_step(self, observation, action) -> float:
        self.seen.append((np.array(observation), int(action)))
        return float(int(action) - observation[0])

    def reload(self) -> bool:
        self.reloads += 1
        return True


class WrappedArrayConformanceTest(test_utils.EnvironmentTestMixin, unittest.TestCase):
    """dm_env's conformance suite on the wrapper around a non-text env, serving the predicted reward."""

    def make_object_under_test(self):
        env = PreferenceEnv(ArrayEnv(), clip_sink=[].append, predictor=FakePredictor(), segment_length=3,
                            reload_every=2)
        env.use_predicted_reward()
        return env


class WrappedWordleConformanceTest(test_utils.EnvironmentTestMixin, unittest.TestCase):
    """dm_env's conformance suite on the wrapper around the text env WordleEnv."""

    def make_object_under_test(self):
        return PreferenceEnv(WordleEnv(seed=3), clip_sink=[].append, segment_length=4)

    def make_action_sequence(self):
        yield from ["crane", "slate", "moist", "abide", "fight", "zesty"] * 4

    def make_action(self):
        return "crane"


def test_clips_reach_the_sink_with_true_rewards_while_the_predicted_one_is_served():
    clips = []
    predictor = FakePredictor(training_steps=0)
    env = PreferenceEnv(ArrayEnv(), clip_sink=clips.append, predictor=predictor, segment_length=3,
                        n_initial_training_steps=10, reload_every=4, episode_prefix="toy")
    assert isinstance(predictor, RewardPredictor) and env.reward_source == "true"
    env.reset()
    true_rewards = [float(env.step(2).reward) for _ in range(5)]
    assert true_rewards == [-2.0, -4.0, -6.0, -8.0, -10.0] and not env.using_predicted_reward
    predictor.training_steps = 10  # the trainer reached n_initial_training_steps: automatic switch
    assert env.reward_source == "predicted"
    first = env.step(0)
    assert first.first() and first.reward is None  # stepping a finished episode restarts it
    served = [env.step(0) for _ in range(5)]
    assert [float(t.reward) for t in served] == [0.0, 1.0, 2.0, 3.0, 4.0]  # action - o_t[0]
    assert all(t.reward.dtype == np.float32 for t in served)
    assert [c.clip_id for c in clips] == ["toy-00000000:0", "toy-00000000:3", "toy-00000001:0", "toy-00000001:3"]
    assert clips[1].rewards == [-8.0, -10.0, 0.0] and clips[1].padding == [False, False, True]
    assert clips[2].rewards == [-2.0, -4.0, -6.0]  # clips keep the true reward
    np.testing.assert_array_equal(clips[3].observations[-1], np.full(2, -5.0, np.float32))
    assert predictor.reloads == 2 and env.total_steps == 10 and env.clips_emitted == 4
    env.use_true_reward()
    env.reset()
    assert env.reward_source == "true" and float(env.step(1).reward) == 0.0


def test_the_switch_to_the_predicted_reward_counts_epochs_over_the_database_by_default():
    predictor = FakePredictor(training_steps=10_000, training_epochs=49)  # many mini-batches, 49 epochs
    env = PreferenceEnv(ArrayEnv(), predictor=predictor, collect=False)
    assert env.reward_source == "true"
    predictor.training_epochs = 50  # the reference's n_initial_training_steps = 50 epochs
    assert env.reward_source == "predicted"
    by_steps = PreferenceEnv(ArrayEnv(), predictor=FakePredictor(training_steps=5, training_epochs=0),
                             n_initial_training_steps=5, collect=False)
    assert by_steps.reward_source == "predicted"  # counting optimizer steps when asked to


def test_forcing_the_predicted_reward_needs_a_predictor_and_a_saved_model_can_be_used_at_once():
    with pytest.raises(RuntimeError, match="no reward predictor"):
        PreferenceEnv(ArrayEnv()).use_predicted_reward()
    env = PreferenceEnv(ArrayEnv(), predictor=FakePredictor(), n_initial_training_steps=0, collect=False)
    env.reset()
    assert env.using_predicted_reward and float(env.step(2).reward) == 2.0 and env.clips_emitted == 0


def test_text_env_clips_use_obs_transform_and_wrapper_forwards_env_methods():
    clips = []
    env = PreferenceEnv(WordleEnv(seed=0), clip_sink=clips.append, obs_transform=lambda o: o["text"],
                        segment_length=40)
    env.set_next_answer("abide")  # forwarded to WordleEnv
    env.reset()
    env.step("speed")
    assert env.step("abide").last()
    (clip,) = clips
    assert clip.observations[:3] == ["", "⬛⬛🟨⬛🟨", "🟩🟩🟩🟩🟩"] and clip.actions[:2] == ["speed", "abide"]
    assert clip.rewards[:2] == [-1.0, 0.0] and clip.padding[:3] == [False, False, True]


def test_streamed_clips_equal_the_clips_of_the_recorded_episodes(tmp_path):
    """The wrapper recorded by loggers.record: its streamed clips match clips_from_episode of the logs."""
    from loggers import read_episodes, record
    from rlds_lang.preferences.segments import clips_from_episode
    from rlds_lang.wordle.policies import make_policy

    streamed = []
    env = PreferenceEnv(WordleEnv(seed=0), clip_sink=streamed.append, segment_length=3, episode_prefix="run")
    record(env, make_policy("random_mixture", prob_smart=0.3), 4, tmp_path / "logs", run_name="run", progress=False)
    recorded = [c for e in read_episodes(tmp_path / "logs") for c in clips_from_episode(e, segment_length=3)]
    assert [c.clip_id for c in streamed] == [c.clip_id for c in recorded] and len(streamed) >= 8
    for a, b in zip(streamed, recorded):
        assert (a.actions, a.rewards, a.padding, a.start, a.stop) == (b.actions, b.rewards, b.padding, b.start, b.stop)
        assert [o["text"] for o in a.observations] == [o["text"] for o in b.observations]
        assert all(np.array_equal(x["feedback"], y["feedback"]) for x, y in zip(a.observations, b.observations))


def test_segmenter_observe_takes_dm_env_timesteps():
    from rlds_lang.preferences.segments import Segmenter

    segmenter = Segmenter(segment_length=2)
    assert segmenter.observe(dm_env.restart("o0"), episode_id="x") == []
    assert segmenter.observe(dm_env.transition(1.0, "o1"), "a0") == []
    (clip,) = segmenter.observe(dm_env.termination(2.0, "o2"), "a1")
    assert (clip.clip_id, clip.observations, clip.actions, clip.rewards) == ("x:0", ["o0", "o1"], ["a0", "a1"],
                                                                             [1.0, 2.0])
