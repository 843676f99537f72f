"""Reviewing recorded episodes: summaries, step-by-step views, annotations as new versions, exports.

An annotation (free text and/or tags, on one step or the whole episode) never edits a log: the episode
is rewritten (``loggers.live.rewrite_episode``) into ``versions/<dataset>/<episode>/vNNNN/`` with every
annotation so far in the episode metadata field ``annotations`` (JSON list). The review page shows the
latest version. A version and an export are written whole or not at all (``creator_web.storage.write_whole``):
a server killed while writing one leaves nothing listed or read. An episode holds at most ``MAX_NOTES``
annotations of at most ``MAX_NOTES_BYTES`` (as
stored JSON) in all, so a version never grows without bound. An export writes the latest version of
each selected episode into a new folder ``exports/<name>/``, which the server itself lists as a dataset and
``creator_web.export_builder`` builds into a TFDS dataset of the task that keeps the annotations, annotator,
session, task configuration and client times (``python -m creator_web.export_builder exports/<name> --out DIR``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, Mapping

import numpy as np

from creator_web.storage import DamagedDataset, DataDir, next_index, safe_component, write_whole
from creator_web.tasks import render_steps
from loggers.live import rewrite_episode, split_step
from loggers.reader import read_log_dir

_write_lock = threading.Lock()
#: the most annotations one episode holds, and their largest stored size (bytes of JSON).
MAX_NOTES, MAX_NOTES_BYTES = 100, 256 * 1024


class LimitError(ValueError):
    """A write refused because it would pass a stored-size limit (the server answers 409 with the message)."""


def _json_value(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, Mapping):
        return {k: _json_value(v) for k, v in value.items()}
    return value


def summary(index: int, episode: Mapping[str, Any]) -> dict[str, Any]:
    """One line of the episode list."""
    steps = episode["steps"]
    return {"index": index, "episode_id": str(episode.get("episode_id", "")), "policy": str(episode.get("policy", "")),
            "steps": len(steps), "return": float(sum(float(s["reward"]) for s in steps))}


def _versions_dir(data: DataDir, dataset: str, episode_id: str) -> str:
    return data.path("versions", safe_component(dataset.replace("/", "__")), safe_component(episode_id))


def find_episode(data: DataDir, dataset: str, episode_id: str) -> dict[str, Any]:
    """The latest version of episode ``episode_id`` of ``dataset`` (``KeyError`` if absent)."""
    folder = _versions_dir(data, dataset, episode_id)
    latest = next_index(folder, "v") - 1
    if latest >= 0:
        return _read_version(data, os.path.join(folder, f"v{latest:04d}"))
    for episode in data.episodes(dataset):
        if str(episode.get("episode_id", "")) == episode_id:
            return episode
    raise KeyError(f"no episode {episode_id!r} in dataset {dataset!r}")


def _read_version(data: DataDir, folder: str) -> dict[str, Any]:
    """The episode of the version ``folder``; ``DamagedDataset`` naming the folder when it holds none or cannot be
    read (versions are written whole, so only damage from outside the server does this)."""
    where = os.path.relpath(folder, data.root)
    try:
        episodes = list(read_log_dir(folder))
    except Exception as e:  # noqa: BLE001 - the reader raises whatever the riegeli backend does
        raise DamagedDataset(f"version {where} cannot be read: {type(e).__name__}: {str(e)[:200]}") from None
    if len(episodes) != 1:
        raise DamagedDataset(f"version {where} holds {len(episodes)} finished episodes, not 1")
    return episodes[0]


def detail(data: DataDir, dataset: str, episode_id: str) -> dict[str, Any]:
    """An episode for the replay view: metadata, steps, board rows and annotations."""
    episode = find_episode(data, dataset, episode_id)
    steps = episode["steps"]
    texts = [s["observation"].get("text", "") if isinstance(s["observation"], Mapping) else s["observation"]
             for s in steps]
    actions = [s["action"] for s in steps]
    meta = {k: _json_value(v) for k, v in episode.items() if k not in ("steps", "annotations")}
    return {"metadata": meta, "annotations": json.loads(episode.get("annotations", "[]") or "[]"),
            "steps": [{"observation": texts[i], "action": actions[i], "reward": float(s["reward"]),
                       "metadata": _json_value(split_step(s))} for i, s in enumerate(steps)],
            **render_steps(str(episode.get("task", "")), actions, texts)}


def annotate(data: DataDir, dataset: str, episode_id: str, note: Mapping[str, Any]) -> str:
    """Adds ``note`` (step, text, tags, annotator, session_id) as a new version; returns its folder."""
    with _write_lock:
        episode = find_episode(data, dataset, episode_id)
        step = note.get("step")
        if step is not None and not 0 <= step < len(episode["steps"]):
            raise IndexError(f"step {step} is outside the episode's {len(episode['steps'])} steps")
        notes = json.loads(episode.get("annotations", "[]") or "[]")
        if len(notes) >= MAX_NOTES:
            raise LimitError(f"annotations: episode {episode_id!r} holds {len(notes)} annotations already, the "
                             f"limit")
        notes.append({**note, "time": time.time()})
        stored = json.dumps(notes, sort_keys=True)
        if len(stored.encode("utf-8")) > MAX_NOTES_BYTES:
            raise LimitError(f"annotations: with this one, episode {episode_id!r}'s annotations would take "
                             f"{len(stored.encode('utf-8'))} bytes, more than the limit of {MAX_NOTES_BYTES}")
        folder = _versions_dir(data, dataset, episode_id)
        out = os.path.join(folder, f"v{next_index(folder, 'v'):04d}")
        with write_whole(out) as partial:
            rewrite_episode(episode, partial, extra_metadata={"annotations": stored})
        return out


def export(data: DataDir, dataset: str, episode_ids: list[str], name: str) -> str:
    """Writes the latest versions of ``episode_ids`` (each listed once) to the new folder ``exports/<name>``;
    returns it. ``ValueError`` naming the field for a repeated id."""
    seen: set[str] = set()
    for k, episode_id in enumerate(episode_ids):
        if episode_id in seen:
            raise ValueError(f"episode_ids.{k}: {episode_id[:80]!r} is listed twice")
        seen.add(episode_id)
    with _write_lock:
        out = data.path("exports", name)
        if os.path.lexists(out):
            raise FileExistsError(f"export {name!r} exists already: choose a new name")
        episodes = [find_episode(data, dataset, e) for e in episode_ids]
        with write_whole(out) as partial:
            for k, episode in enumerate(episodes):
                extra = {} if "annotations" in episode else {"annotations": "[]"}
                rewrite_episode(episode, os.path.join(partial, f"e{k:05d}"), extra_metadata=extra)
        return out


__all__ = ["LimitError", "MAX_NOTES", "MAX_NOTES_BYTES", "annotate", "detail", "export", "find_episode", "summary"]
