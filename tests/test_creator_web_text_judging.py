"""Judging text: any two datasets of the data folder drawn as transcripts (step by step, with rewards), judged
and recorded in the preferences format exactly as board clips are."""

from __future__ import annotations

from pathlib import Path

import pytest

from loggers import read_episodes, record
from loggers.preferences_dataset import read_judgements
from rlds_lang.replay import ReplayEnv, ReplayPolicy, ScriptedEpisode
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import OptimalPolicy
from tests.test_creator_web_api import client  # noqa: F401 - the API client fixture, on this module's data_dir


@pytest.fixture()
def data_dir(tmp_path) -> Path:
    record(WordleEnv(), OptimalPolicy(), episodes=2, data_dir=tmp_path / "expert", run_name="expert", progress=False)
    chat = [ScriptedEpisode(observations=["Q: a dog?", "A: yes", "A: brown"], actions=["is it big?", "what colour?"],
                            rewards=[0.5, -1.0])]
    record(ReplayEnv(chat), ReplayPolicy(chat), episodes=1, data_dir=tmp_path / "chat", run_name="chat",
           progress=False)
    return tmp_path


def test_a_wordle_game_judged_as_text_is_a_transcript_of_its_steps_and_recorded_as_today(client, data_dir):
    sid = client.post("/api/sessions", json={"annotator": "tess"}).json()["session_id"]
    pair = client.post(f"/api/sessions/{sid}/judge/next",
                       json={"left": "expert", "right": "chat", "view": "text"}).json()
    games = {e["episode_id"]: e for e in read_episodes(data_dir / "expert")}
    left = games[pair["left"]["episode_id"]]
    assert pair["left"]["kind"] == "text"  # a Wordle game, yet drawn as text
    assert pair["left"]["rows"] == [
        {"step": i, "observation": s["observation"]["text"], "action": s["action"], "reward": float(s["reward"])}
        for i, s in enumerate(left["steps"])]
    assert [r["step"] for r in pair["right"]["rows"]] == [0, 1, 2]
    assert [(r["action"], r["reward"]) for r in pair["right"]["rows"]] == \
        [("is it big?", 0.5), ("what colour?", -1.0), ("", 0.0)]
    board = client.post(f"/api/sessions/{sid}/judge/next", json={"left": "expert", "right": "chat"}).json()
    assert board["left"]["kind"] == "board"  # the default view is unchanged
    assert client.post(f"/api/sessions/{sid}/judge", json={"pair_id": board["pair_id"], "label": "right",
                                                           "seconds": 1.5}).status_code == 200
    [judgement] = list(read_judgements(data_dir / "judgements" / sid, "all"))
    assert (judgement.label.value, judgement.right.source_episode_id) == ("right", "chat-00000000")
    assert judgement.right.actions == ["is it big?", "what colour?", ""]


def test_an_unknown_view_is_refused_naming_the_field(client):
    sid = client.post("/api/sessions", json={"annotator": "tess"}).json()["session_id"]
    response = client.post(f"/api/sessions/{sid}/judge/next", json={"left": "expert", "right": "chat",
                                                                    "view": "x" * 10_000})
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body", "view"]
    assert len(response.text) < 1000


def test_replies_of_a_built_tfds_dataset_are_judged_as_text_beside_raw_dialogues(client, data_dir, tmp_path):
    import collections

    from creator_web.export_builder import build_export
    from rlds_lang.reddit.data import read_folder
    from rlds_lang.reddit.env import DataReplyPolicy, RedditEnv
    from rlds_lang.reddit.rewards import make_reward

    published = Path(__file__).resolve().parents[1] / "builders" / "reddit_comments" / "dummy_data" / "published"
    comments = list(read_folder(published, collections.Counter()))[:3]
    policy = DataReplyPolicy()
    policy.reply = "a reply ✓"
    record(RedditEnv(comments, make_reward("toxicity", cache=False)), policy, episodes=2, data_dir=tmp_path / "logs",
           run_name="replies", progress=False)
    build_export(tmp_path / "logs", data_dir / "built")  # a TFDS folder in the data folder
    sid = client.post("/api/sessions", json={"annotator": "tess"}).json()["session_id"]
    assert client.get("/api/datasets").json()["datasets"]["built"] == "tfds"
    pair = client.post(f"/api/sessions/{sid}/judge/next", json={"left": "built", "right": "chat",
                                                                "view": "text"}).json()
    logged = {e["episode_id"]: e for e in read_episodes(tmp_path / "logs")}[pair["left"]["episode_id"]]
    assert pair["left"]["rows"] == [
        {"step": i, "observation": s["observation"]["text"], "action": s["action"], "reward": float(s["reward"])}
        for i, s in enumerate(logged["steps"])]
    assert pair["left"]["rows"][0]["action"] == "a reply ✓"
    assert client.post(f"/api/sessions/{sid}/judge", json={"pair_id": pair["pair_id"], "label": "left"}).status_code \
        == 200
