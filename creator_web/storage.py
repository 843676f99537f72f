"""The data folder of a creator_web server: its layout, the datasets in it, and safe names.

Layout under ``data_dir`` (everything the server writes is new files in new folders)::

    human/<task>/<session_id>/game_NNNNN/   one EnvLogger log per game a person played
    judgements/<session_id>/j_NNNNN/        one preference log (loggers.preferences) per judgement
    versions/<dataset>/<episode>/vNNNN/     annotated versions of an episode (the original is never edited)
    exports/<name>/eNNNNN/                  episodes exported from the review page (a manual_dir for tfds build)
    sessions/<session_id>.json              who opened each session, with its config
    <anything else>/                        datasets to judge or review: raw logs or a built TFDS folder

A dataset is named by its path relative to ``data_dir`` and must be one of ``datasets()``: a name is
never joined to a path before it is found in that list, so nothing outside ``data_dir`` is reachable.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from typing import Any, Iterator

import numpy as np

from loggers.reader import log_dirs, read_log_dir
from rlds_lang.schema import map_nested, text_leaf

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,120}$")
#: folders of data_dir that hold the server's own bookkeeping, not datasets.
PRIVATE = ("judgements", "versions", "sessions")


def safe_component(value: str) -> str:
    """``value`` if it is a safe single path component, else a stable hash of it (never ``..`` or ``/``)."""
    if _SAFE.match(value) and ".." not in value:
        return value
    return "h" + hashlib.sha256(value.encode("utf-8")).hexdigest()[:32]


def next_index(folder: str, prefix: str) -> int:
    """The next free ``prefix``NNNNN index in ``folder`` (0 when it is empty or absent)."""
    if not os.path.isdir(folder):
        return 0
    taken = [int(n[len(prefix):]) for n in os.listdir(folder) if n.startswith(prefix) and n[len(prefix):].isdigit()]
    return max(taken, default=-1) + 1


def _plain(value: Any) -> Any:
    """A TFDS numpy leaf as a reader leaf: bytes -> str, 0-d arrays -> numpy scalars."""
    value = text_leaf(value)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind != "O":
        return value[()]
    return value


def _tfds_episodes(folder: str) -> Iterator[dict[str, Any]]:
    """Episodes of a built TFDS folder (the one holding ``dataset_info.json``), as reader-style dicts."""
    import tensorflow_datasets as tfds

    builder = tfds.builder_from_directory(folder)
    for split in builder.info.splits:
        for example in tfds.as_numpy(builder.as_dataset(split=split)):
            steps_ds = example.pop("steps")
            steps = [map_nested(_plain, dict(s)) for s in steps_ds]
            yield {**map_nested(_plain, example), "steps": steps}


class DataDir:
    """The data folder: paths of what the server writes, the datasets it reads (cached until they change)."""

    def __init__(self, root: str | os.PathLike):
        self.root = os.path.realpath(os.fspath(root))
        os.makedirs(self.root, exist_ok=True)
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[Any, list[dict[str, Any]]]] = {}

    def path(self, *parts: str) -> str:
        """``root/parts...``; every part must be a safe component (checked)."""
        for part in parts:
            if part != safe_component(part):
                raise ValueError(f"unsafe path component {part!r}")
        return os.path.join(self.root, *parts)

    def datasets(self) -> dict[str, str]:
        """Dataset name -> ``raw`` or ``tfds``, for every folder holding logs or a built TFDS dataset."""
        found: dict[str, str] = {}
        for top in sorted(os.listdir(self.root)):
            full = os.path.join(self.root, top)
            if top in PRIVATE or not os.path.isdir(full) or os.path.islink(full):
                continue
            children = [top] if top not in ("exports", "human") else [
                f"{top}/{c}" for c in sorted(os.listdir(full)) if os.path.isdir(os.path.join(full, c))]
            for name in children:
                kind = self._kind(os.path.join(self.root, name))
                if kind:
                    found[name] = kind
        return found

    @staticmethod
    def _kind(folder: str) -> str | None:
        for path, dirs, files in os.walk(folder):
            if "dataset_info.json" in files:
                return "tfds"
            if "metadata.riegeli" in files:
                return "raw"
        return None

    def dataset_path(self, name: str) -> tuple[str, str]:
        """(folder, kind) of the listed dataset ``name``; ``KeyError`` if it is not listed."""
        kind = self.datasets().get(name)
        if kind is None:
            raise KeyError(f"no dataset {name!r} in the data folder")
        return os.path.join(self.root, *name.split("/")), kind

    def episodes(self, name: str) -> list[dict[str, Any]]:
        """Every finished episode of dataset ``name`` (raw logs re-read when a log directory is added)."""
        folder, kind = self.dataset_path(name)
        if kind == "tfds":
            stamp: Any = "tfds"
        else:
            stamp = tuple((d, max(os.stat(os.path.join(d, f)).st_mtime_ns for f in os.listdir(d)))
                          for d in log_dirs(folder))
        with self._lock:
            cached = self._cache.get(name)
            if cached is not None and cached[0] == stamp:
                return cached[1]
        if kind == "tfds":
            info = next(p for p, _, f in os.walk(folder) if "dataset_info.json" in f)
            episodes = list(_tfds_episodes(info))
        else:
            episodes = []
            for d, _ in stamp:
                try:
                    episodes.extend(read_log_dir(d))
                except Exception as e:  # a log being written (a game in progress) cannot be read yet
                    logging.warning("%s: not readable yet (%s); skipped", d, e)
        with self._lock:
            self._cache[name] = (stamp, episodes)
        return episodes


__all__ = ["DataDir", "PRIVATE", "next_index", "safe_component"]
