"""creator_web's own writes under faults: a version or an export appears whole or not at all, whatever kills it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from creator_web.app import create_app
from creator_web.server import free_port
from creator_web.storage import PARTIAL, DataDir, write_whole
from loggers import live, read_episodes, record
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import OptimalPolicy
from tests.web_helpers import LOCAL, send_tokens

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture()
def data_dir(tmp_path) -> Path:
    """A data folder holding one small recorded dataset (``expert``, 3 optimal games)."""
    record(WordleEnv(), OptimalPolicy(), episodes=3, data_dir=tmp_path / "expert", run_name="expert", progress=False)
    return tmp_path


def _open(client) -> str:
    response = client.post("/api/sessions", json={"annotator": "ann", "task": "wordle", "config": {}})
    assert response.status_code == 200, response.text
    return response.json()["session_id"]


def _annotate(client, sid: str, text: str, eid: str = "expert-00000001") -> httpx.Response:
    return client.post(f"/api/sessions/{sid}/annotate", json={"dataset": "expert", "episode_id": eid, "text": text})


def _export(client, sid: str, name: str) -> httpx.Response:
    ids = [f"expert-0000000{k}" for k in range(3)]
    return client.post(f"/api/sessions/{sid}/export", json={"dataset": "expert", "name": name, "episode_ids": ids})


def _dead_pid() -> int:
    """The id of a process that has ended."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_folder_written_whole_is_absent_until_it_is_complete(tmp_path):
    final = tmp_path / "exports" / "picked"
    with write_whole(str(final)) as partial:
        (Path(partial) / "e00000").mkdir()
        (Path(partial) / "e00000" / "metadata.riegeli").write_bytes(b"x" * 10)
        assert not final.exists() and Path(partial).name.startswith(PARTIAL)
    assert (final / "e00000" / "metadata.riegeli").read_bytes() == b"x" * 10
    assert os.listdir(tmp_path / "exports") == ["picked"]
    with pytest.raises(FileExistsError, match="picked exists already"):
        with write_whole(str(final)):
            pass
    with pytest.raises(RuntimeError, match="disk on fire"):
        with write_whole(str(tmp_path / "exports" / "other")) as partial:
            (Path(partial) / "half").write_bytes(b"half")
            raise RuntimeError("disk on fire")
    assert os.listdir(tmp_path / "exports") == ["picked"]  # no trace of the failed write


def test_what_a_killed_write_left_is_never_listed_and_is_removed_on_start(data_dir):
    dead, other = _dead_pid(), os.getppid()  # a gone writer, and a live process that is not this one
    left = [data_dir / "exports" / f"{PARTIAL}picked.{dead}.ab12cd34" / "e00000",
            data_dir / "versions" / "expert" / "expert-00000001" / f"{PARTIAL}v0000.{dead}.0f0f0f0f",
            data_dir / "exports" / f"{PARTIAL}busy.{other}.00000000" / "e00000"]
    for folder in left:
        folder.mkdir(parents=True)
        (folder / "metadata.riegeli").write_bytes(b"")
        (folder / "episodes.journal").write_bytes(b"")
    data = DataDir(data_dir)
    assert not left[0].parent.exists() and not left[1].exists()
    assert left[2].exists()  # another live process may be writing it: kept, but not listed
    usable, damaged = data.listing()
    assert usable == {"expert": "raw"} and damaged == {}


def test_a_failed_annotation_or_export_leaves_nothing_and_a_retry_works(data_dir, monkeypatch):
    original, calls = live.LiveEpisode.step, []

    def fails_once(self, action, step_metadata=None):
        calls.append(action)
        if len(calls) == 4:  # inside the second episode of an export, the first step of an annotation
            raise OSError(28, "No space left on device")
        return original(self, action, step_metadata)

    with send_tokens(TestClient(create_app(data_dir), base_url=LOCAL, raise_server_exceptions=False)) as client:
        sid = _open(client)
        monkeypatch.setattr(live.LiveEpisode, "step", fails_once)
        assert _export(client, sid, "picked").status_code == 500
        assert "exports/picked" not in client.get("/api/datasets").json()["datasets"]
        assert not (data_dir / "exports" / "picked").exists()
        calls[:] = [None, None, None]
        assert _annotate(client, sid, "first").status_code == 500
        assert not (data_dir / "versions" / "expert" / "expert-00000001").exists() or \
            not os.listdir(data_dir / "versions" / "expert" / "expert-00000001")
        shown = client.get("/api/datasets/expert/episode", params={"episode_id": "expert-00000001"})
        assert shown.status_code == 200 and shown.json()["annotations"] == []
        assert _annotate(client, sid, "again").status_code == 200
        assert _export(client, sid, "picked").status_code == 200
    assert len(list(read_episodes(data_dir / "exports" / "picked"))) == 3


def test_a_damaged_version_is_a_named_409_not_a_500(data_dir):
    torn = data_dir / "versions" / "expert" / "expert-00000001" / "v0000"
    torn.mkdir(parents=True)
    (torn / "metadata.riegeli").write_bytes(b"")  # what a server before atomic writes left when killed
    (torn / "episodes.journal").write_bytes(b"")
    with send_tokens(TestClient(create_app(data_dir), base_url=LOCAL)) as client:
        sid = _open(client)
        shown = client.get("/api/datasets/expert/episode", params={"episode_id": "expert-00000001"})
        assert shown.status_code == 409
        assert "versions/expert/expert-00000001/v0000" in shown.json()["detail"]
        assert _annotate(client, sid, "note").status_code == 409


class _Server:
    """``tests/paused_web_server.py`` on ``data_dir`` in a subprocess, pausing at ``pause_at`` (a LiveEpisode step)."""

    def __init__(self, data_dir: Path, pause_at: int | None = None):
        self.port, self.mark = free_port(), data_dir.parent / f"paused-{time.monotonic_ns()}"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        if pause_at is not None:
            env.update(PAUSE_AT_STEP=str(pause_at), PAUSE_MARK=str(self.mark))
        self.proc = subprocess.Popen([sys.executable, "tests/paused_web_server.py", "--data-dir", str(data_dir),
                                      "--port", str(self.port)], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(self.url + "/api/tasks", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and self.proc.poll() is None, "server did not start"
                time.sleep(0.1)

    def kill_when_paused(self, request) -> None:
        """Sends ``request`` (a callable) in a thread, SIGKILLs the server once it pauses inside the write."""
        import threading

        thread = threading.Thread(target=lambda: pytest.raises(httpx.TransportError, request), daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not self.mark.exists():
            assert time.monotonic() < deadline and self.proc.poll() is None, "the server never reached the pause"
            time.sleep(0.02)
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        thread.join(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def test_a_server_killed_while_it_saves_an_annotation_or_an_export_leaves_neither(data_dir):
    tokens: dict[str, str] = {}
    steps = [len(e["steps"]) - 1 for e in read_episodes(data_dir / "expert")]  # LiveEpisode.step calls per episode
    server = _Server(data_dir, pause_at=1)  # the first step of the annotation's version
    try:
        with send_tokens(httpx.Client(base_url=server.url, timeout=10), tokens) as client:
            sid = _open(client)
            server.kill_when_paused(lambda: _annotate(client, sid, "lost with the server"))
        server = _Server(data_dir, pause_at=steps[0] + 1)  # the first step of the export's second episode
        with send_tokens(httpx.Client(base_url=server.url, timeout=10), tokens) as client:
            shown = client.get("/api/datasets/expert/episode", params={"episode_id": "expert-00000001"})
            assert shown.status_code == 200 and shown.json()["annotations"] == []
            server.kill_when_paused(lambda: _export(client, sid, "picked"))
        server = _Server(data_dir)
        with send_tokens(httpx.Client(base_url=server.url, timeout=10), tokens) as client:
            assert "exports/picked" not in client.get("/api/datasets").json()["datasets"]
            assert _annotate(client, sid, "kept").status_code == 200
            response = _export(client, sid, "picked")  # the name of the killed export is free
            assert response.status_code == 200, response.text
            assert client.get("/api/datasets").json()["datasets"]["exports/picked"] == "raw"
    finally:
        server.stop()
    assert sorted(os.listdir(data_dir / "exports")) == ["picked"]
    assert os.listdir(data_dir / "versions" / "expert" / "expert-00000001") == ["v0000"]
    exported = list(read_episodes(data_dir / "exports" / "picked"))
    assert len(exported) == 3 and '"kept"' in exported[1]["annotations"]
