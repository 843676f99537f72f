"""Reading EnvLogger (Riegeli) logs back as RLDS episodes.

EnvLogger stores (timestep, action that led to it) pairs; RLDS wants SAR steps. ``read_log_dir``
re-aligns them: step i holds observation o_i, the action a_i taken from it, and the reward and discount
that action earned; the last step holds the final observation with the neutral action ``""`` and reward
and discount 0.0 (``is_terminal`` when the environment terminated). Text comes back as ``str``,
whatever container Riegeli decoded it into.

The files of a closed log directory are checked before they are read (``loggers.indexed``, against the
writer's manifest where there is one) and must agree with what EnvLogger's reader returns; a killed one is read
from its files as far as its journal's checkpoint vouches for them, and from its journal. A damaged or missing
file is a ``DamagedLogError`` naming the directory and the file, never a shorter read
(``docs/guides/damaged_input.md``); an episode that was never committed (unfinished, or finished without its
metadata reaching any file) is skipped with a warning naming it, and counted by reason in ``rejections``.
"""

from __future__ import annotations

import collections
import logging
import os
from typing import Any, Iterator

import envlogger
import numpy as np

from loggers.indexed import closed_episodes, killed_episodes, older_killed_episodes
from loggers.journal import JOURNAL, JournalContents, read_journal
from loggers.log_folder import MANIFEST, read_manifest
from loggers.riegeli_files import LOG_METADATA, SHARD_FILES, DamagedLogError, check_log_metadata, find_damage
from loggers.writer import read_unindexed
from rlds_lang.schema import map_nested, neutral_like, text_leaf

#: the reasons ``read_log_dir`` counts in ``rejections``.
UNFINISHED = "unfinished episode (its recording stopped)"
NO_METADATA = "finished episode without metadata in EnvLogger's files or the journal (never committed)"
TORN_FRAME = "torn journal frame (a killed write)"


def log_dirs(root: str | os.PathLike) -> list[str]:
    """Every EnvLogger log directory under ``root``, sorted: each folder holding ``metadata.riegeli``, or any file
    only a log directory holds (a journal, a manifest, a shard folder of EnvLogger's files), so that one whose
    ``metadata.riegeli`` is missing is found, and refused by ``read_log_dir`` naming it."""
    root = os.fspath(root)
    if not os.path.isdir(root):
        raise FileNotFoundError(f"{root}: no such log folder")
    found = set()
    for path, _, files in os.walk(root):
        if any(name in files for name in (LOG_METADATA, JOURNAL, MANIFEST)):
            found.add(path)
        if any(name in files for name in SHARD_FILES) and os.path.normpath(path) != os.path.normpath(root):
            found.add(os.path.dirname(path))
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


def _indexed(path: str, manifest: dict[str, Any] | None,
             journal: JournalContents | None) -> tuple[list[list[Any]], list[Any]]:
    """The episodes EnvLogger's files of ``path`` index, read as its state says: closed (by its manifest, or with
    no journal at all), killed (a journal with a checkpoint), or killed under an older writer."""
    if manifest is not None and manifest["state"] == "closed":
        return closed_episodes(path, manifest)
    if manifest is not None:  # "open": its recorder did not close it, and left a journal with a checkpoint
        if journal is None:
            raise DamagedLogError(f"{path}: {JOURNAL}: missing, but {MANIFEST} says its recorder did not close this "
                                  "folder: the episodes the journal held are lost", cut=True)
        if journal.checkpoint is None:
            size = os.path.getsize(os.path.join(path, JOURNAL))
            raise DamagedLogError(f"{path}: {JOURNAL}: {size:,} bytes without the header its recorder writes first "
                                  "(emptied?): damaged", cut=True)
    if journal is not None and journal.checkpoint is not None:
        return killed_episodes(path, journal.checkpoint, bool(journal.episodes))
    if journal is not None or read_unindexed(path):
        return older_killed_episodes(path)
    return closed_episodes(path, None)


def _reject(path: str, what: str, reason: str, rejections: collections.Counter | None) -> None:
    logging.warning("%s: %s: %s; skipped", path, what, reason)
    if rejections is not None:
        rejections[reason] += 1


def read_log_dir(path: str | os.PathLike, include_unfinished: bool = False,
                 rejections: collections.Counter | None = None) -> Iterator[dict[str, Any]]:
    """Yields the RLDS episodes (``{"steps": [...], **episode_metadata}``) of one log directory.

    An episode whose last logged step does not end it was in flight when its recorder stopped (a
    crash, or a run closed mid-episode); it is skipped with a warning unless ``include_unfinished``.
    A finished episode the index lacks (its recorder was killed before EnvLogger's files were flushed)
    comes from the writer's journal (``loggers.journal``), whose frames are whole and checksummed, or, in
    directories of older writers, takes its metadata from their side file (``loggers.writer.UNINDEXED_EPISODES``).
    A finished episode that EnvLogger's files hold without its metadata and the journal lacks (killed during a
    flush before it was committed) is skipped with a warning; so is a journal's torn tail. Each skip is counted
    in ``rejections`` (if given) by reason: ``UNFINISHED``, ``NO_METADATA``, ``TORN_FRAME``.
    """
    path = os.fspath(path)
    manifest = read_manifest(path)
    closed = manifest is not None and manifest["state"] == "closed"
    contents = None if closed else read_journal(path)
    unindexed = read_unindexed(path)
    indexed, metadata = _indexed(path, manifest, contents)
    journal = dict(contents.episodes) if contents is not None else {}
    if contents is not None and contents.torn_at is not None:
        _reject(path, f"{JOURNAL} from byte {contents.torn_at:,}", TORN_FRAME, rejections)
    expects_metadata = any(meta is not None for meta in metadata) or \
        any(episode.metadata is not None for episode in journal.values())
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
            if not finished:
                if not include_unfinished:
                    _reject(path, f"episode {ordinal} ({len(piece)} steps, no last step)", UNFINISHED, rejections)
                    continue
            elif piece_no > 0 or (own is None and expects_metadata):
                _reject(path, f"episode {ordinal} ({len(piece)} steps)", NO_METADATA, rejections)
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


def read_episodes(root: str | os.PathLike, include_unfinished: bool = False,
                  rejections: collections.Counter | None = None) -> Iterator[dict[str, Any]]:
    """Yields the RLDS episodes of every log directory under ``root``, in directory order (``read_log_dir``: what
    it skips is counted in ``rejections`` by reason, if given)."""
    for path in log_dirs(root):
        yield from read_log_dir(path, include_unfinished, rejections)
