"""Reviewing recorded episodes: summaries, step-by-step views, notes kept as versions, exports.

Notes (free text and/or tags, on one step or the whole episode) never edit a log: every change of an episode's
notes (``add``, ``edit`` or ``delete``, ``change_notes``) rewrites the episode (``loggers.live.rewrite_episode``)
into the next version folder ``versions/<dataset>/<episode>/vNNNN/``, and earlier versions are never touched, so
each acknowledged change stays readable in the version it made (``find_version``). A version's episode metadata
holds:

- ``annotations``: the notes as they stand after the change (JSON list); each has a ``note_id``, ``revision``
  (1, then +1 per edit), its ``step``, ``text``, ``tags``, ``annotator``, ``session_id`` and ``time``, and once
  edited ``edited_by``, ``edited_session`` and ``edited_time``. A deleted note is not in it: it is in the
  version before, and its deletion is a change record;
- ``annotation_changes``: the last ``RECENT_CHANGES`` change records (JSON list, newest last): ``version``,
  ``op``, ``note_id``, ``revision``, ``annotator``, ``session_id``, ``time``, ``client_key`` and a digest of the
  request. A request whose ``client_key`` is among them is answered with the version it made, never stored twice
  (a double click, a retry after a lost answer); the same key with another request is refused.

Edits and deletes name the revision the person saw; a note changed since is refused (409), never overwritten. A
person changes only their own notes. Bounds: at most ``MAX_NOTES`` notes of at most ``MAX_NOTES_BYTES`` (stored
JSON) in all, and ``MAX_VERSIONS`` versions, per episode. The review page shows the latest version. A version and
an export are written whole or not at all (``creator_web.storage.write_whole``): a server killed while writing one
leaves nothing listed or read.

An export writes the latest version of each selected episode into a new folder ``exports/<name>/`` with its
current notes as ``annotations`` (the change records stay in ``versions/``), which the server itself lists as a
dataset and ``creator_web.export_builder`` builds into a TFDS dataset of the task that keeps the annotations,
annotator, session, task configuration and client times (``python -m creator_web.export_builder
exports/<name> --out DIR``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import secrets
import threading
import time
from typing import Any, Mapping

import numpy as np

from creator_web.storage import DamagedDataset, DataDir, next_index, safe_component, write_whole
from creator_web.tasks import render_steps
from loggers.live import rewrite_episode, split_step
from loggers.reader import read_log_dir

_write_lock = threading.Lock()
#: the most notes one episode holds, their largest stored size (bytes of JSON), and the most versions of one
#: episode (every change of its notes makes one).
MAX_NOTES, MAX_NOTES_BYTES, MAX_VERSIONS = 100, 256 * 1024, 500
#: how many change records each version keeps (a repeated client key among them is not stored again).
RECENT_CHANGES = 20
#: the episode metadata fields of a version: the current notes and the recent change records.
NOTES, CHANGES = "annotations", "annotation_changes"
OPS = ("add", "edit", "delete")


class LimitError(ValueError):
    """A write refused because it would pass a stored-size limit (the server answers 409 with the message)."""


class NoteConflict(ValueError):
    """A change that does not fit the notes as stored: a note changed since the person saw it, or a client key
    used for another change (the server answers 409 with the message)."""


class NotYours(PermissionError):
    """A change of another annotator's note (the server answers 403)."""


@dataclasses.dataclass(frozen=True)
class NoteChange:
    """One change of an episode's notes, by ``annotator`` in session ``session_id``.

    ``op``: ``add`` (``step``, ``text``, ``tags``), ``edit`` (``note_id``, the ``revision`` the person saw, the
    new ``text`` and ``tags``) or ``delete`` (``note_id``, ``revision``). ``client_key``: the page's key of this
    save; sending the same change again with it is answered with the version it made."""

    op: str
    annotator: str
    session_id: str
    note_id: str | None = None
    revision: int | None = None
    step: int | None = None
    text: str = ""
    tags: tuple[str, ...] = ()
    client_key: str | None = None

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"op: {self.op!r} is not one of {OPS}")
        if self.op != "add" and (self.note_id is None or self.revision is None):
            raise ValueError(f"note_id, revision: required to {self.op} a note")

    def digest(self) -> str:
        """What the request asks, hashed (a client key is only ever answered for the same request)."""
        asked = [self.op, self.note_id, self.revision, self.step, self.text, list(self.tags), self.session_id]
        return hashlib.sha256(json.dumps(asked, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


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


def versions_dir(data: DataDir, dataset: str, episode_id: str) -> str:
    """The folder of the episode's versions (``versions/<dataset>/<episode>``, each part a safe name)."""
    return data.path("versions", safe_component(dataset.replace("/", "__")), safe_component(episode_id))


def find_version(data: DataDir, dataset: str, episode_id: str, version: int) -> dict[str, Any]:
    """Version ``version`` (0: the one the first change made) of episode ``episode_id`` (``KeyError`` if none)."""
    folder = os.path.join(versions_dir(data, dataset, episode_id), f"v{version:04d}")
    if version < 0 or not os.path.isdir(folder):
        raise KeyError(f"episode {episode_id!r} of dataset {dataset!r} has no version {version}")
    return read_version(data, folder)


def find_episode(data: DataDir, dataset: str, episode_id: str) -> dict[str, Any]:
    """The latest version of episode ``episode_id`` of ``dataset`` (``KeyError`` if absent)."""
    latest = next_index(versions_dir(data, dataset, episode_id), "v") - 1
    if latest >= 0:
        return find_version(data, dataset, episode_id, latest)
    for episode in data.episodes(dataset):
        if str(episode.get("episode_id", "")) == episode_id:
            return episode
    raise KeyError(f"no episode {episode_id!r} in dataset {dataset!r}")


def read_version(data: DataDir, folder: str) -> dict[str, Any]:
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


def notes_of(episode: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The episode's current notes, each with its ``note_id`` and ``revision`` (a note stored without them, by an
    older server, is ``i<k>`` by its place and revision 1 until its first change stores them)."""
    notes = json.loads(episode.get(NOTES, "[]") or "[]")
    return [{"note_id": f"i{k}", "revision": 1, **note} for k, note in enumerate(notes)]


def changes_of(episode: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The change records the episode's version keeps (newest last; empty for an episode never annotated)."""
    return json.loads(episode.get(CHANGES, "[]") or "[]")


def detail(data: DataDir, dataset: str, episode_id: str) -> dict[str, Any]:
    """An episode for the replay view: metadata, steps, board rows, its notes and their recent changes."""
    episode = find_episode(data, dataset, episode_id)
    steps = episode["steps"]
    texts = [s["observation"].get("text", "") if isinstance(s["observation"], Mapping) else s["observation"]
             for s in steps]
    actions = [s["action"] for s in steps]
    meta = {k: _json_value(v) for k, v in episode.items() if k not in ("steps", NOTES, CHANGES)}
    changes = [{k: v for k, v in c.items() if k not in ("client_key", "digest")} for c in changes_of(episode)]
    return {"metadata": meta, "annotations": notes_of(episode), "changes": changes,  # another's keys stay unshown
            "steps": [{"observation": texts[i], "action": actions[i], "reward": float(s["reward"]),
                       "metadata": _json_value(split_step(s))} for i, s in enumerate(steps)],
            **render_steps(str(episode.get("task", "")), actions, texts)}


def _repeated(changes: list[dict[str, Any]], change: NoteChange, folder: str) -> dict[str, Any] | None:
    """The answer already given to ``change``'s client key, if a kept change record has it."""
    if change.client_key is None:
        return None
    for record in changes:
        if record.get("client_key") == change.client_key:
            if record.get("digest") != change.digest():
                raise NoteConflict(f"client_key: {change.client_key!r} was sent before with another change of this "
                                   "episode's notes (a new save needs a new key)")
            return {"version": os.path.join(folder, record["version"]), "note_id": record["note_id"],
                    "revision": record["revision"], "duplicate": True}
    return None


def _own_note(notes: list[dict[str, Any]], change: NoteChange, episode_id: str) -> int:
    """The place of the note ``change`` edits or deletes, once it is found, the person's, and as they saw it."""
    for k, note in enumerate(notes):
        if note["note_id"] == change.note_id:
            if note.get("annotator") != change.annotator:
                raise NotYours(f"note_id: note {change.note_id!r} is {note.get('annotator')!r}'s; you may "
                               "change only your own notes")
            if note["revision"] != change.revision:
                raise NoteConflict(f"revision: note {change.note_id!r} is at revision {note['revision']}, not "
                                   f"{change.revision}: it was changed since you saw it (reload the episode)")
            return k
    raise KeyError(f"note_id: episode {episode_id!r} has no note {change.note_id!r} (deleted, or never made)")


def _applied(notes: list[dict[str, Any]], change: NoteChange, steps: int, episode_id: str, now: float
             ) -> dict[str, Any]:
    """Applies ``change`` to ``notes`` (in place); returns the note added, edited or deleted."""
    if change.op == "add":
        if change.step is not None and not 0 <= change.step < steps:
            raise IndexError(f"step {change.step} is outside the episode's {steps} steps")
        if len(notes) >= MAX_NOTES:
            raise LimitError(f"annotations: episode {episode_id!r} holds {len(notes)} annotations already, the "
                             f"limit")
        taken = {n["note_id"] for n in notes}
        note_id = next(i for i in iter(lambda: "n" + secrets.token_hex(6), None) if i not in taken)
        note = {"note_id": note_id, "revision": 1, "step": change.step, "text": change.text,
                "tags": list(change.tags), "annotator": change.annotator, "session_id": change.session_id,
                "time": now}
        notes.append(note)
        return note
    k = _own_note(notes, change, episode_id)
    if change.op == "delete":
        return notes.pop(k)
    notes[k] = {**notes[k], "text": change.text, "tags": list(change.tags), "revision": notes[k]["revision"] + 1,
                "edited_by": change.annotator, "edited_session": change.session_id, "edited_time": now}
    return notes[k]


def change_notes(data: DataDir, dataset: str, episode_id: str, change: NoteChange) -> dict[str, Any]:
    """Stores ``change`` as the episode's next version (see the module docstring); returns ``{"version": its
    folder, "note_id", "revision", "duplicate"}`` (``duplicate``: the client key's change was stored before,
    nothing new written). Raises ``KeyError`` (no such episode or note), ``IndexError`` (a step outside the
    episode), ``NotYours``, ``NoteConflict`` or ``LimitError``."""
    with _write_lock:
        episode = find_episode(data, dataset, episode_id)
        folder = versions_dir(data, dataset, episode_id)
        changes = changes_of(episode)
        repeated = _repeated(changes, change, folder)
        if repeated is not None:
            return repeated
        index = next_index(folder, "v")
        if index >= MAX_VERSIONS:
            raise LimitError(f"annotations: episode {episode_id!r} has {index} versions already, the limit")
        notes, now = notes_of(episode), time.time()
        note = _applied(notes, change, len(episode["steps"]), episode_id, now)
        stored = json.dumps(notes, sort_keys=True)
        if len(stored.encode("utf-8")) > MAX_NOTES_BYTES:
            raise LimitError(f"annotations: with this one, episode {episode_id!r}'s annotations would take "
                             f"{len(stored.encode('utf-8'))} bytes, more than the limit of {MAX_NOTES_BYTES}")
        version = f"v{index:04d}"
        record = {"version": version, "op": change.op, "note_id": note["note_id"], "revision": note["revision"],
                  "annotator": change.annotator, "session_id": change.session_id, "time": now,
                  "client_key": change.client_key, "digest": change.digest()}
        kept = json.dumps([*changes, record][-RECENT_CHANGES:], sort_keys=True)
        out = os.path.join(folder, version)
        with write_whole(out) as partial:
            rewrite_episode(episode, partial, extra_metadata={NOTES: stored, CHANGES: kept})
        return {"version": out, "note_id": note["note_id"], "revision": note["revision"], "duplicate": False}


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
            for k, found in enumerate(episodes):
                episode = {key: value for key, value in found.items() if key != CHANGES}  # current notes only
                extra = {} if NOTES in episode else {NOTES: "[]"}
                rewrite_episode(episode, os.path.join(partial, f"e{k:05d}"), extra_metadata=extra)
        return out


__all__ = ["CHANGES", "LimitError", "MAX_NOTES", "MAX_NOTES_BYTES", "MAX_VERSIONS", "NOTES", "NoteChange",
           "NoteConflict", "NotYours", "OPS", "RECENT_CHANGES", "change_notes", "changes_of", "detail", "export",
           "find_episode", "find_version", "notes_of", "read_version", "summary", "versions_dir"]
