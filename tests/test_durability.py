"""loggers.durability / journal / writer: when finished episodes are committed under each setting, and how the
reader recovers a killed log directory from the journal (torn tail, duplicates after a close, stock reader).
The SIGKILL trials themselves are in tests/test_loggers.py."""

import collections
import os
import shutil
import time

import dm_env
import envlogger
import numpy as np
import pytest
from envlogger import step_data

from loggers.durability import PER_EPISODE, Durability
from loggers.journal import JOURNAL, read_journal
from loggers.reader import TORN_FRAME, read_log_dir
from loggers.riegeli_files import DamagedLogError
from loggers.writer import DurableRiegeliWriter


def _log_episode(writer, n, turns=2):
    """Logs episode ``n``: ``turns`` actions, metadata with the last step (as EnvLogger's episode_fn gives it)."""
    obs = lambda t: {"text": f"é{n}-{t} 🟩", "turn": np.int32(t)}  # noqa: E731
    writer.record_step(step_data.StepData(dm_env.restart(obs(0)), None, None), True)
    for t in range(1, turns + 1):
        timestep = dm_env.termination(0.0, obs(t)) if t == turns else dm_env.transition(-1.0, obs(t), 1.0)
        writer.record_step(step_data.StepData(timestep, f"guess {n}.{t}", {"valid": True}), False)
    writer.set_episode_metadata({"episode_id": f"ep{n}", "seed": np.int64(n)})


def _committed(path):
    contents = read_journal(str(path))
    return sorted(contents.episodes) if contents is not None else []


def test_per_episode_commits_each_episode_when_it_ends(tmp_path):
    writer = DurableRiegeliWriter(str(tmp_path), durability=PER_EPISODE, metadata={})
    for n in range(3):
        _log_episode(writer, n)
        assert _committed(tmp_path) == list(range(n + 1))
    episodes = list(read_log_dir(tmp_path))  # the writer is still open: what a SIGKILL now would leave
    assert [e["episode_id"] for e in episodes] == ["ep0", "ep1", "ep2"]
    assert [s["action"] for s in episodes[1]["steps"]] == ["guess 1.1", "guess 1.2", ""]
    assert episodes[2]["steps"][0]["observation"]["text"] == "é2-0 🟩"
    writer.close()
    assert not (tmp_path / JOURNAL).exists()
    assert [e["episode_id"] for e in read_log_dir(tmp_path)] == ["ep0", "ep1", "ep2"]


def test_group_commit_waits_for_n_episodes(tmp_path):
    writer = DurableRiegeliWriter(str(tmp_path), durability=Durability.group(episodes=3, milliseconds=None),
                                  metadata={})
    for n in range(2):
        _log_episode(writer, n)
    assert _committed(tmp_path) == []
    _log_episode(writer, 2)
    assert _committed(tmp_path) == [0, 1, 2]
    _log_episode(writer, 3)
    assert _committed(tmp_path) == [0, 1, 2]
    writer.close()  # close indexes the waiting episode too
    assert [e["episode_id"] for e in read_log_dir(tmp_path)] == ["ep0", "ep1", "ep2", "ep3"]


def test_group_commit_commits_an_episode_waiting_longer_than_its_time_limit_at_the_next_step(tmp_path):
    writer = DurableRiegeliWriter(str(tmp_path), durability=Durability.group(episodes=1000, milliseconds=30),
                                  metadata={})
    _log_episode(writer, 0)
    assert _committed(tmp_path) == []
    time.sleep(0.04)
    writer.record_step(step_data.StepData(dm_env.restart({"text": "", "turn": np.int32(0)}), None, None), True)
    assert _committed(tmp_path) == [0]
    writer.close()


def test_a_checkpoint_flushes_envloggers_files_and_empties_the_journal(tmp_path):
    writer = DurableRiegeliWriter(str(tmp_path), durability=Durability(checkpoint_episodes=2), metadata={})
    for n in range(3):
        _log_episode(writer, n)
    assert _committed(tmp_path) == [2]  # 0 and 1 were indexed when episode 2 began
    with envlogger.Reader(data_directory=str(tmp_path)) as reader:  # the stock reader sees the flushed episodes
        assert [m["episode_id"] for m in reader.episode_metadata()[:2]] == ["ep0", "ep1"]
    assert [e["episode_id"] for e in read_log_dir(tmp_path)] == ["ep0", "ep1", "ep2"]
    writer.close()


def _three_committed(path):
    """``(writer, journal path, journal bytes)`` of an open writer that committed episodes 0-2."""
    writer = DurableRiegeliWriter(str(path), metadata={})
    for n in range(3):
        _log_episode(writer, n)
    return writer, path / JOURNAL, (path / JOURNAL).read_bytes()


def test_a_torn_journal_tail_loses_only_the_torn_episode_and_counts_it(tmp_path):
    writer, journal, whole = _three_committed(tmp_path)
    last = len(whole) - whole.rindex(b"RLJ1")  # the last frame's length
    for cut in (1, 9, last - 13, last - 4, last - 1):  # the write of the last frame cut short anywhere in it
        journal.write_bytes(whole[:-cut])
        rejections = collections.Counter()
        assert [e["episode_id"] for e in read_log_dir(tmp_path, rejections=rejections)] == ["ep0", "ep1"], cut
        assert rejections == {TORN_FRAME: 1}
    journal.write_bytes(whole + whole[-last:-last + 20])  # a group commit's write cut inside its second frame
    assert [e["episode_id"] for e in read_log_dir(tmp_path)] == ["ep0", "ep1", "ep2"]
    journal.write_bytes(whole)
    writer.close()


def test_a_changed_byte_in_the_last_journal_frame_is_damage_not_a_torn_tail(tmp_path):
    """A kill cuts a write short; it never leaves a whole-length frame with other bytes."""
    writer, journal, whole = _three_committed(tmp_path)
    journal.write_bytes(whole[:-1] + bytes([whole[-1] ^ 1]))
    at = whole.rindex(b"RLJ1")
    with pytest.raises(DamagedLogError, match=rf"{JOURNAL}: damaged frame at byte {at:,} "):
        list(read_log_dir(tmp_path))
    journal.write_bytes(whole)
    writer.close()


def test_a_journal_left_beside_closed_files_adds_no_duplicate(tmp_path):
    # killed after EnvLogger's files were closed but before the journal was removed
    writer = DurableRiegeliWriter(str(tmp_path), metadata={})
    for n in range(3):
        _log_episode(writer, n)
    shutil.copy(tmp_path / JOURNAL, tmp_path / "kept")
    writer.close()
    os.replace(tmp_path / "kept", tmp_path / JOURNAL)
    assert [e["episode_id"] for e in read_log_dir(tmp_path)] == ["ep0", "ep1", "ep2"]


def test_an_episode_without_metadata_is_committed_when_the_next_begins(tmp_path):
    writer = DurableRiegeliWriter(str(tmp_path), metadata={})
    writer.record_step(step_data.StepData(dm_env.restart({"text": "a"}), None, None), True)
    writer.record_step(step_data.StepData(dm_env.termination(0.0, {"text": "b"}), "x", None), False)
    assert _committed(tmp_path) == []
    writer.record_step(step_data.StepData(dm_env.restart({"text": "c"}), None, None), True)
    assert _committed(tmp_path) == [0]
    assert [[s["observation"]["text"] for s in e["steps"]] for e in read_log_dir(tmp_path)] == [["a", "b"]]
    writer.close()


@pytest.mark.parametrize("kwargs, message", [
    ({"episodes": 0}, "episodes must be an integer >= 1"),
    ({"milliseconds": -1.0}, "milliseconds must be a finite number >= 0"),
    ({"milliseconds": float("inf")}, "milliseconds must be a finite number >= 0"),
    ({"checkpoint_episodes": 0}, "checkpoint_episodes must be an integer >= 1"),
])
def test_bad_durability_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Durability(**kwargs)


def test_loss_bounds_are_stated():
    assert PER_EPISODE.loss_bound() == "at most the episode in flight"
    assert Durability.group(episodes=100, milliseconds=250).loss_bound() == (
        "the episode in flight and at most 99 finished episodes, and none that ended more than 250 ms before the "
        "last logged step")
