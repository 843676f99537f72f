"""RedditEnv (one step, include_parent, reward scale/shift) and the recording recipe (metadata, lossless text)."""

import collections
import os

import dm_env
import numpy as np
import pytest

from builders.reddit_comments import make_dummy_data as dummy
from loggers.reddit_recipes import record_comments
from rlds_lang.env import run_episode
from rlds_lang.reddit.data import RedditComment, read_published
from rlds_lang.reddit.env import DataReplyPolicy, RedditEnv
from rlds_lang.reddit.rewards import RealUpvotesReward, make_reward
from rlds_lang.reddit.schema import REDDIT_SCHEMA
from rlds_lang.schema import check_episode

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ODD = "emoji 😀👍🏽, CRLF\r\nand \"quotes\", \u202eRTL\u202c, 𝔘𝔫𝔦, \u00a0nbsp, combining e\u0301"


class LengthReward:
    kind = "length"

    def fingerprint(self):
        return "len"

    def rewards(self, texts):
        return [float(len(t)) for t in texts]


def _comments():
    return [RedditComment(i, f"c{i}", f"t1_p{i}", "t5_x", text, score, f"parent {i} {ODD}", "test", f"f:{i}")
            for i, (text, score) in enumerate([(ODD, 3), ("plain reply", -2), ("x", 0)])]


def test_one_step_episode_with_parent_and_scaled_reward():
    env = RedditEnv(_comments(), LengthReward(), reward_scale=2.0, reward_shift=-1.0, seed=1)
    first = env.reset()
    assert first.first() and first.observation["text"].startswith("parent ")
    last = env.step("abcd")
    assert last.last() and last.step_type == dm_env.StepType.LAST and last.discount == 0.0
    assert last.reward == 4 * 2.0 - 1.0 and last.observation == {"text": ""}
    assert env.episode_metadata()["comment_id"] in {"c0", "c1", "c2"}


def test_include_parent_false_and_default_scales():
    env = RedditEnv(_comments(), make_reward("toxicity"), include_parent=False)
    assert env.reset().observation["text"] == ""
    assert (env.reward_scale, env.reward_shift) == (-5.0, 0.0)
    assert env.step("fuck you asshole").reward == -10.0
    upvotes = RedditEnv(_comments(), RealUpvotesReward.from_comments(_comments()))
    assert (upvotes.reward_scale, upvotes.reward_shift) == (1.0, 0.0)


def test_parents_are_seeded_and_fixed_comment_is_replayed():
    draws = []
    for _ in range(2):
        env = RedditEnv(_comments() * 5, LengthReward(), seed=7)
        draws.append([env.reset().observation["text"] for _ in range(6)])
    assert draws[0] == draws[1]
    env = RedditEnv(_comments(), LengthReward())
    env.set_next_comment(_comments()[1])
    policy = DataReplyPolicy()
    policy.reply = "plain reply"
    episode = run_episode(env, policy)
    assert episode.observations[0]["text"] == _comments()[1].parent_text and episode.actions == ["plain reply"]
    assert episode.metadata["score"] == -2 and episode.metadata["split"] == "test"


def test_no_comments_is_an_error():
    with pytest.raises(ValueError, match="at least one"):
        RedditEnv([], LengthReward())


def test_recipe_records_metadata_and_lossless_text(tmp_path):
    comments = _comments()
    reward = RealUpvotesReward.from_comments(comments)
    episodes = list(record_comments(comments, reward, "reddit-test", work_dir=str(tmp_path)))
    assert [e["episode_id"] for e in episodes] == [f"reddit-test-{i:08d}" for i in range(3)]
    for episode, comment in zip(episodes, comments):
        check_episode(episode)
        steps = episode["steps"]
        assert len(steps) == 2
        assert steps[0]["observation"]["text"] == comment.parent_text and steps[0]["action"] == comment.text
        assert float(steps[0]["reward"]) == (1.0 if comment.score > 0 else -1.0)
        assert steps[1]["is_terminal"] and steps[1]["action"] == ""
        assert episode["comment_id"] == comment.comment_id and episode["parent_id"] == comment.parent_id
        assert int(episode["score"]) == comment.score and episode["split"] == "test"
        assert episode["reward_kind"] == "upvotes_real" and episode["policy"] == "reddit_data"
        assert set(REDDIT_SCHEMA.all_episode_metadata) <= set(episode)


def test_recipe_on_dummy_published_data(tmp_path):
    comments = list(read_published(f"{dummy.OUT}/published", collections.Counter()))
    episodes = list(record_comments(comments, make_reward("toxicity", cache=False), "r", include_parent=False,
                                    work_dir=str(tmp_path)))
    assert len(episodes) == len(comments)
    assert all(e["steps"][0]["observation"]["text"] == "" for e in episodes)
    assert {float(e["steps"][0]["reward"]) for e in episodes} <= {0.0, -5.0, -10.0}
    assert [e["steps"][0]["action"] for e in episodes] == [c.text for c in comments]
    assert bool(np.asarray(episodes[0]["include_parent"])) is False


def test_bench_prints_comments_per_second(capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_reddit", os.path.join(REPO, "bench", "reddit.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rates = bench.main(["--comments", "40"])
    assert set(rates) == {"reader", "toxicity reward", "recorder (record + read back)"}
    assert all(rate > 0 for rate in rates.values())
    assert "comments/s" in capsys.readouterr().out
