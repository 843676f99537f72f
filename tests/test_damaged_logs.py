"""Fault injection into EnvLogger log directories: every Riegeli file of a closed log emptied, cut, cut at a
chunk boundary, cut to its header, overwritten with garbage or deleted (a whole shard folder too) must give a
``DamagedLogError`` naming the log directory and the file, never a smaller dataset or a bare
``TypeError``/``INTERNAL`` from EnvLogger's C++ reader: with our writer's manifest (``log_manifest.json``), and
without it (folders of EnvLogger's own writer, or of older versions of ours), where the record counts show it.
``docs/guides/damaged_input.md`` ("EnvLogger logs") describes what the readers do; this module checks it.
"""

from __future__ import annotations

import gc
import glob
import json
import os
import re
import shutil
import struct

import dm_env
import envlogger
import numpy as np
import pytest
from dm_env import specs

from loggers import DamagedLogError, dataset_metadata, log_dirs, read_episodes, record
from loggers.highway_hash import highway_hash64, riegeli_hash
from loggers.log_folder import MANIFEST
from loggers.preferences import read_preference_logs, record_judgements
from loggers.preferences_dataset import read_judgements
from loggers.riegeli_files import SHARD_FILES, check_shards, count_records, find_damage
from loggers.writer import DurableRiegeliWriter
from rlds_lang.preferences.labellers import SyntheticLabeller, judge
from rlds_lang.preferences.segments import Segmenter
from rlds_lang.wordle.env import WordleEnv
from tests.scripted import ScriptedWordle

WORDS = ["crane", "slate", "moist", "abide", "fight", "zesty"]
EPISODES, STEPS_PER_GAME = 5, 7  # the scripted player needs six guesses: 7 EnvLogger steps a game


@pytest.fixture(autouse=True)
def collect_half_built_readers():
    """Runs the garbage collector after each test: EnvLogger's ``Reader`` that failed in ``__init__`` on a damaged
    file is kept by a reference cycle of the exception's frames, and its ``__del__`` fails; collected later, inside
    another test's ``ast.parse``, CPython 3.11 raised ``SystemError: AST constructor recursion depth mismatch``."""
    yield
    gc.collect()


@pytest.fixture(scope="module")
def wordle_logs(tmp_path_factory) -> str:
    """A closed Wordle log folder of five games."""
    root = tmp_path_factory.mktemp("wordle") / "logs"
    record(WordleEnv(seed=4), ScriptedWordle(WORDS), EPISODES, root, seed=100, run_name="t", progress=False)
    return str(root)


def _copy(source: str, tmp_path, manifest: bool = True) -> tuple[str, str, str]:
    """``(root, log directory, shard)`` of a copy of ``source`` (one log directory of one shard); without its
    ``manifest``, it is a folder as EnvLogger's own writer (or an older version of ours) leaves it."""
    root = str(tmp_path / "copy")
    shutil.copytree(source, root)
    (log_dir,) = glob.glob(os.path.join(root, "chunk_*"))
    (shard,) = [entry.path for entry in os.scandir(log_dir) if entry.is_dir()]
    if not manifest:
        os.remove(os.path.join(log_dir, MANIFEST))
    return root, log_dir, shard


def _chunk_boundaries(path: str) -> list[int]:
    """Every length at which ``path`` could be cut into a shorter Riegeli file that checks out."""
    data = open(path, "rb").read()
    cuts = []
    for size in range(65, len(data)):
        with open(path + ".cut", "wb") as f:
            f.write(data[:size])
        try:
            count_records(path + ".cut")
        except DamagedLogError:
            continue
        cuts.append(size)
    os.remove(path + ".cut")
    return cuts


def _damage(path: str, how: str) -> None:
    data = open(path, "rb").read()
    middle = len(data) // 2
    damaged = {"empty": b"", "half": data[:middle], "last_bytes_cut": data[:-3], "header_only": data[:64],
               "garbage": data[:middle] + bytes(range(7, 47)) + data[middle + 40:]}[how]
    with open(path, "wb") as f:
        f.write(damaged)


def test_highway_hash_gives_the_published_vectors():
    key = (0x0706050403020100, 0x0F0E0D0C0B0A0908, 0x1716151413121110, 0x1F1E1D1C1B1A1918)
    assert [highway_hash64(bytes(range(n)), key) for n in range(3)] == [
        0x907A56DE22C26E53, 0x7EAB43AAC7CDDD78, 0xB8D0569AB0B53D62]


def test_an_intact_log_checks_out_and_reads_whole(wordle_logs, tmp_path):
    _, log_dir, shard = _copy(wordle_logs, tmp_path)
    counts = check_shards(log_dir, verify_data=True)  # every checksum of every file, data included
    assert counts == {os.path.basename(shard): {"steps.riegeli": EPISODES * STEPS_PER_GAME, "step_offsets.riegeli": 1,
                                                "episode_index.riegeli": 2, "episode_metadata.riegeli": EPISODES}}
    episodes = list(read_episodes(log_dir))
    assert [e["episode_id"] for e in episodes] == [f"t-{i:08d}" for i in range(EPISODES)]
    assert dataset_metadata(log_dir)["run_name"] == "t"


#: every (file, damage) pair but one: a metadata file cut to its header (next test).
DAMAGES = [(name, how) for name in SHARD_FILES + ("metadata.riegeli",)
           for how in ("empty", "half", "last_bytes_cut", "garbage", "header_only")
           if (name, how) != ("episode_metadata.riegeli", "header_only")]


@pytest.mark.parametrize("manifest", [True, False], ids=["manifest", "no-manifest"])
@pytest.mark.parametrize("name, how", DAMAGES)
def test_every_damaged_file_is_refused_naming_the_folder_and_the_file(wordle_logs, tmp_path, name, how, manifest):
    root, log_dir, shard = _copy(wordle_logs, tmp_path, manifest)
    path = os.path.join(log_dir if name == "metadata.riegeli" else shard, name)
    _damage(path, how)
    with pytest.raises(DamagedLogError) as caught:
        list(read_episodes(root))
    message = str(caught.value)
    assert message.startswith(f"{log_dir}: ") and name in message and len(message) < 400


def test_an_episode_metadata_file_cut_to_its_header_reads_like_a_log_without_episode_metadata(wordle_logs, tmp_path):
    """What EnvLogger writes when no episode has metadata is this very file: in a folder without our manifest (one
    EnvLogger wrote) the steps are all kept, and the readers that need a metadata field name it
    (``clip_from_episode``); our manifest shows the cut."""
    root, log_dir, shard = _copy(wordle_logs, tmp_path, manifest=False)
    _damage(os.path.join(shard, "episode_metadata.riegeli"), "header_only")
    episodes = list(read_episodes(root))
    assert [len(e["steps"]) for e in episodes] == [STEPS_PER_GAME] * EPISODES
    assert all("episode_id" not in e for e in episodes)
    shutil.rmtree(root)
    root, log_dir, shard = _copy(wordle_logs, tmp_path)
    _damage(os.path.join(shard, "episode_metadata.riegeli"), "header_only")
    with pytest.raises(DamagedLogError, match=r"episode_metadata\.riegeli: 64 bytes, but its recorder closed it at "):
        list(read_episodes(root))


@pytest.mark.parametrize("manifest, pattern", [
    (True, r"episode_index\.riegeli: 0 bytes, but its recorder closed it at \d+ \(log_manifest\.json\)"),
    (False, r"episode_index\.riegeli: empty \(0 bytes\)")], ids=["manifest", "no-manifest"])
def test_an_empty_episode_index_is_refused_not_read_as_no_episode(wordle_logs, tmp_path, manifest, pattern):
    root, log_dir, shard = _copy(wordle_logs, tmp_path, manifest)
    _damage(os.path.join(shard, "episode_index.riegeli"), "empty")
    with pytest.raises(DamagedLogError, match=pattern):
        list(read_episodes(root))


@pytest.mark.parametrize("manifest, name, pattern", [
    (False, "episode_index.riegeli", r"episode_index\.riegeli: indexed episode 3 holds the steps of 2 episodes"),
    (False, "episode_metadata.riegeli", r"episode_metadata\.riegeli: holds 4 episode metadata records, EnvLogger's "
                                        r"reader finds 4 and none for finished episode 4"),
    (True, "episode_index.riegeli", r"episode_index\.riegeli: [\d,]+ bytes, but its recorder closed it at "),
    (True, "episode_metadata.riegeli", r"episode_metadata\.riegeli: [\d,]+ bytes, but its recorder closed it at "),
])
def test_an_index_file_cut_at_a_chunk_boundary_is_refused(wordle_logs, tmp_path, manifest, name, pattern):
    """A Riegeli file cut between two chunks is a valid, shorter file: only the manifest, or the counts, show the
    loss."""
    root, log_dir, shard = _copy(wordle_logs, tmp_path, manifest)
    path = os.path.join(shard, name)
    cut = _chunk_boundaries(path)[-1]
    os.truncate(path, cut)
    with pytest.raises(DamagedLogError, match=pattern):
        list(read_episodes(root))


def test_a_deleted_dataset_metadata_file_is_refused_naming_it_not_read_as_no_folder(wordle_logs, tmp_path):
    """``log_dirs`` found log directories by their ``metadata.riegeli``: without it the folder vanished from the
    dataset without a word. A folder holding our manifest, a journal or EnvLogger's shard folders is a log
    directory, and its missing file is named."""
    for manifest in (True, False):
        root, log_dir, _ = _copy(wordle_logs, tmp_path, manifest)
        os.remove(os.path.join(log_dir, "metadata.riegeli"))
        assert log_dirs(root) == [log_dir]
        with pytest.raises(DamagedLogError, match=rf"^{re.escape(log_dir)}: metadata\.riegeli: missing"):
            list(read_episodes(root))
        shutil.rmtree(root)


def test_a_deleted_shard_folder_is_refused_naming_it(wordle_logs, tmp_path):
    root, log_dir, shard = _copy(wordle_logs, tmp_path)
    shutil.rmtree(shard)
    name = os.path.basename(shard)
    with pytest.raises(DamagedLogError, match=rf"^{re.escape(log_dir)}: {name}/\w+\.riegeli: missing \(its recorder "
                                              r"closed this folder with it"):
        list(read_episodes(root))


def test_a_shard_no_manifest_lists_is_refused(wordle_logs, tmp_path):
    root, log_dir, shard = _copy(wordle_logs, tmp_path)
    shutil.copytree(shard, os.path.join(log_dir, "20990101T000000000000"))
    with pytest.raises(DamagedLogError, match=r"20990101T000000000000/steps\.riegeli: not written by this folder's "
                                              r"recorder"):
        list(read_episodes(root))


@pytest.mark.parametrize("text, pattern", [
    (b"", r"log_manifest\.json: damaged \(Expecting value"),
    (b'{"format": "rlds-lang log directory 1", "state": "closed"}', r"log_manifest\.json: damaged \('files'\)"),
    (b'{"format": "other", "state": "closed"}', r"log_manifest\.json: damaged \(unknown format"),
])
def test_a_damaged_manifest_is_refused_naming_it(wordle_logs, tmp_path, text, pattern):
    root, log_dir, _ = _copy(wordle_logs, tmp_path)
    with open(os.path.join(log_dir, MANIFEST), "wb") as f:
        f.write(text)
    with pytest.raises(DamagedLogError, match=pattern):
        list(read_episodes(root))


def test_a_manifest_whose_episode_count_differs_is_refused(wordle_logs, tmp_path):
    root, log_dir, _ = _copy(wordle_logs, tmp_path)
    path = os.path.join(log_dir, MANIFEST)
    manifest = json.load(open(path))
    manifest["episodes"] += 1
    json.dump(manifest, open(path, "w"))
    with pytest.raises(DamagedLogError, match=rf"episode_index\.riegeli: indexes {EPISODES} episodes, but its recorder "
                                              rf"closed this folder with {EPISODES + 1}"):
        list(read_episodes(root))


def test_garbage_in_the_steps_data_names_the_steps_file_not_a_type_error(wordle_logs, tmp_path):
    root, log_dir, shard = _copy(wordle_logs, tmp_path)
    _damage(os.path.join(shard, "steps.riegeli"), "garbage")
    check_shards(log_dir)  # headers intact: only the data checksum shows it
    with pytest.raises(DamagedLogError, match=r"steps\.riegeli: damaged data in the chunk at byte 64") as caught:
        list(read_episodes(root))
    assert isinstance(caught.value.__cause__, (TypeError, RuntimeError))  # what EnvLogger's reader raised


def test_find_damage_quotes_the_reader_when_every_checksum_holds(wordle_logs, tmp_path):
    _, log_dir, _ = _copy(wordle_logs, tmp_path)
    error = find_damage(log_dir, RuntimeError("INTERNAL: Failed to parse riegeli record."))
    assert str(error) == (f"{log_dir}: EnvLogger's reader failed although every file's checksums hold: "
                          "RuntimeError: INTERNAL: Failed to parse riegeli record.")


def test_a_damaged_dataset_metadata_file_is_named_when_only_the_metadata_is_read(wordle_logs, tmp_path):
    _, log_dir, _ = _copy(wordle_logs, tmp_path)
    _damage(os.path.join(log_dir, "metadata.riegeli"), "header_only")
    with pytest.raises(DamagedLogError, match=r"metadata\.riegeli: holds no record"):
        dataset_metadata(log_dir)


def _judgements(n_episodes: int = 4) -> list:
    clips = []
    for e in range(n_episodes):
        segmenter = Segmenter(segment_length=2)
        clips += segmenter.start_episode(f"start {e}", f"g{e}")
        for t in range(4):
            clips += segmenter.step(f"a{t}", float(t + e), f"o{t}", last=t == 3)
    labeller = SyntheticLabeller(seed=0)
    return [judge(labeller, clips[i], clips[j], "random") for i in range(len(clips)) for j in range(i + 1, len(clips))]


def test_a_preference_session_with_a_cut_step_index_is_refused_not_half_read(tmp_path):
    """A session flushes every judgement: its step index is many chunks, and cutting half of them away left a
    valid file that EnvLogger's reader read as half the judgements."""
    want = _judgements()
    record_judgements(tmp_path / "logs", want, session_id="s", labeller="synthetic")
    assert len(list(read_judgements(tmp_path / "logs", "all"))) == len(want)
    (offsets,) = glob.glob(str(tmp_path / "logs" / "**" / "sessions" / "**" / "step_offsets.riegeli"), recursive=True)
    cuts = _chunk_boundaries(offsets)
    assert len(cuts) > 10
    os.truncate(offsets, cuts[len(cuts) // 2])
    with pytest.raises(DamagedLogError, match=r"step_offsets\.riegeli: [\d,]+ bytes, but its recorder closed it at "):
        list(read_preference_logs(tmp_path / "logs"))
    (manifest,) = glob.glob(str(tmp_path / "logs" / "**" / "sessions" / "**" / MANIFEST), recursive=True)
    os.remove(manifest)  # as EnvLogger's own writer would have left it: the counts show the cut
    with pytest.raises(DamagedLogError, match=r"step_offsets\.riegeli indexes \d+ steps but .*steps\.riegeli holds "
                                              rf"{len(want) + 1}: one of them is damaged"):
        list(read_preference_logs(tmp_path / "logs"))


class _BigTextEnv(dm_env.Environment):
    """Steps of incompressible text, so that a flushed step is a chunk of tens of KiB crossing 64 KiB blocks."""

    def __init__(self, steps: int, size: int):
        self._steps, self._size, self._t = steps, size, 0
        self._rng = np.random.default_rng(0)

    def _text(self) -> str:
        return self._rng.bytes(self._size).hex()

    def reset(self) -> dm_env.TimeStep:
        self._t = 0
        return dm_env.restart(self._text())

    def step(self, action) -> dm_env.TimeStep:
        self._t += 1
        return dm_env.termination(1.0, self._text()) if self._t == self._steps else dm_env.transition(0.0, self._text())

    def observation_spec(self):
        return specs.StringArray(())

    def action_spec(self):
        return specs.StringArray(())


def test_chunks_across_block_boundaries_are_walked_and_checked(tmp_path):
    env = _BigTextEnv(steps=12, size=12_000)  # 24,000 hex characters a step: 12 chunks over ~4 blocks
    with envlogger.EnvLogger(env, data_directory=str(tmp_path), backend=DurableRiegeliWriter,
                             flush_scheduler=lambda _: True) as logged:
        for _ in range(2):
            timestep = logged.reset()
            while not timestep.last():
                timestep = logged.step("go")
    (steps_file,) = glob.glob(str(tmp_path / "*" / "steps.riegeli"))
    assert os.path.getsize(steps_file) > 3 * (1 << 16)
    assert count_records(steps_file, verify_data=True) == 26
    assert [len(e["steps"]) for e in read_episodes(tmp_path)] == [13, 13]
    with open(steps_file, "r+b") as f:  # one byte of the third block's data
        f.seek(2 * (1 << 16) + 1000)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(DamagedLogError, match=r"steps\.riegeli: damaged data in the chunk at byte "):
        list(read_episodes(tmp_path))


def test_a_damaged_chunk_header_is_named_by_its_checksum(wordle_logs, tmp_path):
    """A flipped bit in a header field nothing else checks (the decoded size of the steps chunk)."""
    root, _, shard = _copy(wordle_logs, tmp_path)
    with open(os.path.join(shard, "steps.riegeli"), "r+b") as f:
        f.seek(64 + 32)  # the chunk at byte 64: hash, data size, data hash, type and records, then decoded size
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x01]))
    with pytest.raises(DamagedLogError, match=r"steps\.riegeli: damaged chunk header at byte 64 \(checksum mismatch\)"):
        list(read_episodes(root))


def test_a_killed_recorders_cut_files_are_skipped_with_a_warning_and_wrong_bytes_refused(wordle_logs, tmp_path,
                                                                                        caplog):
    """A journal still there marks a recorder that was killed: in a folder of an older writer (a journal without
    its checkpoint, no manifest), files cut short are what a kill leaves, so the journal's episodes are read and
    the warning names the file; bytes a checksum refuses are no kill's doing. (Killed folders of today's writer:
    tests/test_killed_logs.py.)"""
    root, log_dir, shard = _copy(wordle_logs, tmp_path, manifest=False)
    open(os.path.join(log_dir, "episodes.journal"), "wb").close()
    _damage(os.path.join(shard, "step_offsets.riegeli"), "last_bytes_cut")
    assert list(read_episodes(root)) == []
    assert "step_offsets.riegeli: truncated" in caplog.text
    shutil.rmtree(root)
    root, log_dir, shard = _copy(wordle_logs, tmp_path, manifest=False)
    open(os.path.join(log_dir, "episodes.journal"), "wb").close()
    _damage(os.path.join(shard, "steps.riegeli"), "garbage")
    with pytest.raises(DamagedLogError, match=r"steps\.riegeli: damaged data in the chunk at byte 64"):
        list(read_episodes(root))


def _chunk_header(chunk_type: bytes, records: int, data: bytes = b"") -> bytes:
    rest = struct.pack("<QQQQ", len(data), riegeli_hash(data), chunk_type[0] | records << 8, 0)
    return struct.pack("<Q", riegeli_hash(rest)) + rest


def test_a_chunk_of_many_records_ends_past_the_block_header_it_reaches(tmp_path):
    """A chunk takes at least one byte per record, and no chunk begins inside or right after a block header: a
    chunk at byte 64 of 65,477 records reaches byte 65,541, inside the block header at 65,536, so the next
    chunk begins at 65,561 (the format's rule, on a file built here)."""
    block_header = struct.pack("<QQ", 65_536 - 64, 65_561 - 65_536)
    block_header = struct.pack("<Q", riegeli_hash(block_header)) + block_header
    signature = _chunk_header(b"s", 0)
    first_block = struct.pack("<Q", riegeli_hash(struct.pack("<QQ", 0, 64))) + struct.pack("<QQ", 0, 64)
    data = first_block + signature + _chunk_header(b"r", 65_477)
    data += bytes(65_536 - len(data)) + block_header + bytes(1) + _chunk_header(b"p", 0)
    assert len(data) == 65_561 + 40
    path = tmp_path / "many.riegeli"
    path.write_bytes(data)
    assert count_records(path, verify_data=True) == 65_477
