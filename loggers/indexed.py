"""The episodes EnvLogger's own files of a log directory index, read with EnvLogger's reader and checked.

EnvLogger's C++ reader trusts its files: a cut or empty index makes it return fewer steps or episodes without a
word, a damaged file gives ``TypeError``/``INTERNAL`` naming none. So:

* a closed log directory (``closed_episodes``) is checked first (``loggers.riegeli_files.check_shards``, and
  against its manifest when it has one), and what the reader returns must account for every step and metadata
  record on disk;
* a log directory whose recorder was killed (``killed_episodes``) holds files that may end in a part chunk.
  Its journal's checkpoint says how far they were flushed and checked: a file shorter than that, or missing, is
  damage no kill leaves (``DamagedLogError`` naming it); files the reader cannot read as they are, are read as
  the checkpoint left them (copies cut to its sizes), with a warning naming them. Directories killed under
  older writers (no checkpoint) are read as before: files cut short count as empty, with a warning.

Every problem is a ``DamagedLogError`` naming the log directory and the file.
"""

from __future__ import annotations

import logging
import os
import tempfile
from typing import Any

import envlogger

from loggers.journal import JOURNAL, Checkpoint
from loggers.log_folder import MANIFEST, check_closed_files, snapshot
from loggers.riegeli_files import (EPISODE_INDEX, EPISODE_METADATA, LOG_METADATA, SHARD_FILES, STEP_OFFSETS, STEPS,
                                   DamagedLogError, check_shards, find_damage, shards)

#: what EnvLogger's reader raises on files it cannot read.
_READER_ERRORS = (RuntimeError, ValueError, OSError, TypeError)


def _read(path: str, files: dict[str, dict[str, int]] | None = None) -> tuple[list[list[Any]], list[Any]]:
    """``(episodes' steps, their metadata)`` as EnvLogger's reader gives them for the log directory ``path``
    (checked against ``files``, the records on disk, when given); without an index, its steps as one piece."""
    with envlogger.Reader(data_directory=path) as reader:
        if files is not None:
            _check_steps(path, files, len(reader.steps))
        metadata = list(reader.episode_metadata())
        indexed = [list(raw) for raw in reader.episodes]
        if files is not None:
            _check_episodes(path, files, indexed, metadata)
        if not indexed:  # killed before the first episode was indexed: its flushed steps are all there is
            steps = list(reader.steps)
            indexed, metadata = ([steps], [None]) if steps else ([], [])
    return indexed, metadata


def closed_episodes(path: str, manifest: dict[str, Any] | None) -> tuple[list[list[Any]], list[Any]]:
    """The indexed episodes and metadata of a closed log directory, its files checked (against its ``manifest``
    too, when its recorder left one) and required to agree with what EnvLogger's reader returns."""
    if manifest is not None:
        check_closed_files(path, manifest)
    files = check_shards(path)
    try:
        indexed, metadata = _read(path, files)
    except DamagedLogError:
        raise
    except _READER_ERRORS as error:
        raise find_damage(path, error) from error
    if manifest is not None and len(indexed) != manifest["episodes"]:
        raise DamagedLogError(f"{path}: {_named(files, EPISODE_INDEX)}: indexes {len(indexed):,} episodes, but its "
                              f"recorder closed this folder with {manifest['episodes']:,} ({MANIFEST})")
    return indexed, metadata


def _check_checkpoint_files(path: str, checkpoint: Checkpoint, journaled: bool) -> bool:
    """Refuses a killed log directory whose files are shorter than its recorder's last checked flush left them
    (a kill never shortens a file); False when there is nothing to read (killed before EnvLogger started)."""
    if not os.path.exists(os.path.join(path, LOG_METADATA)):
        if checkpoint.files or journaled:
            raise DamagedLogError(f"{path}: {LOG_METADATA}: missing (its recorder had written it: the journal holds "
                                  "episodes)", cut=True)
        return False
    for rel, size in checkpoint.files.items():
        where = os.path.join(path, rel)
        found = os.path.getsize(where) if os.path.exists(where) else None
        if found is None or found < size:
            state = "missing" if found is None else f"{found:,} bytes"
            raise DamagedLogError(f"{path}: {rel}: {state}, but its recorder had flushed and checked {size:,} bytes "
                                  f"of it ({JOURNAL}'s checkpoint): a kill never shortens a flushed file: damaged",
                                  cut=True)
    return True


def killed_episodes(path: str, checkpoint: Checkpoint, journaled: bool) -> tuple[list[list[Any]], list[Any]]:
    """The indexed episodes and metadata of a log directory whose recorder was killed, its journal's
    ``checkpoint`` saying what its files held at the last checked flush (``journaled``: the journal holds
    episodes). They must index at least the checkpoint's episodes, else ``DamagedLogError`` naming the files."""
    if not _check_checkpoint_files(path, checkpoint, journaled):
        return [], []
    try:
        indexed, metadata = _read(path)
        if _episodes_in(indexed) >= checkpoint.episodes:
            return indexed, metadata
        problem = f"they index {_episodes_in(indexed):,} episodes"
    except _READER_ERRORS as error:
        problem = f"{type(error).__name__}: {str(error)[:200]}"
    grown = [rel for shard in shards(path) for rel in (f"{shard}/{name}" for name in SHARD_FILES)
             if os.path.exists(os.path.join(path, rel)) and
             os.path.getsize(os.path.join(path, rel)) > checkpoint.files.get(rel, 0)]
    logging.warning("%s: EnvLogger's files of this killed recorder cannot be read as they are (%s); reading them as "
                    "its last checked flush left them (%s cut back to it) and the journal", path, problem,
                    ", ".join(grown) or "none")
    with tempfile.TemporaryDirectory(prefix="rlds-lang-checkpoint-") as tmp:
        copy = os.path.join(tmp, "log")
        snapshot(path, checkpoint.files, copy)
        try:
            indexed, metadata = _read(copy) if checkpoint.files else ([], [])
        except _READER_ERRORS as error:
            damage = find_damage(copy, error)
            raise DamagedLogError(str(damage).replace(copy, path)) from error
    if _episodes_in(indexed) < checkpoint.episodes:
        raise DamagedLogError(f"{path}: {', '.join(r for r in checkpoint.files if r.endswith(EPISODE_INDEX))}: index "
                              f"{_episodes_in(indexed):,} episodes, but its recorder had flushed and checked "
                              f"{checkpoint.episodes:,} ({JOURNAL}'s checkpoint): damaged")
    return indexed, metadata


def _episodes_in(indexed: list[list[Any]]) -> int:
    """The episodes the indexed pieces hold (an index entry may hold the first steps of an unindexed next one)."""
    return sum(1 for raw in indexed for step in raw if step.timestep.first())


def older_killed_episodes(path: str) -> tuple[list[list[Any]], list[Any]]:
    """The indexed episodes and metadata of a log directory killed under an older writer (its journal has no
    checkpoint): files EnvLogger's reader cannot open because one is cut short count as empty, with a warning
    naming the file; a file with wrong bytes is a ``DamagedLogError``."""
    try:
        return _read(path)
    except _READER_ERRORS as error:
        damage = find_damage(path, error)
        if not damage.cut:  # a kill leaves files short, never wrong
            raise damage from error
        logging.warning("%s: EnvLogger's files of this killed recorder cannot be read (%s); reading its journal "
                        "only", path, damage)
        return [], []


def _named(files: dict[str, dict[str, int]], name: str) -> str:
    return ", ".join(f"{shard}/{name}" for shard in files) or name


def _check_steps(path: str, files: dict[str, dict[str, int]], indexed_steps: int) -> None:
    """Refuses a closed log directory whose step index does not list every step on disk (EnvLogger's reader
    would silently return fewer)."""
    on_disk = sum(counts[STEPS] for counts in files.values())
    if indexed_steps != on_disk:
        raise DamagedLogError(f"{path}: {_named(files, STEP_OFFSETS)} indexes {indexed_steps:,} steps but "
                              f"{_named(files, STEPS)} holds {on_disk:,}: one of them is damaged (cut?)")


def _check_episodes(path: str, files: dict[str, dict[str, int]], indexed: list[list[Any]],
                    metadata: list[Any]) -> None:
    """Refuses a closed log directory whose episode index or episode metadata does not account for every step
    and metadata record on disk (EnvLogger's reader would silently return fewer episodes, or none's metadata)."""
    on_disk = sum(counts[STEPS] for counts in files.values())
    covered = sum(len(raw) for raw in indexed)
    if covered != on_disk:
        raise DamagedLogError(f"{path}: {_named(files, EPISODE_INDEX)}: its {len(indexed):,} episodes hold {covered:,} "
                              f"of the {on_disk:,} steps on disk: the episode index is damaged")
    for number, raw in enumerate(indexed):
        starts = sum(step.timestep.first() for step in raw)
        if starts > 1:
            raise DamagedLogError(f"{path}: {_named(files, EPISODE_INDEX)}: indexed episode {number:,} holds the steps "
                                  f"of {starts:,} episodes: the episode index is damaged")
    stored = sum(counts[EPISODE_METADATA] for counts in files.values())
    found = sum(meta is not None for meta in metadata)
    lacking = [n for n, (raw, meta) in enumerate(zip(indexed, metadata)) if meta is None and raw[-1].timestep.last()]
    if found != stored or (found and lacking):
        raise DamagedLogError(f"{path}: {_named(files, EPISODE_METADATA)}: holds {stored:,} episode metadata records, "
                              f"EnvLogger's reader finds {found:,}" + (f" and none for finished episode {lacking[0]:,}"
                                                                       if found and lacking else "") +
                              ": the episode metadata is damaged")


__all__ = ["closed_episodes", "killed_episodes", "older_killed_episodes"]
