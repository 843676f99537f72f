"""Reading EnvLogger (Riegeli) logs back as RLDS episodes.

EnvLogger stores (timestep, action that led to it) pairs; RLDS wants SAR steps. ``read_log_dir``
re-aligns them: step i holds observation o_i, the action a_i taken from it, and the reward and discount
that action earned; the last step holds the final observation with the neutral action ``""`` and reward
and discount 0.0 (``is_terminal`` when the environment terminated). Text comes back as ``str``,
whatever container Riegeli decoded it into.

The files of a closed log directory are checked before they are read (``loggers.riegeli_files``) and must
agree with what EnvLogger's reader returns: a damaged one is a ``DamagedLogError`` naming the directory and
the file, never a shorter read (``docs/guides/damaged_input.md``).
"""

from __future__ import annotations

import logging
import os
from typing import Any, Iterator

import envlogger
import numpy as np

from loggers.journal import read_journal
from loggers.riegeli_files import (EPISODE_INDEX, EPISODE_METADATA, STEP_OFFSETS, STEPS, DamagedLogError,
                                    check_log_metadata, check_shards, find_damage)
from loggers.writer import read_unindexed
from rlds_lang.schema import map_nested, neutral_like, text_leaf


def log_dirs(root: str | os.PathLike) -> list[str]:
    """Every EnvLogger log directory (one holding ``metadata.riegeli``) under ``root``, sorted."""
    root = os.fspath(root)
    if not os.path.isdir(root):
        raise FileNotFoundError(f"{root}: no such log folder")
    found = [path for path, _, files in os.walk(root) if "metadata.riegeli" in files]
    return sorted(found)


def dataset_metadata(path: str | os.PathLike) -> dict[str, Any]:
    """The dataset-level metadata of the log directory ``path`` (what its recorder gave EnvLogger); a damaged
    ``metadata.riegeli`` (or a shard EnvLogger's reader cannot open) is a ``DamagedLogError`` naming the file."""
    path = os.fspath(path)
    check_log_metadata(path)
    try:
        with envlogger.Reader(data_directory=path) as reader:
            return dict(reader.metadata() or {})
    except (RuntimeError, ValueError, OSError, TypeError) as error:
        raise find_damage(path, error) from error


def _clean(value: Any) -> Any:
    return map_nested(text_leaf, value)


def _scalar(value: Any) -> float:
    return 0.0 if value is None else float(np.asarray(value))


def _rlds_steps(raw: list[Any]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for i, current in enumerate(raw):
        meta = _clean(current.custom_data) if isinstance(current.custom_data, dict) else {}
        step = {"observation": _clean(current.timestep.observation), "is_first": i == 0, **meta}
        if i + 1 < len(raw):
            nxt = raw[i + 1]
            step.update(action=_clean(nxt.action), reward=_scalar(nxt.timestep.reward),
                        discount=_scalar(nxt.timestep.discount), is_last=False, is_terminal=False)
        else:
            terminal = bool(current.timestep.last() and _scalar(current.timestep.discount) == 0.0)
            template = raw[1].action if len(raw) > 1 else ""
            step.update(action=neutral_like(_clean(template)), reward=0.0, discount=0.0,
                        is_last=True, is_terminal=terminal)
        steps.append(step)
    return steps


def _riegeli_episodes(path: str, killed: bool) -> tuple[list[list[Any]], list[Any]]:
    """The indexed episodes of a log directory's Riegeli files and their metadata. Those of a killed recorder
    (``killed``: its journal is still there) that EnvLogger's reader cannot open because a file is cut short
    count as empty, with a warning naming the file; a file with wrong bytes is a ``DamagedLogError`` there too.
    A closed directory's files must be whole and agree (``_check_steps``, ``_check_episodes``); a damaged one is
    a ``DamagedLogError`` naming the file."""
    files = None if killed else check_shards(path)
    try:
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
    except DamagedLogError:
        raise
    except (RuntimeError, ValueError, OSError, TypeError) as error:  # a damaged file, or one torn by a kill
        damage = find_damage(path, error)
        if not killed or not damage.cut:  # a kill leaves files short, never wrong
            raise damage from error
        logging.warning("%s: EnvLogger's files of this killed recorder cannot be read (%s); reading its journal "
                        "only", path, damage)
        return [], []
    return indexed, metadata


def _named(files: dict[str, dict[str, int]], name: str) -> str:
    return ", ".join(f"{shard}/{name}" for shard in files)


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


def read_log_dir(path: str | os.PathLike, include_unfinished: bool = False) -> Iterator[dict[str, Any]]:
    """Yields the RLDS episodes (``{"steps": [...], **episode_metadata}``) of one log directory.

    An episode whose last logged step does not end it was in flight when its recorder stopped (a
    crash, or a run closed mid-episode); it is skipped with a warning unless ``include_unfinished``.
    A finished episode the index lacks (its recorder was killed before EnvLogger's files were flushed)
    comes from the writer's journal (``loggers.journal``), whose frames are whole and checksummed, or, in
    directories of older writers, takes its metadata from their side file (``loggers.writer.UNINDEXED_EPISODES``).
    """
    path = os.fspath(path)
    journal = read_journal(path)
    unindexed = read_unindexed(path)
    indexed, metadata = _riegeli_episodes(path, killed=journal is not None or bool(unindexed))
    journal = journal or {}
    ordinal = -1  # episodes of this log directory so far: the journal's key
    end = 0  # steps of this log directory up to the current piece's end
    for index, raw in enumerate(indexed):
        # After a crash the index may lack the last started episode, whose first steps then trail the
        # previous episode: split at every restart so each piece is one episode.
        for piece_no, piece in enumerate(_split_at_restarts(raw)):
            ordinal += 1
            end += len(piece)
            if ordinal in journal:
                committed = journal.pop(ordinal)
                yield _episode(committed.steps, committed.metadata)
                continue
            finished = piece[-1].timestep.last()
            own = metadata[index] if piece_no == 0 else None
            if (piece_no > 0 or own is None) and finished and end in unindexed:
                own, piece_no = unindexed[end], 0
            if piece_no > 0 or not finished:
                if not include_unfinished:
                    logging.warning("%s: episode %d%s has %d steps and %s; skipped", path, index,
                                    f" (piece {piece_no})" if piece_no else "", len(piece),
                                    "no metadata" if finished else "no last step (recording stopped)")
                    continue
            yield _episode(piece, own)
    for ordinal in sorted(journal):
        yield _episode(journal[ordinal].steps, journal[ordinal].metadata)


def _episode(raw: list[Any], metadata: Any) -> dict[str, Any]:
    episode = dict(_clean(metadata or {}))
    episode["steps"] = _rlds_steps(raw)
    return episode


def _split_at_restarts(raw: list[Any]) -> list[list[Any]]:
    pieces: list[list[Any]] = []
    for step in raw:
        if not pieces or step.timestep.first():
            pieces.append([])
        pieces[-1].append(step)
    return pieces


def read_episodes(root: str | os.PathLike, include_unfinished: bool = False) -> Iterator[dict[str, Any]]:
    """Yields the RLDS episodes of every log directory under ``root``, in directory order."""
    for path in log_dirs(root):
        yield from read_log_dir(path, include_unfinished)
