"""loggers.live: recording an environment stepped by the caller (how creator_web records people)."""

from __future__ import annotations

import numpy as np
import pytest

from loggers import read_episodes, record
from loggers.live import EpisodeClosedError, LiveEpisode, rewrite_episode
from loggers.reader import read_log_dir
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import OptimalPolicy


def test_a_live_episode_matches_a_recorded_policy_game_step_for_step(tmp_path):
    record(WordleEnv(), OptimalPolicy(), episodes=1, data_dir=tmp_path / "policy", seed=3, run_name="p", progress=False)
    [played] = list(read_episodes(tmp_path / "policy"))
    with LiveEpisode(WordleEnv(), tmp_path / "live", episode_id="live-0", policy="human:x", policy_params="{}",
                     seed=3, extra_metadata={"annotator": "x"}) as live:
        live.reset()
        for step in played["steps"][:-1]:
            timestep = live.step(step["action"])
    assert timestep.last() and live.closed
    [mine] = list(read_episodes(tmp_path / "live"))
    assert len(mine["steps"]) == len(played["steps"])
    for a, b in zip(mine["steps"], played["steps"]):
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_equal(a[key], b[key])
    differ = {"episode_id", "policy", "policy_params"}
    assert {k: v for k, v in mine.items() if k not in differ | {"steps", "annotator"}} == \
        {k: v for k, v in played.items() if k not in differ | {"steps"}}
    assert (mine["episode_id"], mine["policy"], mine["annotator"]) == ("live-0", "human:x", "x")


def test_misuse_is_refused_with_a_clear_error(tmp_path):
    env = WordleEnv()
    live = LiveEpisode(env, tmp_path / "a", episode_id="e", policy="p", policy_params="{}", seed=0,
                       step_keys={"client_ms": 0})
    with pytest.raises(EpisodeClosedError, match="no episode in progress"):
        live.step("crane")
    live.reset()
    with pytest.raises(EpisodeClosedError, match="already started"):
        live.reset()
    with pytest.raises(KeyError, match="not declared"):
        live.step("crane", {"typo_ms": 3})
    live.step("crane", {"client_ms": 3})
    live.close()  # mid-game: the episode stays unfinished
    assert list(read_log_dir(tmp_path / "a")) == []
    [unfinished] = list(read_log_dir(tmp_path / "a", include_unfinished=True))
    assert [s["client_ms"] for s in unfinished["steps"]] == [0, 3]
    with pytest.raises(FileExistsError, match="new folder"):
        LiveEpisode(env, tmp_path / "a", episode_id="e", policy="p", policy_params="{}", seed=0)


def test_rewrite_keeps_everything_and_adds_extras(tmp_path):
    env = WordleEnv()
    env.set_next_answer("crane")
    with LiveEpisode(env, tmp_path / "orig", episode_id="o", policy="human:y", policy_params='{"a": 1}', seed=9,
                     step_keys={"client_ms": 0}) as live:
        live.reset()
        live.step("slate", {"client_ms": 1500})
        live.step("crane", {"client_ms": 2500})
    [original] = list(read_episodes(tmp_path / "orig"))
    rewrite_episode(original, tmp_path / "v1", extra_metadata={"annotations": "[]"},
                    extra_step_metadata=[{"note": ""}, {"note": "close"}, {"note": ""}])
    [copy] = list(read_episodes(tmp_path / "v1"))
    assert {k: v for k, v in copy.items() if k not in ("steps", "annotations")} == \
        {k: v for k, v in original.items() if k != "steps"}
    assert copy["annotations"] == "[]"
    assert [s["note"] for s in copy["steps"]] == ["", "close", ""]
    for a, b in zip(copy["steps"], original["steps"]):
        for key in b:
            np.testing.assert_equal(a[key], b[key])
    with pytest.raises(ValueError, match="3 steps"):
        rewrite_episode(original, tmp_path / "v2", extra_step_metadata=[{"note": ""}])
