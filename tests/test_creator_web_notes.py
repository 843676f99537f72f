"""Notes on episodes through creator_web's HTTP API: a client key makes a save idempotent, notes are edited and
deleted as new versions (each change recorded, nothing acknowledged lost), exports carry the current notes, every
store is bounded, and the queue and progress count each annotator's work."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from creator_web import review
from creator_web.app import create_app
from creator_web.server import add_server_arguments, app_options
from creator_web.storage import DataDir
from loggers import read_episodes, record
from loggers.live import rewrite_episode
from rlds_lang.replay import ReplayEnv, ReplayPolicy, ScriptedEpisode
from tests.web_helpers import LOCAL, send_tokens

EPISODE = "talk-00000000"


@pytest.fixture()
def data_dir(tmp_path) -> Path:
    """A data folder with one small dataset, ``talk`` (2 episodes of 2 steps)."""
    talk = [ScriptedEpisode(observations=[f"hello {k}", "bye"], actions=[f"hi {k}"], rewards=[0.25]) for k in range(2)]
    record(ReplayEnv(talk), ReplayPolicy(talk), episodes=2, data_dir=tmp_path / "talk", run_name="talk",
           progress=False)
    return tmp_path


@pytest.fixture()
def client(data_dir):
    with send_tokens(TestClient(create_app(data_dir), base_url=LOCAL)) as c:
        yield c


def session(client, annotator: str) -> str:
    response = client.post("/api/sessions", json={"annotator": annotator, "task": "wordle", "config": {}})
    assert response.status_code == 200, response.text
    return response.json()["session_id"]


def post(client, sid: str, path: str, **body):
    return client.post(f"/api/sessions/{sid}/annotate{path}", json={"dataset": "talk", "episode_id": EPISODE, **body})


def versions(data_dir: Path, episode: str = EPISODE) -> list[str]:
    folder = data_dir / "versions" / "talk" / episode
    return sorted(os.listdir(folder)) if folder.exists() else []


def notes_now(client) -> list[dict]:
    return client.get("/api/datasets/talk/episode", params={"episode_id": EPISODE}).json()["annotations"]


def test_a_save_sent_twice_with_its_key_is_stored_once(client, data_dir):
    sid = session(client, "ann")
    first = post(client, sid, "", step=1, text="once", client_key="k" * 16)
    again = post(client, sid, "", step=1, text="once", client_key="k" * 16)
    assert first.status_code == again.status_code == 200, (first.text, again.text)
    assert (first.json()["duplicate"], again.json()["duplicate"]) == (False, True)
    assert again.json()["version"] == first.json()["version"] and again.json()["note_id"] == first.json()["note_id"]
    assert versions(data_dir) == ["v0000"] and [n["text"] for n in notes_now(client)] == ["once"]
    other = post(client, sid, "", step=1, text="twice", client_key="k" * 16)  # the key of another save
    assert other.status_code == 409 and "client_key" in other.json()["detail"]
    unkeyed = [post(client, sid, "", text="no key") for _ in range(2)]  # without a key each save is its own
    assert [r.status_code for r in unkeyed] == [200, 200] and len(versions(data_dir)) == 3


@pytest.mark.parametrize("key", ["short", "x" * 65, "has space!", "ключ-ключ-ключ"])
def test_a_client_key_is_bounded_and_plain(client, key):
    response = post(client, session(client, "ann"), "", text="x", client_key=key)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"][-1] == "client_key"


def test_a_note_is_edited_and_deleted_as_new_versions_and_the_old_ones_keep_it(client, data_dir):
    sid = session(client, "ann")
    note = post(client, sid, "", step=0, text="frist", tags=["typo"]).json()
    edited = post(client, sid, "/edit", note_id=note["note_id"], revision=1, text="first", tags=[])
    assert edited.status_code == 200, edited.text
    assert (edited.json()["note_id"], edited.json()["revision"]) == (note["note_id"], 2)
    [now] = notes_now(client)
    assert (now["text"], now["tags"], now["revision"], now["edited_by"], now["annotator"]) == \
        ("first", [], 2, "ann", "ann")
    stale = post(client, sid, "/edit", note_id=note["note_id"], revision=1, text="lost update?")
    assert stale.status_code == 409 and "revision 2" in stale.json()["detail"]
    empty = post(client, sid, "/edit", note_id=note["note_id"], revision=2, text="", tags=[])
    assert empty.status_code == 422 and "delete" in empty.json()["detail"]
    deleted = post(client, sid, "/delete", note_id=note["note_id"], revision=2, client_key="delete-key-1")
    assert deleted.status_code == 200 and notes_now(client) == []
    assert post(client, sid, "/delete", note_id=note["note_id"], revision=2, client_key="delete-key-1").json()[
        "duplicate"] is True
    gone = post(client, sid, "/delete", note_id=note["note_id"], revision=2)
    assert gone.status_code == 404 and "no note" in gone.json()["detail"]
    assert versions(data_dir) == ["v0000", "v0001", "v0002"]  # the refused requests wrote nothing
    data = DataDir(data_dir)
    kept = [json.loads(review.find_version(data, "talk", EPISODE, v)["annotations"]) for v in range(3)]
    assert [[(n["text"], n["revision"]) for n in k] for k in kept] == [[("frist", 1)], [("first", 2)], []]
    changes = client.get("/api/datasets/talk/episode", params={"episode_id": EPISODE}).json()["changes"]
    assert [(c["version"], c["op"], c["note_id"], c["annotator"]) for c in changes] == \
        [("v0000", "add", note["note_id"], "ann"), ("v0001", "edit", note["note_id"], "ann"),
         ("v0002", "delete", note["note_id"], "ann")]
    assert all("client_key" not in c and "digest" not in c for c in changes)  # the page needs neither


def test_only_the_author_changes_a_note(client, data_dir):
    ann, ben = session(client, "ann"), session(client, "ben")
    note = post(client, ann, "", text="mine").json()
    for path, extra in [("/edit", {"text": "ours"}), ("/delete", {})]:
        refused = post(client, ben, path, note_id=note["note_id"], revision=1, **extra)
        assert refused.status_code == 403 and "'ann'" in refused.json()["detail"]
    assert versions(data_dir) == ["v0000"] and [n["text"] for n in notes_now(client)] == ["mine"]


def test_an_export_carries_the_current_notes_and_not_the_change_records(client, data_dir):
    sid = session(client, "ann")
    kept = post(client, sid, "", text="kept").json()
    dropped = post(client, sid, "", text="dropped").json()
    post(client, sid, "/edit", note_id=kept["note_id"], revision=1, text="kept, edited")
    post(client, sid, "/delete", note_id=dropped["note_id"], revision=1)
    response = client.post(f"/api/sessions/{sid}/export", json={"dataset": "talk", "name": "now",
                                                                "episode_ids": [EPISODE]})
    assert response.status_code == 200, response.text
    [exported] = list(read_episodes(data_dir / "exports" / "now"))
    assert [(n["text"], n["revision"]) for n in json.loads(exported["annotations"])] == [("kept, edited", 2)]
    assert review.CHANGES not in exported


def test_notes_stored_before_they_had_ids_get_stable_ones_and_can_be_edited(client, data_dir):
    sid = session(client, "ann")
    data = DataDir(data_dir)
    original = next(e for e in data.episodes("talk") if e["episode_id"] == EPISODE)
    old = [{"step": None, "text": f"old {k}", "tags": [], "annotator": "ann", "session_id": "s", "time": 1.0}
           for k in range(2)]
    rewrite_episode(original, data_dir / "versions" / "talk" / EPISODE / "v0000",
                    extra_metadata={"annotations": json.dumps(old)})
    assert [(n["note_id"], n["revision"]) for n in notes_now(client)] == [("i0", 1), ("i1", 1)]
    assert post(client, sid, "/delete", note_id="i0", revision=1).status_code == 200
    assert post(client, sid, "/edit", note_id="i1", revision=1, text="old 1, edited").status_code == 200
    assert [(n["note_id"], n["text"]) for n in notes_now(client)] == [("i1", "old 1, edited")]


def test_versions_and_change_records_are_bounded(client, data_dir, monkeypatch):
    monkeypatch.setattr(review, "RECENT_CHANGES", 3)
    monkeypatch.setattr(review, "MAX_VERSIONS", 5)
    sid = session(client, "ann")
    note = post(client, sid, "", text="v0").json()
    for revision in range(1, 5):
        assert post(client, sid, "/edit", note_id=note["note_id"], revision=revision, text=f"v{revision}").status_code \
            == 200
    changes = client.get("/api/datasets/talk/episode", params={"episode_id": EPISODE}).json()["changes"]
    assert [c["version"] for c in changes] == ["v0002", "v0003", "v0004"]
    full = post(client, sid, "/edit", note_id=note["note_id"], revision=5, text="one too many")
    assert full.status_code == 409 and "5 versions" in full.json()["detail"]


def test_the_queue_and_progress_count_each_annotators_notes_games_and_judgements(client, data_dir):
    ann, ben = session(client, "ann"), session(client, "ben")
    post(client, ann, "", text="a")
    post(client, ben, "", text="b")
    gone = post(client, ben, "", text="c").json()
    post(client, ben, "/delete", note_id=gone["note_id"], revision=1)
    listed = {e["episode_id"]: e for e in client.get("/api/datasets/talk/episodes").json()["episodes"]}
    assert (listed[EPISODE]["notes"], listed[EPISODE]["annotators"]) == (2, ["ann", "ben"])
    assert (listed["talk-00000001"]["notes"], listed["talk-00000001"]["annotators"]) == (0, [])
    mine = notes_now(client)[0]
    assert mine["annotator"] == "ann"
    post(client, ann, "/delete", note_id=mine["note_id"], revision=1)
    listed = {e["episode_id"]: e for e in client.get("/api/datasets/talk/episodes").json()["episodes"]}
    assert (listed[EPISODE]["notes"], listed[EPISODE]["annotators"]) == (1, ["ben"])  # a new version is read
    post(client, ann, "", text="a again")
    client.post(f"/api/sessions/{ann}/play/new")
    for guess in ["crane", "sloth", "pious", "fight", "dumpy", "bowel"]:  # six guesses end any game
        client.post(f"/api/sessions/{ann}/play/act", json={"action": guess})
    pair = client.post(f"/api/sessions/{ben}/judge/next", json={"left": "talk", "right": "talk"}).json()
    assert client.post(f"/api/sessions/{ben}/judge", json={"pair_id": pair["pair_id"], "label": "left"}).status_code \
        == 200
    (data_dir / "judgements" / ("f" * 32) / "j_00000").mkdir(parents=True)  # a session nobody recorded
    out = client.get("/api/progress").json()
    assert out["problems"] == [f"judgements/{'f' * 32}: 1 judgement(s) of a session with no record"]
    rows = {r["annotator"]: r for r in out["annotators"]}
    assert {k: rows["ann"][k] for k in ("sessions", "episodes", "judgements", "notes")} == \
        {"sessions": 1, "episodes": {"wordle": 1}, "judgements": 0, "notes": 1}
    assert {k: rows["ben"][k] for k in ("sessions", "episodes", "judgements", "notes")} == \
        {"sessions": 1, "episodes": {}, "judgements": 1, "notes": 1}


def test_the_hold_hook_is_not_an_option_of_any_command_line():
    import argparse

    parser = argparse.ArgumentParser()
    add_server_arguments(parser)
    assert "hold" not in app_options(parser.parse_args([]))
    assert not any("hold" in action.dest for action in parser._actions)
