"""Exports of every browser task build into TFDS (``creator_web.export_builder``) and load with ``tfds.load``
keeping the annotations, annotator, session, task configuration and client times, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow_datasets as tfds
from fastapi.testclient import TestClient

from creator_web.app import create_app
from creator_web.export_builder import ExportTaskError, build_export
from creator_web.tasks import TaskSources
from loggers import read_episodes, record
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import OptimalPolicy
from tests.visdial_web_fixtures import moving_backend, visdial_folder
from tests.web_helpers import LOCAL, send_tokens

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = REPO / "builders" / "reddit_comments" / "dummy_data" / "published"
#: per task: session config and the actions a person takes in each of two episodes.
PLAYS = {"wordle": ({"answer": "crane", "seed": 1}, [["slate", "crane"], ["crane"]]),
         "reddit": ({"split": "test", "seed": 2}, [["Great point — thanks!\nagreed"], ["nope 🙃"]]),
         "visdial": ({"mode": "agent_stops", "seed": 3}, [["is it a cat?", "is it big?", "<stop>"], ["any dog?", "<stop>"]])}


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    folder = visdial_folder(root, with_image_of=None)
    sources = TaskSources(reddit_dir=str(PUBLISHED), visdial_dir=str(folder), visdial_answerer=moving_backend(folder))
    with send_tokens(TestClient(create_app(root / "web", task_sources=sources), base_url=LOCAL)) as client:
        yield client, root


def as_text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


@pytest.mark.parametrize("task", sorted(PLAYS))
def test_an_export_of_each_task_loads_with_tfds_keeping_what_the_person_did(web, task):
    client, root = web
    config, episodes = PLAYS[task]
    opened = client.post("/api/sessions", json={"annotator": f"ann_{task}", "task": task, "config": config}).json()
    sid = opened["session_id"]
    for actions in episodes:
        client.post(f"/api/sessions/{sid}/play/new")
        for k, action in enumerate(actions):
            response = client.post(f"/api/sessions/{sid}/play/act", json={"action": action, "client_ms": 100 + k})
            assert response.status_code == 200, response.text
    listed = client.get(f"/api/datasets/human/{task}/episodes").json()["episodes"]
    ids = [e["episode_id"] for e in listed if sid in e["episode_id"]]
    assert len(ids) == 2
    note = {"dataset": f"human/{task}", "episode_id": ids[0], "step": 0, "text": "good start ✓", "tags": ["clear"]}
    assert client.post(f"/api/sessions/{sid}/annotate", json=note).status_code == 200
    exported = client.post(f"/api/sessions/{sid}/export", json={"dataset": f"human/{task}", "episode_ids": ids,
                                                                "name": f"pick_{task}"})
    assert exported.status_code == 200, exported.text
    export_dir = root / "web" / "exports" / f"pick_{task}"
    logs = {e["episode_id"]: e for e in read_episodes(export_dir)}

    build_export(export_dir, root / "tfds")
    loaded = list(tfds.load(f"creator_web_export/{task}", data_dir=str(root / "tfds"), split="train"))
    assert len(loaded) == 2
    for example in loaded:
        log = logs[as_text(example["episode_id"].numpy())]
        for field in ("annotator", "session_id", "task_config", "annotations", "policy", "task"):
            assert example[field].numpy() == log[field].encode("utf-8"), field  # byte for byte
        assert int(example["seed"].numpy()) == int(log["seed"])
        steps = list(example["steps"])
        assert len(steps) == len(log["steps"])
        for step, logged in zip(steps, log["steps"]):
            assert step["observation"]["text"].numpy() == logged["observation"]["text"].encode("utf-8")
            assert step["action"].numpy() == logged["action"].encode("utf-8")
            assert np.float32(step["reward"].numpy()) == np.float32(logged["reward"])
            assert int(step["client_ms"].numpy()) == int(logged["client_ms"])
            assert bool(step["is_terminal"].numpy()) == bool(logged["is_terminal"])
    annotated = next(e for e in loaded if as_text(e["episode_id"].numpy()) == ids[0])
    [kept] = json.loads(annotated["annotations"].numpy())
    assert (kept["text"], kept["tags"], kept["annotator"], kept["session_id"]) == ("good start ✓", ["clear"],
                                                                                  f"ann_{task}", sid)
    assert json.loads(annotated["task_config"].numpy())["seed"] == config["seed"]
    assert [int(s["client_ms"].numpy()) for s in annotated["steps"]][1] == 100


def test_an_export_holding_another_tasks_episode_is_refused_naming_it(tmp_path):
    record(WordleEnv(), OptimalPolicy(), episodes=1, data_dir=tmp_path / "games", run_name="g", progress=False)
    with pytest.raises(ExportTaskError, match=r"g-00000000.*'wordle' episode, not 'reddit'"):
        build_export(tmp_path / "games", tmp_path / "tfds", task="reddit")
    built = build_export(tmp_path / "games", tmp_path / "tfds")  # recorded elsewhere: empty browser fields
    [example] = list(built.as_dataset(split="train"))
    assert (example["annotator"].numpy(), example["annotations"].numpy()) == (b"", b"[]")
    assert {int(s["client_ms"].numpy()) for s in example["steps"]} == {0}
