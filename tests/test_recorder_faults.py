"""The recorder when the machine misbehaves: a full disk, two writers in one folder, a killed parent.

A full disk is injected without a mount: the recording child (tests/fault_children.py) runs under a file size
limit (``RLIMIT_FSIZE``, SIGXFSZ ignored), so a write past it fails with EFBIG exactly where a full disk fails
with ENOSPC, in our journal's writes and in EnvLogger's C++ writer alike. Where this process may mount a small
tmpfs, the same recording also runs until the real disk is full. Each time the recording must stop with an
error naming the log directory, and every acknowledged episode must read back (``loggers.read_episodes``, and
the examples ``tfds build`` makes of the folder).
"""

from __future__ import annotations

import collections
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time

import envlogger
import pytest

from loggers import read_episodes, record
from loggers.folder_lock import FolderLock, FolderLockedError
from loggers.journal import JOURNAL, read_journal
from loggers.log_folder import MANIFEST, LogWriteError
from loggers.riegeli_files import shards
from loggers.tfds_examples import examples_from_log_dir
from rlds_lang.env import run_episode
from rlds_lang.schema import check_episode
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.schema import WORDLE_SCHEMA
from tests.fault_children import WORDS
from tests.scripted import ScriptedWordle
from tests.process_helpers import running

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = os.path.join(REPO, "tests", "fault_children.py")
_ENV = {**os.environ, "PYTHONPATH": REPO}


def _child(mode: str, arguments, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, CHILD, mode, json.dumps(arguments)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=REPO, env=_ENV, **kwargs)


def _full_disk_runs(runs: list[dict]) -> list[dict]:
    """What the full-disk child reports for each run (each recorded until a write failed)."""
    child = _child("full_disk", runs)
    out, _ = child.communicate(timeout=120)
    assert child.returncode == 0, out
    return [json.loads(line) for line in out.splitlines()]


def _read_back(data_dir: str, acknowledged: int) -> list[dict]:
    """Every episode of the folder, checked: episodes 0..n-1 in order, whole, with n >= ``acknowledged``."""
    episodes = list(read_episodes(data_dir))
    assert [e["episode_id"] for e in episodes] == [f"run-{i:08d}" for i in range(len(episodes))]
    assert len(episodes) >= acknowledged, (len(episodes), acknowledged)
    for i, episode in enumerate(episodes):
        check_episode(episode)
        played = run_episode(WordleEnv(seed=1, max_guesses=2), ScriptedWordle(WORDS), seed=i)
        assert [s["action"] for s in episode["steps"]] == played.actions + [""]
        assert [s["observation"]["text"] for s in episode["steps"]] == [o["text"] for o in played.observations]
    return episodes


def _log_dir(data_dir: str) -> str:
    (log_dir,) = [os.path.join(data_dir, name) for name in os.listdir(data_dir)]
    return log_dir


@pytest.fixture(scope="module")
def full_disk(tmp_path_factory, request) -> dict[str, tuple[str, dict]]:
    """Four recordings stopped by the file size limit: the journal's write fails first (checkpoints every 1,000
    episodes); EnvLogger's flush fails first (checkpoints every 3 episodes), per episode and with group commit;
    EnvLogger cannot even write its ``metadata.riegeli`` (616 bytes) at the start. In a memory-backed folder where
    there is one (/dev/shm): the size limit fails the same writes there, and the checkpoints' fsyncs cost nothing."""
    import pathlib
    import tempfile

    memory = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    root = pathlib.Path(tempfile.mkdtemp(prefix="full_disk-", dir=memory)) if memory else \
        tmp_path_factory.mktemp("full_disk")
    request.addfinalizer(lambda: shutil.rmtree(root, ignore_errors=True))
    runs = {"start": dict(limit=300, checkpoint=1000, episodes=1),
            "journal": dict(limit=30_000, checkpoint=1000, episodes=1),
            "flush": dict(limit=5_000, checkpoint=3, episodes=1),
            "flush-group": dict(limit=5_000, checkpoint=3, episodes=4)}
    specs = [dict(data_dir=str(root / name), **run) for name, run in runs.items()]
    return {name: (spec["data_dir"], report) for name, spec, report in zip(runs, specs, _full_disk_runs(specs))}


def test_a_full_journal_stops_the_recording_naming_the_folder_and_keeps_every_acknowledged_episode(full_disk):
    data_dir, report = full_disk["journal"]
    log_dir = _log_dir(data_dir)
    assert report["error"]["type"] == "LogWriteError" and report["error"]["errno"] == 27  # EFBIG: the size limit
    assert report["error"]["message"].startswith(f"{log_dir}: cannot append to {JOURNAL} (File too large): "
                                                 "recording stopped")
    assert report["acknowledged"] > 5
    _read_back(data_dir, report["acknowledged"])


def test_a_disk_too_full_for_envloggers_first_file_stops_the_recording_before_any_episode(full_disk):
    data_dir, report = full_disk["start"]
    log_dir = _log_dir(data_dir)
    assert report["error"]["type"] == "LogWriteError" and report["acknowledged"] == 0
    assert report["error"]["message"].startswith(f"{log_dir}: metadata.riegeli: truncated")
    assert "EnvLogger could not start writing" in report["error"]["message"]
    assert list(read_episodes(data_dir)) == []


@pytest.mark.parametrize("run", ["flush", "flush-group"])
def test_a_failed_envlogger_flush_stops_the_recording_naming_the_file_and_keeps_every_acknowledged_episode(
        full_disk, run):
    """EnvLogger's flush only logs its failure: the writer finds it by checking the files, keeps the journal (which
    holds every episode since the last good flush) and cuts EnvLogger's files back to that flush, so its own reader
    reads them too."""
    data_dir, report = full_disk[run]
    log_dir = _log_dir(data_dir)
    message = report["error"]["message"]
    assert report["error"]["type"] == "LogWriteError"
    assert message.startswith(f"{log_dir}: ") and ".riegeli: truncated: the " in message
    assert "EnvLogger's flush did not complete (disk full?)" in message
    # group commit too: the failed flush committed the finished episodes still waiting to the journal, which had room
    episodes = _read_back(data_dir, report["acknowledged"])
    journal = read_journal(log_dir)
    assert journal is not None and journal.torn_at is None  # kept, ending on a whole frame
    for rel, size in journal.checkpoint.files.items():
        assert os.path.getsize(os.path.join(log_dir, rel)) == size  # cut back to the last checked flush
    with envlogger.Reader(data_directory=log_dir) as reader:
        assert len(reader.episodes) == journal.checkpoint.episodes
    assert len(episodes) >= journal.checkpoint.episodes + len(journal.episodes)


def test_what_tfds_build_makes_of_a_full_disks_folder_holds_every_acknowledged_episode(full_disk):
    """The examples the ``manual_dir`` configs of our builders make of a log directory (``tests/test_loggers.py``
    builds a killed folder with ``tfds build`` itself)."""
    for run in ("journal", "flush"):
        data_dir, report = full_disk[run]
        ids = [key for key, _ in examples_from_log_dir(_log_dir(data_dir), WORDLE_SCHEMA)]
        assert ids == [f"run-{i:08d}" for i in range(len(ids))] and len(ids) >= report["acknowledged"]


def test_tfds_build_of_a_full_disks_folder_holds_every_acknowledged_episode(full_disk, tmp_path):
    from trainers.core.build import tfds_build
    from transforms.loading import load

    data_dir, report = full_disk["flush"]
    built = tfds_build("wordle_synthetic", "manual_dir", tmp_path / "tfds", manual_dir=data_dir, quiet=True)
    ids = sorted(ep["episode_id"].numpy().decode() for ep in load(built))
    assert ids == [f"run-{i:08d}" for i in range(len(ids))] and len(ids) >= report["acknowledged"]


def _mount_tmpfs(path, size: str) -> None:
    path.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        pytest.skip(f"cannot mount a tmpfs here ({error}); the file size limit tests above inject the same fault")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); the file size limit tests above inject the "
                    "same fault")


def test_a_real_full_disk_stops_the_recording_and_keeps_every_acknowledged_episode(tmp_path):
    """A 64 KiB tmpfs filled by the recording (skipped where mounting is not allowed)."""
    mount = tmp_path / "small"
    _mount_tmpfs(mount, "64k")
    try:
        (report,) = _full_disk_runs([dict(data_dir=str(mount / "logs"), limit=2 ** 40, checkpoint=10, episodes=1)])
        log_dir = _log_dir(str(mount / "logs"))
        assert report["error"]["type"] == "LogWriteError", report
        assert report["error"]["message"].startswith(f"{log_dir}: ")
        assert report["error"]["errno"] in (28, None)  # ENOSPC from our writes; None from EnvLogger's flush
        assert report["acknowledged"] > 100
        _read_back(str(mount / "logs"), report["acknowledged"])
    finally:
        subprocess.run(["umount", str(mount)], check=False, timeout=30)


def test_a_journal_write_cut_short_by_a_full_disk_is_cut_off_again(tmp_path, monkeypatch):
    """The OS write fails half way (ENOSPC): the part frame is cut off, so the journal still ends on a whole frame
    and the episodes committed before read back; the error names the folder and the journal."""
    import errno

    from loggers import journal as journal_module
    from loggers.journal import Checkpoint, Journal, frame

    journal = Journal(str(tmp_path), Checkpoint(0, 0, {}))
    journal.append(frame(0, [], b""))
    size = os.path.getsize(tmp_path / JOURNAL)
    real_write = os.write

    def full_disk(fd, data):
        if fd != journal._fd:
            return real_write(fd, data)
        real_write(fd, bytes(data[:len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal_module.os, "write", full_disk)
    with pytest.raises(LogWriteError, match=rf"^{tmp_path}: cannot append to {JOURNAL} \(No space left on device\)") \
            as caught:
        journal.append(frame(1, [], b"") + frame(2, [], b""))
    assert caught.value.errno == errno.ENOSPC
    monkeypatch.undo()
    journal.close()
    assert os.path.getsize(tmp_path / JOURNAL) == size
    contents = read_journal(str(tmp_path))
    assert sorted(contents.episodes) == [0] and contents.torn_at is None


def test_a_log_write_error_crosses_from_a_worker_process_whole():
    error = pickle.loads(pickle.dumps(LogWriteError("/x/chunk_00000: cannot append to episodes.journal", 28)))
    assert isinstance(error, OSError) and error.errno == 28
    assert str(error) == "/x/chunk_00000: cannot append to episodes.journal"


def test_a_writer_refuses_a_folder_another_writer_holds_naming_it_and_the_holders_pid(tmp_path):
    from loggers.writer import DurableRiegeliWriter

    first = DurableRiegeliWriter(str(tmp_path), metadata={})
    try:
        with pytest.raises(FolderLockedError, match=rf"^{tmp_path}: another writer \(pid {os.getpid()}\) is writing"):
            DurableRiegeliWriter(str(tmp_path), metadata={})
        assert os.path.getsize(tmp_path / JOURNAL) > 0  # the first writer's journal is untouched
    finally:
        first.close()
    with pytest.raises(FileExistsError, match=rf"^{tmp_path} already holds a log \({JOURNAL}|{MANIFEST}|"):
        DurableRiegeliWriter(str(tmp_path), metadata={})  # closed, the folder is still someone's log


def _line(child: subprocess.Popen, prefix: str, deadline: float = 60.0) -> str:
    """The next line ``child`` prints that starts with ``prefix`` (failing the test after ``deadline`` seconds)."""
    import select

    end = time.monotonic() + deadline
    while time.monotonic() < end:
        ready, _, _ = select.select([child.stdout], [], [], max(0.0, end - time.monotonic()))
        if ready:
            line = child.stdout.readline()
            if not line:
                pytest.fail(f"the child ended with code {child.wait()} before printing {prefix!r}")
            if line.startswith(prefix):
                return line.strip()
    pytest.fail(f"the child printed no {prefix!r} line in {deadline:.0f} s")


def test_a_second_record_into_a_folder_being_recorded_is_refused_and_a_killed_holder_releases_it(tmp_path):
    data_dir = tmp_path / "logs"
    holder = _child("hold", str(data_dir))
    try:
        pid = int(_line(holder, "recording").split()[1])
        _line(holder, "worker")  # its first game has begun: it holds the lock and has written into the folder
        with pytest.raises(FolderLockedError, match=rf"^{data_dir}: another writer \(pid {pid}\) is writing into this "
                                                    "folder; record refuses"):
            record(WordleEnv(), ScriptedWordle(["crane"]), 1, data_dir, progress=False)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    FolderLock(data_dir).release()  # the kernel released the dead holder's lock
    with pytest.raises(FileExistsError, match="is not empty"):  # and the folder is still refused: it holds a log
        record(WordleEnv(), ScriptedWordle(["crane"]), 1, data_dir, progress=False)


def test_two_records_started_together_never_share_a_folder(tmp_path):
    """Both found the folder empty before they wrote; now one records and the other is refused (by the lock, or,
    if it comes after, by what the first wrote)."""
    import threading

    barrier, outcomes = threading.Barrier(2), []

    def go(name: str) -> None:
        barrier.wait()
        try:
            record(WordleEnv(seed=1), ScriptedWordle(["crane", "slate"]), 6, tmp_path / "logs", run_name=name,
                   progress=False)
            outcomes.append("recorded")
        except (FolderLockedError, FileExistsError) as refused:
            outcomes.append(type(refused).__name__)

    threads = [threading.Thread(target=go, args=(name,)) for name in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(outcomes)[-1] == "recorded" and outcomes.count("recorded") == 1, outcomes
    episodes = list(read_episodes(tmp_path / "logs"))
    assert len(episodes) == 6 and len({e["episode_id"][0] for e in episodes}) == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads process states from /proc (Linux)")
def test_a_worker_dies_with_its_parent():
    """The initializer of record's workers, in a plain child of a plain child: SIGKILL the middle one."""
    workers_py = os.path.join(REPO, "loggers", "workers.py")  # loaded alone: no package import, a fast start
    script = ("import importlib.util, os, subprocess, sys, time\n"
              f"spec = importlib.util.spec_from_file_location('workers', {workers_py!r})\n"
              "workers = importlib.util.module_from_spec(spec); spec.loader.exec_module(workers)\n"
              "if sys.argv[1] == 'parent':\n"
              "    child = subprocess.Popen([sys.executable, '-c', sys.argv[2], 'child', str(os.getpid())])\n"
              "    print('child', child.pid, flush=True); time.sleep(60)\n"
              "else:\n"
              "    workers.die_with_parent(int(sys.argv[2])); time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", script, "parent", script], stdout=subprocess.PIPE, text=True)
    child = int(_line(parent, "child").split()[1])
    time.sleep(0.3)  # the child has set itself up
    assert running(child)
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=30)
    end = time.monotonic() + 5
    while running(child) and time.monotonic() < end:
        time.sleep(0.05)
    assert not running(child)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads process states from /proc (Linux)")
def test_killing_records_parent_ends_its_workers_and_their_writing(tmp_path):
    """record(workers=2) SIGKILLed: its two workers end within 2 s, and no episode is written after."""
    data_dir = tmp_path / "logs"
    parent = _child("parent", str(data_dir))
    workers = set()
    try:
        _line(parent, "parent")
        while len(workers) < 2:
            workers.add(int(_line(parent, "worker").split()[1]))
        time.sleep(0.5)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
    killed = time.monotonic()
    while any(map(running, workers)) and time.monotonic() < killed + 10:
        time.sleep(0.05)
    assert not any(map(running, workers)), f"workers alive {time.monotonic() - killed:.1f} s after their parent died"
    assert time.monotonic() - killed < 2.0
    sizes = {os.path.join(d, f): os.path.getsize(os.path.join(d, f))
             for d, _, files in os.walk(data_dir) for f in files}
    counted = collections.Counter()
    first = len(list(read_episodes(data_dir, rejections=counted)))
    time.sleep(1.0)
    assert {os.path.join(d, f): os.path.getsize(os.path.join(d, f))
            for d, _, files in os.walk(data_dir) for f in files} == sizes  # nothing written since
    assert first >= 2 and len(list(read_episodes(data_dir))) == first
    assert all(len(shards(os.path.join(data_dir, d))) == 1 for d in os.listdir(data_dir))
