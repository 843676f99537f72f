"""Who has done what in a creator_web data folder: each annotator's progress, and who has notes on which episode
(the Review page's queue).

``NoteIndex`` knows the current notes of every annotated episode: it reads an episode's latest version once and
again only when a newer version appears, so listing a dataset with its notes does not re-read every log.
``progress`` counts, per annotator: sessions opened (``sessions/<id>.json``), finished episodes of each task
(``human/<task>``, by their ``annotator`` field), judgements recorded (``judgements/<session>/j_NNNNN``, by the
session's annotator) and notes standing now (latest versions; deleted ones are not counted). A folder that cannot
be read is named in ``problems``, never counted as nothing.
"""

from __future__ import annotations

import collections
import json
import os
import threading
from typing import Any, Iterator

from creator_web.review import notes_of, read_version, versions_dir
from creator_web.storage import DamagedDataset, DataDir, next_index

#: what the queue and progress need of a note (its text stays in the version).
NOTE_FIELDS = ("note_id", "annotator", "step")


class NoteIndex:
    """The current notes (``NOTE_FIELDS`` of each) of every annotated episode of a data folder, cached per
    version."""

    def __init__(self, data: DataDir):
        self.data = data
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[int, list[dict[str, Any]]]] = {}

    def notes(self, folder: str) -> list[dict[str, Any]]:
        """The current notes in the versions ``folder`` of one episode (none when it has no version);
        ``DamagedDataset`` naming the version when it cannot be read."""
        latest = next_index(folder, "v") - 1
        if latest < 0:
            return []
        with self._lock:
            cached = self._cache.get(folder)
        if cached is not None and cached[0] == latest:
            return cached[1]
        episode = read_version(self.data, os.path.join(folder, f"v{latest:04d}"))  # versions appear whole
        notes = [{k: note.get(k) for k in NOTE_FIELDS} for note in notes_of(episode)]
        with self._lock:
            self._cache[folder] = (latest, notes)
        return notes

    def for_episodes(self, dataset: str, episode_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
        """Episode id -> its current notes, for episodes of ``dataset``."""
        return {e: self.notes(versions_dir(self.data, dataset, e)) for e in episode_ids}

    def everywhere(self, problems: list[str]) -> Iterator[list[dict[str, Any]]]:
        """The current notes of every annotated episode of the data folder; an episode whose latest version cannot
        be read is named in ``problems``."""
        root = self.data.path("versions")
        for dataset in sorted(os.listdir(root)) if os.path.isdir(root) else []:
            for episode in sorted(os.listdir(os.path.join(root, dataset))):
                folder = os.path.join(root, dataset, episode)
                if not os.path.islink(folder) and os.path.isdir(folder):
                    try:
                        yield self.notes(folder)
                    except DamagedDataset as e:
                        problems.append(str(e))


def _session_owners(data: DataDir, problems: list[str]) -> dict[str, tuple[str, float]]:
    """Session id -> (annotator, time opened), from the session records."""
    folder = data.path("sessions")
    owners = {}
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        try:
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                record = json.load(f)
            owners[str(record["session_id"])] = (str(record["annotator"]), float(record.get("opened", 0.0)))
        except (OSError, ValueError, KeyError, TypeError) as e:
            problems.append(f"sessions/{name}: not readable ({type(e).__name__})")
    return owners


def progress(data: DataDir, index: NoteIndex) -> dict[str, Any]:
    """``{"annotators": [...], "problems": [...]}``: per annotator (sorted by name) ``sessions``, ``last_session``
    (when they last opened one, seconds since the epoch), ``episodes`` (task -> finished episodes),
    ``judgements`` and ``notes``; ``problems`` names what could not be read."""
    problems: list[str] = []
    people: dict[str, dict[str, Any]] = {}

    def person(name: str) -> dict[str, Any]:
        return people.setdefault(name, {"annotator": name, "sessions": 0, "last_session": None,
                                        "episodes": collections.Counter(), "judgements": 0, "notes": 0})

    owners = _session_owners(data, problems)
    for annotator, opened in owners.values():
        row = person(annotator)
        row["sessions"] += 1
        row["last_session"] = max(row["last_session"] or 0.0, opened)
    usable, damaged = data.listing()
    for name in sorted(usable):
        if name.startswith("human/"):
            try:
                for episode in data.episodes(name):
                    person(str(episode.get("annotator", "")))["episodes"][name[len("human/"):]] += 1
            except DamagedDataset as e:
                problems.append(str(e))
    problems += [f"{name}: {why}" for name, why in sorted(damaged.items()) if name.startswith("human/")]
    judged = data.path("judgements")
    for session in sorted(os.listdir(judged)) if os.path.isdir(judged) else []:
        folder = os.path.join(judged, session)
        count = sum(1 for n in os.listdir(folder) if n.startswith("j_") and n[2:].isdigit()) \
            if os.path.isdir(folder) and not os.path.islink(folder) else 0
        owner = owners.get(session)
        if owner is None:
            problems.append(f"judgements/{session}: {count} judgement(s) of a session with no record")
            continue
        person(owner[0])["judgements"] += count
    for notes in index.everywhere(problems):
        for note in notes:
            person(str(note.get("annotator", "")))["notes"] += 1
    rows = [{**row, "episodes": dict(sorted(row["episodes"].items()))} for _, row in sorted(people.items())]
    return {"annotators": rows, "problems": problems}


__all__ = ["NOTE_FIELDS", "NoteIndex", "progress"]
