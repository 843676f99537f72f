"""Fault injection into the log directories of killed recorders: the journal (a changed byte anywhere, emptied,
deleted), EnvLogger's files (cut at a chunk boundary, emptied, deleted, a whole shard folder), and an episode
whose metadata a kill kept from EnvLogger's files. A kill only cuts a write short: anything else is an error
naming the file (and the frame or byte), and an episode that was never committed is skipped and counted, never
returned without its metadata nor dropped without a word.

A killed folder here is what an open writer leaves on disk (a copy taken while it writes), as a SIGKILL would:
tests/test_loggers.py kills real recorders.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import struct

import dm_env
import numpy as np
import pytest
from envlogger import step_data

from loggers import DamagedLogError, log_dirs, read_episodes
from loggers.durability import Durability
from loggers.journal import JOURNAL, read_journal
from loggers.log_folder import MANIFEST
from loggers.reader import NO_METADATA, TORN_FRAME, UNFINISHED, read_log_dir
from loggers.tfds_examples import SchemaMismatchError, episode_to_example, examples_from_log_dir
from loggers.writer import DurableRiegeliWriter
from rlds_lang.schema import TaskSchema

EPISODES = 12
#: the common episode metadata these tests' episodes lack (they log only an id and a seed).
_COMMON = {"task": "t", "policy": "p", "policy_params": "{}"}
_HEADER = struct.Struct("<4sII")


def _log_episode(writer: DurableRiegeliWriter, n: int) -> None:
    obs = lambda t: {"text": f"é{n}-{t}", "turn": np.int32(t)}  # noqa: E731
    writer.record_step(step_data.StepData(dm_env.restart(obs(0)), None, None), True)
    writer.record_step(step_data.StepData(dm_env.transition(-1.0, obs(1), 1.0), f"a{n}", {"valid": True}), False)
    writer.record_step(step_data.StepData(dm_env.termination(0.0, obs(2)), f"b{n}", {"valid": True}), False)
    writer.set_episode_metadata({"episode_id": f"ep{n}", "seed": np.int64(n)})


def _killed(tmp_path_factory, name: str, durability: Durability, episodes: int = EPISODES, flush_after: bool = False
            ) -> str:
    """A killed log directory: ``episodes`` episodes logged by an open writer (then, with ``flush_after``, the first
    step of the next one and a flush of EnvLogger's files that no checkpoint checked), copied as it stands."""
    live = str(tmp_path_factory.mktemp(name) / "live")
    os.makedirs(live)
    writer = DurableRiegeliWriter(live, durability=durability, metadata={})
    for n in range(episodes):
        _log_episode(writer, n)
    if flush_after:
        writer.record_step(step_data.StepData(dm_env.restart({"text": "next", "turn": np.int32(0)}), None, None), True)
        writer._data_writer.flush()  # what EnvLogger's own chunking, or a caller's flush_scheduler, writes
    kept = live + "-killed"
    shutil.copytree(live, kept)
    writer.close()
    return kept


@pytest.fixture(scope="module")
def journaled(tmp_path_factory) -> str:
    """Twelve episodes, none flushed: all are in the journal only."""
    return _killed(tmp_path_factory, "journaled", Durability())


@pytest.fixture(scope="module")
def checkpointed(tmp_path_factory) -> str:
    """Twelve episodes with a checkpoint every five: 0-9 are in EnvLogger's checked files (checkpoints at the start
    of 5 and 10), 10 and 11 in the journal, then a flush no checkpoint checked."""
    return _killed(tmp_path_factory, "checkpointed", Durability(checkpoint_episodes=5), flush_after=True)


def _copy(source: str, tmp_path) -> tuple[str, str]:
    """``(log directory, its shard)`` of a copy of ``source``."""
    target = str(tmp_path / "log")
    shutil.copytree(source, target)
    (shard,) = [entry.path for entry in os.scandir(target) if entry.is_dir()]
    return target, shard


def _ids(path: str, rejections=None) -> list[str]:
    return [e["episode_id"] for e in read_log_dir(path, rejections=rejections)]


def _frames(data: bytes) -> list[int]:
    """The byte where each frame of a journal begins (its header first)."""
    starts, at = [], 0
    while at < len(data):
        starts.append(at)
        at += _HEADER.size + _HEADER.unpack_from(data, at)[1]
    return starts


def test_the_killed_folders_read_whole(journaled, checkpointed):
    every = [f"ep{n}" for n in range(EPISODES)]
    rejections = collections.Counter()
    assert _ids(journaled, rejections) == every and not rejections
    assert _ids(checkpointed, rejections) == every and rejections == {UNFINISHED: 1}  # the next one, begun
    contents = read_journal(checkpointed)
    assert contents.checkpoint.episodes == 10 and sorted(contents.episodes) == [10, 11]


@pytest.fixture(scope="module")
def short_journal(tmp_path_factory) -> str:
    """Four episodes, all in the journal only."""
    return _killed(tmp_path_factory, "short", Durability(), episodes=4)


def test_a_changed_byte_anywhere_in_a_journal_is_an_error_naming_the_frame_never_fewer_episodes(short_journal,
                                                                                                 tmp_path):
    """Every header byte of every frame and every 7th payload byte, changed: the journal is refused naming the
    file and the byte of the damaged frame, or (a changed length of the last frame, which then runs past the end
    like a killed write's) that frame alone is dropped as a torn tail and counted."""
    log_dir, _ = _copy(short_journal, tmp_path)
    path = os.path.join(log_dir, JOURNAL)
    whole = open(path, "rb").read()
    starts = _frames(whole)
    positions = sorted({p for start in starts for p in range(start, start + _HEADER.size)} |
                       set(range(0, len(whole), 7)))
    outcomes = collections.Counter()
    for position in positions:
        damaged = bytearray(whole)
        damaged[position] ^= 0x20
        with open(path, "wb") as f:
            f.write(damaged)
        frame = max(start for start in starts if start <= position)
        try:
            contents = read_journal(log_dir)
        except DamagedLogError as error:
            message = str(error)
            assert message.startswith(f"{path}: damaged ") and (f"at byte {frame:,}" in message), (position, message)
            outcomes["refused"] += 1
            continue
        assert frame == starts[-1] and contents.torn_at == frame, position  # only the last frame can look torn
        assert sorted(contents.episodes) == [0, 1, 2]
        outcomes["torn tail"] += 1
    assert outcomes["refused"] >= len(positions) - 4, outcomes


def test_a_changed_byte_in_the_middle_of_a_journal_is_refused_by_the_reader_naming_it(journaled, tmp_path):
    log_dir, _ = _copy(journaled, tmp_path)
    path = os.path.join(log_dir, JOURNAL)
    whole = bytearray(open(path, "rb").read())
    middle = len(whole) // 2
    whole[middle] ^= 1
    open(path, "wb").write(whole)
    frame = max(start for start in _frames(bytes(whole)) if start <= middle)
    with pytest.raises(DamagedLogError, match=rf"^{re.escape(path)}: damaged frame at byte {frame:,} "):
        list(read_episodes(log_dir))


def test_a_missing_journal_frame_is_refused_naming_the_episode_due(journaled, tmp_path):
    """A whole frame cut out leaves checksums that hold: the ordinals show the gap."""
    log_dir, _ = _copy(journaled, tmp_path)
    path = os.path.join(log_dir, JOURNAL)
    whole = open(path, "rb").read()
    starts = _frames(whole)
    open(path, "wb").write(whole[:starts[3]] + whole[starts[4]:])
    with pytest.raises(DamagedLogError, match=rf"frame at byte {starts[3]:,} holds episode 3 where episode 2 was due"):
        list(read_log_dir(log_dir))


@pytest.mark.parametrize("how", ["emptied", "deleted", "older journal"])
def test_an_emptied_or_deleted_journal_is_refused_not_read_as_no_episode(journaled, tmp_path, how):
    """The manifest the writer leaves while it writes says a journal with its header must be there."""
    log_dir, _ = _copy(journaled, tmp_path)
    path = os.path.join(log_dir, JOURNAL)
    if how == "deleted":
        os.remove(path)
    else:
        data = open(path, "rb").read()
        open(path, "wb").write(b"" if how == "emptied" else data[_frames(data)[1]:])  # frames without the header
    pattern = "missing, but log_manifest.json says" if how == "deleted" else "bytes without the header"
    with pytest.raises(DamagedLogError, match=rf"^{re.escape(log_dir)}: {JOURNAL}: [\d,]*\s?{pattern}"):
        list(read_log_dir(log_dir))


def test_a_killed_folder_missing_its_dataset_metadata_file_is_refused(checkpointed, tmp_path):
    log_dir, _ = _copy(checkpointed, tmp_path)
    os.remove(os.path.join(log_dir, "metadata.riegeli"))
    assert log_dirs(str(tmp_path)) == [log_dir]
    with pytest.raises(DamagedLogError, match=rf"^{re.escape(log_dir)}: metadata\.riegeli: missing"):
        list(read_episodes(str(tmp_path)))


def test_a_killed_folder_left_with_its_journal_alone_is_refused_not_dropped(journaled, tmp_path):
    """Its dataset metadata file and its shard folder deleted: the journal (and manifest) still mark a log
    directory whose recorder had started writing."""
    log_dir, shard = _copy(journaled, tmp_path)
    os.remove(os.path.join(log_dir, "metadata.riegeli"))
    shutil.rmtree(shard)
    assert log_dirs(str(tmp_path)) == [log_dir]
    with pytest.raises(DamagedLogError, match=rf"^{re.escape(log_dir)}: metadata\.riegeli: missing"):
        list(read_episodes(str(tmp_path)))


def test_a_killed_folder_missing_a_shard_folder_is_refused_naming_its_files(checkpointed, tmp_path):
    log_dir, shard = _copy(checkpointed, tmp_path)
    shutil.rmtree(shard)
    with pytest.raises(DamagedLogError, match=rf"{os.path.basename(shard)}/\w+\.riegeli: missing, but its recorder had "
                                              r"flushed and checked [\d,]+ bytes"):
        list(read_log_dir(log_dir))


def _boundaries(path: str) -> list[int]:
    """Every size at which ``path`` ends on a whole chunk (a valid, shorter Riegeli file)."""
    from loggers.riegeli_files import count_records

    data, cuts = open(path, "rb").read(), []
    for size in range(65, len(data)):
        open(path + ".cut", "wb").write(data[:size])
        try:
            count_records(path + ".cut")
            cuts.append(size)
        except DamagedLogError:
            pass
    os.remove(path + ".cut")
    return cuts


def test_step_offsets_cut_at_a_chunk_boundary_in_a_killed_folder(checkpointed, tmp_path, caplog):
    """Cut inside what the last checkpoint checked: an error naming the file (EnvLogger's reader said only
    ``TypeError: expected bytes, NoneType found``). Cut after it (what a kill during a flush leaves): what the
    checkpoint vouches for is read, the journal gives the rest, and the warning names the file."""
    contents = read_journal(checkpointed)
    (rel,) = [r for r in contents.checkpoint.files if r.endswith("step_offsets.riegeli")]
    checked = contents.checkpoint.files[rel]
    log_dir, shard = _copy(checkpointed, tmp_path)
    path = os.path.join(log_dir, rel)
    cuts = _boundaries(path)
    inside, after = [c for c in cuts if c < checked], [c for c in cuts if c >= checked]
    assert inside and after
    os.truncate(path, inside[-1])
    with pytest.raises(DamagedLogError, match=rf"^{re.escape(log_dir)}: {re.escape(rel)}: {inside[-1]:,} bytes, but "
                                              rf"its recorder had flushed and checked {checked:,} bytes"):
        list(read_log_dir(log_dir))
    shutil.copyfile(os.path.join(checkpointed, rel), path)
    os.truncate(path, after[0])
    assert _ids(log_dir) == [f"ep{n}" for n in range(EPISODES)]
    grown = [r for r, size in contents.checkpoint.files.items() if os.path.getsize(os.path.join(log_dir, r)) > size]
    assert grown and "cannot be read as they are" in caplog.text and all(r in caplog.text for r in grown)


def test_an_emptied_episode_metadata_file_in_a_killed_folder_is_refused(checkpointed, tmp_path):
    log_dir, shard = _copy(checkpointed, tmp_path)
    open(os.path.join(shard, "episode_metadata.riegeli"), "wb").close()
    with pytest.raises(DamagedLogError, match=r"episode_metadata\.riegeli: 0 bytes, but its recorder had flushed"):
        list(read_log_dir(log_dir))


@pytest.fixture(scope="module")
def uncommitted(tmp_path_factory) -> str:
    """Group commit of 10 with a checkpoint every 3 episodes: 0-2 checked at the start of 3; 3 and 4 finished but
    not committed when a flush began, killed after it wrote the episode index and before the metadata (the
    metadata file cut back to the checkpoint)."""
    log_dir = _killed(tmp_path_factory, "uncommitted", Durability.group(episodes=10, milliseconds=None,
                                                                          checkpoint_episodes=3),
                      episodes=5, flush_after=True)
    contents = read_journal(log_dir)
    (rel,) = [r for r in contents.checkpoint.files if r.endswith("episode_metadata.riegeli")]
    os.truncate(os.path.join(log_dir, rel), contents.checkpoint.files[rel])
    return log_dir


def test_an_uncommitted_episode_without_metadata_is_skipped_and_counted_not_returned_bare(uncommitted, caplog):
    rejections = collections.Counter()
    assert _ids(uncommitted, rejections) == ["ep0", "ep1", "ep2"]
    assert rejections == {NO_METADATA: 2, UNFINISHED: 1}
    assert f"{uncommitted}: episode 3 (3 steps): {NO_METADATA}; skipped" in caplog.text


def test_tfds_examples_of_a_folder_with_an_uncommitted_episode_hold_the_committed_ones(uncommitted):
    examples = list(examples_from_log_dir(uncommitted, TaskSchema(task="t"), defaults=_COMMON))
    assert [key for key, _ in examples] == ["ep0", "ep1", "ep2"]


def test_a_schema_mismatch_in_a_log_directory_names_the_directory(journaled):
    schema = TaskSchema(task="t", episode_metadata={"answer": str})
    with pytest.raises(SchemaMismatchError, match=rf"^{re.escape(journaled)}: episode ep0: metadata field 'answer' is "
                                                  "missing"):
        list(examples_from_log_dir(journaled, schema, defaults=_COMMON))
    with pytest.raises(SchemaMismatchError, match=r"^episode ep0: "):  # an episode alone has no directory to name
        episode_to_example(next(read_log_dir(journaled)), schema, defaults=_COMMON)


def test_a_killed_journal_with_a_torn_tail_counts_it(journaled, tmp_path):
    log_dir, _ = _copy(journaled, tmp_path)
    path = os.path.join(log_dir, JOURNAL)
    whole = open(path, "rb").read()
    open(path, "wb").write(whole[:-5])
    rejections = collections.Counter()
    assert _ids(log_dir, rejections) == [f"ep{n}" for n in range(EPISODES - 1)]
    assert rejections == {TORN_FRAME: 1}


def test_a_killed_folder_left_by_a_writer_killed_while_starting_reads_as_empty(tmp_path):
    """Killed after its journal was created, before EnvLogger wrote anything: nothing was recorded."""
    from loggers.journal import Checkpoint, Journal

    Journal(str(tmp_path), Checkpoint(0, 0, {})).close()
    assert log_dirs(str(tmp_path)) == [str(tmp_path)] and list(read_episodes(str(tmp_path))) == []
    assert not os.path.exists(tmp_path / MANIFEST)
