"""The Reddit task of creator_web through its HTTP API: a reply to a parent drawn from a split is recorded as the
one-step episode ``builders/reddit_comments`` records, and every reward config is shown after submitting."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from creator_web.app import create_app
from creator_web.tasks import TaskSources
from loggers import read_episodes
from loggers.reddit_recipes import record_comments
from loggers.tfds_examples import episode_to_example
from rlds_lang.reddit.data import read_folder
from rlds_lang.reddit.rewards import make_reward
from rlds_lang.reddit.schema import REDDIT_SCHEMA
from tests.web_helpers import LOCAL, send_tokens

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = REPO / "builders" / "reddit_comments" / "dummy_data" / "published"


@pytest.fixture()
def client(tmp_path):
    app = create_app(tmp_path / "web", task_sources=TaskSources(reddit_dir=str(PUBLISHED)))
    with send_tokens(TestClient(app, base_url=LOCAL)) as c:
        yield c


def open_reddit(client, **config) -> str:
    response = client.post("/api/sessions", json={"annotator": "rita", "task": "reddit", "config": config})
    assert response.status_code == 200, response.text
    return response.json()["session_id"]


def test_a_reply_is_recorded_as_the_builders_episode_and_every_reward_is_shown(client, tmp_path):
    sid = open_reddit(client, split="eval", seed=3)
    state = client.post(f"/api/sessions/{sid}/play/new").json()
    eval_comments = {c.parent_text: c for c in read_folder(PUBLISHED, collections.Counter()) if c.split == "eval"}
    parent = state["rows"][0]["observation"]
    assert parent in eval_comments and state["done"] is False and "rewards" not in state
    assert client.post(f"/api/sessions/{sid}/play/act", json={"action": "   "}).status_code == 422  # not logged
    reply = "What an idiot, you are wrong 😠\nsecond line"
    done = client.post(f"/api/sessions/{sid}/play/act", json={"action": reply, "client_ms": 900}).json()
    toxicity = make_reward("toxicity", cache=False).rewards([reply])[0]
    assert done["done"] is True and done["rows"][0]["action"] == reply
    assert done["rows"][0]["reward"] == toxicity * -5.0
    table = {row["kind"]: row for row in done["rewards"]}
    assert (table["toxicity"]["raw"], table["toxicity"]["reward"], table["toxicity"]["recorded"]) == \
        (toxicity, toxicity * -5.0, True)
    assert table["toxicity_noised"]["recorded"] is False and "raw" in table["toxicity_noised"]
    assert "no Reddit score" in table["upvotes_real"]["note"]
    assert "no upvote model" in table["upvotes_model"]["note"]

    [episode] = list(read_episodes(tmp_path / "web" / "human" / "reddit" / sid))
    source = eval_comments[parent]
    (tmp_path / "built").mkdir()
    [built] = list(record_comments([source], make_reward("toxicity", cache=False), "built",
                                   work_dir=str(tmp_path / "built")))
    _, mine = episode_to_example(episode, REDDIT_SCHEMA)
    _, theirs = episode_to_example(built, REDDIT_SCHEMA)
    assert mine.keys() == theirs.keys()  # the builder's features, every one present
    same = ("comment_id", "parent_id", "subreddit", "score", "split", "reward_kind", "reward_scale", "reward_shift",
            "include_parent", "task")
    assert {k: mine[k] for k in same} == {k: theirs[k] for k in same}
    assert [s["observation"]["text"] for s in mine["steps"]] == [s["observation"]["text"] for s in theirs["steps"]]
    assert [s["action"] for s in episode["steps"]] == [reply, ""]
    assert [float(s["reward"]) for s in episode["steps"]] == [toxicity * -5.0, 0.0]
    assert (episode["annotator"], episode["session_id"], episode["policy"]) == ("rita", sid, "human:rita")
    assert json.loads(episode["task_config"]) == {"split": "eval", "reward_kind": "toxicity", "seed": 3}
    assert [s["client_ms"] for s in episode["steps"]] == [0, 900]  # on the step the reply led to


def test_reddit_is_offered_only_with_a_folder_and_its_config_is_checked(client, tmp_path):
    assert "reddit" in client.get("/api/tasks").json()
    refused = client.post("/api/sessions", json={"annotator": "rita", "task": "reddit",
                                                 "config": {"reward_kind": "upvotes_real"}})
    assert refused.status_code == 422 and "reward_kind" in refused.text
    refused = client.post("/api/sessions", json={"annotator": "rita", "task": "reddit",
                                                 "config": {"reward_kind": "upvotes_model"}})
    assert refused.status_code == 422 and "--upvote-model" in refused.text
    sid = open_reddit(client)
    client.post(f"/api/sessions/{sid}/play/new")
    too_long = client.post(f"/api/sessions/{sid}/play/act", json={"action": "x" * 2001})
    assert too_long.status_code == 422 and len(too_long.text) < 1000
    with send_tokens(TestClient(create_app(tmp_path / "plain"), base_url=LOCAL)) as plain:
        assert sorted(plain.get("/api/tasks").json()) == ["wordle"]
        refused = plain.post("/api/sessions", json={"annotator": "rita", "task": "reddit"})
        assert refused.status_code == 422 and "--reddit-dir" in refused.text
    assert not (tmp_path / "plain" / "human").exists()


def test_with_an_upvote_model_its_verdict_is_shown_and_can_be_the_recorded_reward(tmp_path):
    import torch

    from rlds_lang.reddit.rewards import ModelUpvotesReward
    from rlds_lang.reddit.upvote_model import UpvoteClassifier, UpvoteModelConfig

    torch.manual_seed(0)
    UpvoteClassifier(UpvoteModelConfig(buckets=1024, dim=8)).save(tmp_path / "upvotes")  # untrained, but a model
    sources = TaskSources(reddit_dir=str(PUBLISHED), upvote_model=str(tmp_path / "upvotes"))
    with send_tokens(TestClient(create_app(tmp_path / "web", task_sources=sources), base_url=LOCAL)) as client:
        sid = open_reddit(client, reward_kind="upvotes_model")
        client.post(f"/api/sessions/{sid}/play/new")
        reply = "a thoughtful reply"
        done = client.post(f"/api/sessions/{sid}/play/act", json={"action": reply}).json()
    expected = ModelUpvotesReward.load(tmp_path / "upvotes").rewards([reply])[0]
    table = {row["kind"]: row for row in done["rewards"]}
    assert (table["upvotes_model"]["raw"], table["upvotes_model"]["reward"], table["upvotes_model"]["recorded"]) == \
        (expected, expected, True)
    assert table["toxicity"]["recorded"] is False and "raw" in table["toxicity"]
    [episode] = list(read_episodes(tmp_path / "web" / "human" / "reddit" / sid))
    assert float(episode["steps"][0]["reward"]) == expected and episode["reward_kind"] == "upvotes_model"


def test_after_a_restart_a_reply_in_progress_is_reported_lost_and_the_person_carries_on(tmp_path):
    sources = TaskSources(reddit_dir=str(PUBLISHED))
    tokens: dict[str, str] = {}
    with send_tokens(TestClient(create_app(tmp_path / "web", task_sources=sources), base_url=LOCAL), tokens) as first:
        sid = open_reddit(first, seed=9)
        first.post(f"/api/sessions/{sid}/play/new")  # the parent is shown; the server stops before the reply
    with send_tokens(TestClient(create_app(tmp_path / "web", task_sources=sources), base_url=LOCAL), tokens) as again:
        lost = again.post(f"/api/sessions/{sid}/play/act", json={"action": "late reply"})
        assert lost.status_code == 409 and f"human-{sid}-00000 was lost" in lost.json()["detail"]
        again.post(f"/api/sessions/{sid}/play/new")
        done = again.post(f"/api/sessions/{sid}/play/act", json={"action": "a reply"}).json()
        assert done["episode_id"] == f"human-{sid}-00001" and done["done"]
    [episode] = list(read_episodes(tmp_path / "web" / "human" / "reddit" / sid))
    assert episode["episode_id"] == f"human-{sid}-00001" and episode["steps"][0]["action"] == "a reply"
    with send_tokens(TestClient(create_app(tmp_path / "web"), base_url=LOCAL), tokens) as without_folder:
        refused = without_folder.get(f"/api/sessions/{sid}/play")  # not restored: this server offers no reddit
        assert refused.status_code == 404 and "unknown session" in refused.text
