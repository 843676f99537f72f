"""Segments: fixed-length clips, padding at episode ends, no spanning unless asked, obs_transform, recorded episodes."""

from __future__ import annotations

import numpy as np
import pytest

from rlds_lang.preferences.segments import Segmenter, clips_from_episode


def _feed(segmenter: Segmenter, episode_id: str, length: int, first_reward: float = 1.0):
    """One episode of ``length`` steps: observations ``{episode_id}/o{t}``, actions ``a{t}``, reward t + first_reward."""
    clips = segmenter.start_episode(f"{episode_id}/o0", episode_id)
    for t in range(length):
        clips += segmenter.step(f"a{t}", t + first_reward, f"{episode_id}/o{t + 1}", last=t == length - 1)
    return clips


def test_segments_have_segment_length_and_the_last_one_is_padded_with_the_last_observation():
    sunk = []
    segmenter = Segmenter(segment_length=4, sink=sunk.append)
    clips = _feed(segmenter, "ep", 10)
    assert [c.clip_id for c in clips] == ["ep:0", "ep:4", "ep:8"] and sunk == clips
    assert all(len(c) == 4 for c in clips)
    first, last = clips[0], clips[-1]
    assert first.observations == ["ep/o0", "ep/o1", "ep/o2", "ep/o3"] and first.actions == ["a0", "a1", "a2", "a3"]
    assert first.rewards == [1.0, 2.0, 3.0, 4.0] and first.padding == [False] * 4 and (first.start, first.stop) == (0, 4)
    assert (last.start, last.stop) == (8, 10) and last.padding == [False, False, True, True]
    assert last.observations == ["ep/o8", "ep/o9", "ep/o10", "ep/o10"]  # padded with the final observation
    assert last.actions == ["a8", "a9", "", ""] and last.rewards == [9.0, 10.0, 0.0, 0.0]
    assert last.true_return == 19.0


def test_a_segment_never_spans_two_episodes_unless_asked():
    apart = Segmenter(segment_length=4)
    clips = _feed(apart, "a", 3) + _feed(apart, "b", 3)
    assert [c.clip_id for c in clips] == ["a:0", "b:0"] and all(c.padding[-1] for c in clips)
    assert all(len({o.split("/")[0] for o in c.observations}) == 1 for c in clips)

    spanning = Segmenter(segment_length=4, span_episodes=True)
    clips = _feed(spanning, "a", 3) + _feed(spanning, "b", 3) + spanning.flush()
    assert [c.clip_id for c in clips] == ["a:0", "b:1"]
    assert clips[0].observations == ["a/o0", "a/o1", "a/o2", "b/o0"] and clips[0].padding == [False] * 4
    assert clips[1].padding == [False, False, True, True] and clips[1].observations[-1] == "b/o3"


def test_an_interrupted_episode_is_padded_when_the_next_one_starts():
    segmenter = Segmenter(segment_length=5)
    clips = segmenter.start_episode("x0", "x") + segmenter.step("a", 1.0, "x1") + segmenter.step("b", 2.0, "x2")
    assert clips == []
    clips = segmenter.start_episode("y0", "y")
    assert len(clips) == 1 and clips[0].padding == [False, False, True, True, True]
    assert clips[0].observations == ["x0", "x1", "x2", "x2", "x2"]
    assert segmenter.flush() == []  # the new episode has no step yet


def test_obs_transform_and_arrays_are_copied():
    buffer = np.zeros(3, np.float32)
    segmenter = Segmenter(segment_length=2, obs_transform=lambda o: o * 2)
    segmenter.start_episode(buffer)
    buffer[:] = 1.0
    clips = segmenter.step(np.array([0.5], np.float32), 1.0, buffer, last=True)
    buffer[:] = 7.0  # the environment reuses its buffer: the clip must not change
    (clip,) = clips
    np.testing.assert_array_equal(clip.observations[0], np.zeros(3))
    np.testing.assert_array_equal(clip.observations[1], np.full(3, 2.0))  # padding: last observation, transformed
    np.testing.assert_array_equal(clip.actions[1], np.zeros(1))  # neutral action of an array action
    assert clip.clip_id == "episode-00000000:0" and clip.padding == [False, True]


def test_step_before_start_and_bad_length_are_clear_errors():
    with pytest.raises(ValueError, match="segment_length"):
        Segmenter(segment_length=0)
    with pytest.raises(RuntimeError, match="start_episode"):
        Segmenter().step("a", 0.0, "o")


def test_clips_from_recorded_wordle_episodes():
    from loggers import record_and_read
    from rlds_lang.wordle.env import WordleEnv
    from rlds_lang.wordle.policies import make_policy

    episodes = list(record_and_read(WordleEnv(seed=0), make_policy("optimal"), 3, seed=5, run_name="seg"))
    for episode in episodes:
        (clip,) = clips_from_episode(episode)  # a Wordle game fits in one 40-step clip
        steps = episode["steps"]
        real = len(steps) - 1
        assert clip.clip_id == f"{episode['episode_id']}:0" and len(clip) == 40 and clip.stop == real
        assert clip.actions[:real] == [s["action"] for s in steps[:-1]]
        assert clip.true_return == pytest.approx(sum(s["reward"] for s in steps))
        assert clip.observations[-1]["text"] == steps[-1]["observation"]["text"]  # padded with the final board
        assert clip.padding == [False] * real + [True] * (40 - real)
        short = clips_from_episode(episode, segment_length=2, obs_transform=lambda o: o["text"])
        assert [c.start for c in short] == list(range(0, real, 2))
        assert short[0].observations == [steps[0]["observation"]["text"], steps[1]["observation"]["text"]]
    with pytest.raises(ValueError, match="episode_id"):
        clips_from_episode({"steps": episodes[0]["steps"]})
