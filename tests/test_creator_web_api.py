"""creator_web through its HTTP API (no browser): recording, validation, isolation, versions, exports, crashes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient

from creator_web.app import create_app
from creator_web.server import free_port
from loggers import read_episodes, record
from loggers.preferences_dataset import read_judgements
from rlds_lang.preferences.types import Label
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import OptimalPolicy
from tests.web_helpers import LOCAL, send_tokens

REPO = Path(__file__).resolve().parents[1]


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time (to prove nothing changed)."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def open_session(client, annotator="alice", **config) -> str:
    response = client.post("/api/sessions", json={"annotator": annotator, "task": "wordle", "config": config})
    assert response.status_code == 200, response.text
    return response.json()["session_id"]


def play(client, sid: str, guesses: list[str]) -> dict:
    state = client.post(f"/api/sessions/{sid}/play/new").json()
    for guess in guesses:
        response = client.post(f"/api/sessions/{sid}/play/act", json={"action": guess, "client_ms": 250})
        assert response.status_code == 200, response.text
        state = response.json()
    return state


@pytest.fixture()
def data_dir(tmp_path) -> Path:
    """A data folder holding one small recorded dataset (``expert``, 3 optimal games)."""
    record(WordleEnv(), OptimalPolicy(), episodes=3, data_dir=tmp_path / "expert", run_name="expert", progress=False)
    return tmp_path


@pytest.fixture()
def client(data_dir):
    with send_tokens(TestClient(create_app(data_dir), base_url=LOCAL)) as c:
        yield c


def test_a_game_is_recorded_like_a_policy_game_and_invalid_guesses_never_reach_the_log(client, data_dir):
    sid = open_session(client, answer="crane", seed=11)
    client.post(f"/api/sessions/{sid}/play/new")
    for bad in ["zzzzz", "cran", "CRANE", "crane!"]:
        response = client.post(f"/api/sessions/{sid}/play/act", json={"action": bad})
        assert response.status_code == 422 and "action" in response.text, (bad, response.text)
    state = play(client, sid, [])  # a new game replaces the unfinished one (which stays unfinished)
    for guess in ["abide", "crane"]:
        state = client.post(f"/api/sessions/{sid}/play/act", json={"action": guess, "client_ms": 400}).json()
    assert state["done"] and state["won"] and state["answer"] == "crane"
    episodes = list(read_episodes(data_dir / "human" / "wordle" / sid))
    assert len(episodes) == 1
    ep = episodes[0]
    assert [s["action"] for s in ep["steps"]] == ["abide", "crane", ""]
    assert [s["observation"]["text"] for s in ep["steps"]] == ["", "🟨⬛⬛⬛🟩", "🟩🟩🟩🟩🟩"]
    assert [s["reward"] for s in ep["steps"]] == [-1.0, 0.0, 0.0]
    assert [s["client_ms"] for s in ep["steps"]] == [0, 400, 400]
    assert ep["steps"][-1]["is_terminal"]
    assert ep["episode_id"] == f"human-{sid}-00001" and ep["policy"] == "human:alice"
    assert ep["annotator"] == "alice" and ep["session_id"] == sid and ep["seed"] == 12  # seed 11 + game 1
    assert json.loads(ep["task_config"]) == {"answer": "crane", "mode": "fixed", "rule": "official", "seed": 11}
    # The same keys as a policy's game recorded by loggers.record, plus the human extras.
    expert = next(read_episodes(data_dir / "expert"))
    assert set(ep) == set(expert) | {"annotator", "session_id", "task_config"}


def test_the_ilql_rule_comes_from_the_session_config(client, data_dir):
    sid = open_session(client, rule="ilql", answer="abide")
    state = play(client, sid, ["speed"])
    assert state["rows"][0]["colours"] == [0, 0, 1, 1, 1]  # official would be 0,0,1,0,1
    sid2 = open_session(client, rule="official", answer="abide")
    assert play(client, sid2, ["speed"])["rows"][0]["colours"] == [0, 0, 1, 0, 1]


def test_bad_requests_get_4xx_and_change_nothing(client, data_dir):
    sid = open_session(client)
    client.post(f"/api/sessions/{sid}/play/new")
    before = tree(data_dir)
    unknown = "0" * 32
    bad = [
        ("post", "/api/sessions", {"annotator": "../evil"}, 422),
        ("post", "/api/sessions", {"annotator": "a", "task": "chess"}, 422),
        ("post", "/api/sessions", {"annotator": "a", "config": {"rule": "nope"}}, 422),
        ("post", "/api/sessions", {"annotator": "a", "config": {"answer": "zzzzz"}}, 422),
        ("post", "/api/sessions", {"annotator": "a", "config": {"colour": "x"}}, 422),
        ("post", "/api/sessions", {"annotator": "a", "extra": 1}, 422),
        ("post", f"/api/sessions/{unknown}/play/new", None, 404),
        ("post", "/api/sessions/not-a-session/play/new", None, 422),
        ("post", f"/api/sessions/{unknown}/play/act", {"action": "crane"}, 404),
        ("post", f"/api/sessions/{sid}/play/act", {"action": ""}, 422),
        ("post", f"/api/sessions/{sid}/play/act", {"action": "crane", "client_ms": -1}, 422),
        ("post", f"/api/sessions/{sid}/play/act", {"guess": "crane"}, 422),
        ("post", f"/api/sessions/{sid}/judge", {"pair_id": "0123456789abcdef", "label": "left"}, 404),
        ("post", f"/api/sessions/{sid}/judge", {"pair_id": "0123456789abcdef", "label": "maybe"}, 422),
        ("post", f"/api/sessions/{unknown}/judge/next", {}, 404),
        ("post", f"/api/sessions/{sid}/judge/next", {"left": "../../etc", "right": "expert"}, 404),
        ("post", f"/api/sessions/{sid}/judge/next", {"left": "expert"}, 422),  # no default pair: choose both
        ("post", f"/api/sessions/{sid}/annotate", {"dataset": "expert", "episode_id": "nope", "text": "x"}, 404),
        ("post", f"/api/sessions/{sid}/annotate", {"dataset": "expert", "episode_id": "expert-00000000"}, 422),
        ("post", f"/api/sessions/{sid}/annotate",
         {"dataset": "expert", "episode_id": "expert-00000000", "step": 99, "text": "x"}, 422),
        ("post", f"/api/sessions/{unknown}/annotate", {"dataset": "expert", "episode_id": "expert-00000000",
                                                       "text": "x"}, 404),
        ("post", f"/api/sessions/{sid}/export", {"dataset": "expert", "episode_ids": ["x"], "name": "../up"}, 422),
        ("post", f"/api/sessions/{sid}/export", {"dataset": "/etc", "episode_ids": ["x"], "name": "ok"}, 404),
        ("post", f"/api/sessions/{unknown}/export", {"dataset": "expert", "episode_ids": ["expert-00000000"],
                                                     "name": "ok"}, 404),
        ("get", "/api/datasets/..%2F..%2Fetc/episodes", None, 404),
        ("get", "/api/datasets/expert/../../../etc/passwd", None, 404),
        ("get", "/api/datasets/sessions/episodes", None, 404),
        ("get", "/api/datasets/expert/episode?episode_id=..%2F..%2Fx", None, 404),
        ("get", "/static/..%2Fapp.py", None, 404),
        ("get", "/static/%2e%2e%2f%2e%2e%2fsetup.cfg", None, 404),
    ]
    for method, url, body, status in bad:
        response = client.request(method.upper(), url, json=body)
        assert response.status_code == status, (url, body, response.status_code, response.text)
        assert "detail" in response.json(), (url, response.text)
    assert tree(data_dir) == before
    page = client.get("/play", params={"html": "<script>alert(1)</script>"})
    assert page.status_code == 200 and "alert(1)" not in page.text and 'id="board"' in page.text


def test_sessions_are_isolated(client, data_dir):
    a, b = open_session(client, "ann", answer="crane"), open_session(client, "bob", answer="slate")
    client.post(f"/api/sessions/{a}/play/new")
    client.post(f"/api/sessions/{b}/play/new")
    for guess_a, guess_b in [("abide", "crane"), ("crane", "slate")]:  # interleaved
        assert client.post(f"/api/sessions/{a}/play/act", json={"action": guess_a}).status_code == 200
        assert client.post(f"/api/sessions/{b}/play/act", json={"action": guess_b}).status_code == 200
    ep_a = list(read_episodes(data_dir / "human" / "wordle" / a))
    ep_b = list(read_episodes(data_dir / "human" / "wordle" / b))
    assert [[s["action"] for s in e["steps"]] for e in ep_a] == [["abide", "crane", ""]]
    assert [[s["action"] for s in e["steps"]] for e in ep_b] == [["crane", "slate", ""]]
    assert ep_a[0]["policy"] == "human:ann" and ep_b[0]["policy"] == "human:bob"


def test_judgement_annotation_and_export_write_new_logs_and_leave_the_original(client, data_dir):
    original = tree(data_dir / "expert")
    sid = open_session(client, "judy")
    assert client.get("/api/judge/source").json() == {"source": "datasets"}
    pair = client.post(f"/api/sessions/{sid}/judge/next", json={"left": "expert", "right": "expert"}).json()
    response = client.post(f"/api/sessions/{sid}/judge", json={"pair_id": pair["pair_id"], "label": "equal",
                                                               "seconds": 2.5})
    assert response.status_code == 200
    again = client.post(f"/api/sessions/{sid}/judge", json={"pair_id": pair["pair_id"], "label": "left"})
    assert again.status_code == 404  # a pair is answered once
    # recorded in the preferences format: read back as a Judgement with its clips, like any preference log
    [judgement] = list(read_judgements(data_dir / "judgements" / sid, "all"))
    assert judgement.label is Label.EQUAL and (judgement.labeller, judgement.seconds) == ("human:judy", 2.5)
    assert (judgement.left.clip_id, judgement.right.clip_id) == (pair["left"]["clip_id"], pair["right"]["clip_id"])
    [session] = [e for e in read_episodes(data_dir / "judgements" / sid) if e["task"] == "preference_session"]
    assert session["steps"][0]["action"] == "equal" and session["annotator"] == "judy"

    eid = "expert-00000001"
    for note in [{"step": 1, "text": "nice second guess", "tags": ["good"]}, {"text": "whole game", "tags": []}]:
        response = client.post(f"/api/sessions/{sid}/annotate", json={"dataset": "expert", "episode_id": eid, **note})
        assert response.status_code == 200, response.text
    shown = client.get("/api/datasets/expert/episode", params={"episode_id": eid}).json()
    assert [(n["step"], n["text"]) for n in shown["annotations"]] == [(1, "nice second guess"), (None, "whole game")]
    assert tree(data_dir / "expert") == original  # never edited in place
    versions = sorted(os.listdir(data_dir / "versions" / "expert" / eid))
    assert versions == ["v0000", "v0001"]

    response = client.post(f"/api/sessions/{sid}/export", json={"dataset": "expert", "name": "picked",
                                                                "episode_ids": [eid, "expert-00000002"]})
    assert response.status_code == 200, response.text
    assert client.post(f"/api/sessions/{sid}/export", json={"dataset": "expert", "name": "picked",
                                                            "episode_ids": [eid]}).status_code == 409
    exported = {e["episode_id"]: e for e in read_episodes(data_dir / "exports" / "picked")}
    source = {e["episode_id"]: e for e in read_episodes(data_dir / "expert")}
    assert sorted(exported) == [eid, "expert-00000002"]
    for key, episode in exported.items():  # lossless: every step and metadata field comes back
        for mine, theirs in zip(episode["steps"], source[key]["steps"]):
            assert mine.keys() == theirs.keys()
            for field in mine:
                np.testing.assert_equal(mine[field], theirs[field])
        assert {k: v for k, v in episode.items() if k not in ("steps", "annotations")} == \
            {k: v for k, v in source[key].items() if k != "steps"}
    assert "exports/picked" in client.get("/api/datasets").json()["datasets"]


def test_an_export_builds_with_tfds_and_is_reviewable_as_a_built_folder(client, data_dir):
    import tensorflow_datasets as tfds

    from builders.wordle_synthetic import wordle_synthetic_dataset_builder as wordle

    sid = open_session(client, "exp", answer="crane")
    play(client, sid, ["abide", "crane"])
    eid = f"human-{sid}-00000"
    assert client.post(f"/api/sessions/{sid}/export", json={"dataset": "human/wordle", "name": "mine",
                                                            "episode_ids": [eid]}).status_code == 200
    builder = wordle.Builder(config="manual_dir", data_dir=str(data_dir / "built"))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        manual_dir=str(data_dir / "exports" / "mine")))
    [example] = list(tfds.as_numpy(builder.as_dataset(split="train")))
    assert example["episode_id"].decode() == eid and example["policy"].decode() == "human:exp"
    assert [s["action"].decode() for s in example["steps"]] == ["abide", "crane", ""]
    assert client.get("/api/datasets").json()["datasets"]["built"] == "tfds"
    listed = client.get("/api/datasets/built/episodes").json()["episodes"]
    assert [e["episode_id"] for e in listed] == [eid]
    shown = client.get("/api/datasets/built/episode", params={"episode_id": eid}).json()
    assert [r["guess"] for r in shown["rows"]] == ["abide", "crane"] and shown["rows"][1]["colours"] == [2] * 5
    response = client.post(f"/api/sessions/{sid}/annotate", json={"dataset": "built", "episode_id": eid, "step": 0,
                                                                  "text": "opening"})
    assert response.status_code == 200, response.text
    shown = client.get("/api/datasets/built/episode", params={"episode_id": eid}).json()
    assert [n["text"] for n in shown["annotations"]] == ["opening"] and len(shown["steps"]) == 3
    assert shown["metadata"]["answer"] == "crane" and shown["steps"][1]["observation"] == "🟨⬛⬛⬛🟩"


def test_a_killed_server_loses_at_most_the_game_in_progress(data_dir):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "trainers.cli.main", "web", "--data-dir", str(data_dir),
                             "--port", str(port)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        assert "127.0.0.1" in proc.stdout.readline()  # says where it serves and how to expose it
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url + "/api/tasks", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and proc.poll() is None, "server did not start"
                time.sleep(0.2)
        tokens: dict[str, str] = {}
        with send_tokens(httpx.Client(base_url=url, timeout=10), tokens) as client:
            sid = open_session(client, "kim", answer="crane")
            play(client, sid, ["abide", "crane"])
            play(client, sid, ["crane"])
            play(client, sid, ["abide"])  # in progress when the server dies
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    episodes = list(read_episodes(data_dir / "human" / "wordle" / sid))
    assert [[s["action"] for s in e["steps"]] for e in episodes] == [["abide", "crane", ""], ["crane", ""]]
    # A restarted server reopens the session: the person carries on, in a new game folder.
    with send_tokens(TestClient(create_app(data_dir), base_url=LOCAL), tokens) as client:
        lost = client.post(f"/api/sessions/{sid}/play/act", json={"action": "crane"})
        assert lost.status_code == 409 and f"game human-{sid}-00002 was lost" in lost.json()["detail"]
        assert client.get(f"/api/sessions/{sid}/play").json()["lost"] == f"human-{sid}-00002"
        state = play(client, sid, ["crane"])
        assert state["episode_id"] == f"human-{sid}-00003" and state["won"]
    assert len(list(read_episodes(data_dir / "human" / "wordle" / sid))) == 3


def test_the_load_check_plays_every_task_concurrently_and_finds_none_lost_or_mixed():
    out = subprocess.run([sys.executable, "bench/web_load.py", "--clients", "3", "--games", "2", "--seconds", "60"],
                         cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr[-2000:]
    for task, noun in [("wordle", "games"), ("reddit", "replies"), ("visdial", "dialogues")]:
        assert f"{task}: 3 clients, 6 {noun}" in out.stdout and f"{noun}/s" in out.stdout
        assert f"{task} read back: 6 episodes for 6 {noun} finished; problems (lost or mixed): 0" in out.stdout
        assert f"{task} other clients' tokens refused: 3 of 3" in out.stdout
    assert out.stdout.count("p95") == 3


def test_judging_runs_out_of_pairs_and_draws_other_tasks_as_transcripts(client, data_dir):
    from rlds_lang.replay import ReplayEnv, ReplayPolicy, ScriptedEpisode

    eps = [ScriptedEpisode(observations=["hi", "bye"], actions=["hello"], rewards=[1.0])]
    record(ReplayEnv(eps), ReplayPolicy(eps), episodes=1, data_dir=data_dir / "chat", run_name="chat", progress=False)
    sid = open_session(client, "ivy")
    seen = set()
    for _ in range(3):  # 3 expert episodes: 3 unordered pairs of distinct clips
        pair = client.post(f"/api/sessions/{sid}/judge/next", json={"left": "expert", "right": "expert"}).json()
        seen.add(frozenset([pair["left"]["clip_id"], pair["right"]["clip_id"]]))
        assert client.post(f"/api/sessions/{sid}/judge", json={"pair_id": pair["pair_id"], "label": "skip"}).status_code == 200
    assert len(seen) == 3
    response = client.post(f"/api/sessions/{sid}/judge/next", json={"left": "expert", "right": "expert"})
    assert response.status_code == 404 and "no unjudged pair left" in response.text
    response = client.post(f"/api/sessions/{sid}/judge/next", json={"left": "chat", "right": "chat"})
    assert response.status_code == 404  # one episode: no pair of distinct clips
    pair = client.post(f"/api/sessions/{sid}/judge/next", json={"left": "chat", "right": "expert"}).json()
    assert pair["left"]["kind"] == "text" and pair["right"]["kind"] == "board"
    assert pair["left"]["rows"] == [{"step": 0, "observation": "hi", "action": "hello", "reward": 1.0},
                                    {"step": 1, "observation": "bye", "action": "", "reward": 0.0}]
    shown = client.get("/api/datasets/chat/episode", params={"episode_id": "chat-00000000"}).json()
    assert shown["kind"] == "text" and shown["rows"][0] == {"step": 0, "observation": "hi", "action": "hello"}


def test_a_torn_last_game_log_is_reported_lost_and_the_server_still_starts(data_dir):
    tokens: dict[str, str] = {}
    with send_tokens(TestClient(create_app(data_dir), base_url=LOCAL), tokens) as client:
        sid = open_session(client, "tom", answer="crane")
        play(client, sid, ["crane"])
    torn = data_dir / "human" / "wordle" / sid / "game_00001"
    torn.mkdir()
    (torn / "metadata.riegeli").write_bytes(b"torn by a crash")
    with send_tokens(TestClient(create_app(data_dir), base_url=LOCAL), tokens) as client:
        assert client.get(f"/api/sessions/{sid}/play").json()["lost"] == f"human-{sid}-00001"
        assert play(client, sid, ["crane"])["episode_id"] == f"human-{sid}-00002"
