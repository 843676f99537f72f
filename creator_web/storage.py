"""The data folder of a creator_web server: its layout, the datasets in it, and safe names.

Layout under ``data_dir`` (everything the server writes is new files in new folders)::

    human/<task>/<session_id>/game_NNNNN/   one EnvLogger log per game a person played
    judgements/<session_id>/j_NNNNN/        one preference log (loggers.preferences) per judgement
    versions/<dataset>/<episode>/vNNNN/     annotated versions of an episode (the original is never edited)
    exports/<name>/eNNNNN/                  episodes exported from the review page (a manual_dir for tfds build)
    sessions/<session_id>.json              who opened each session, with its config
    <anything else>/                        datasets to judge or review: raw logs or a built TFDS folder

A version and an export appear whole or not at all (``write_whole``): they are written into a temporary sibling
``.partial-<name>.<pid>.<random>``, flushed to disk and renamed into place. A server killed while writing one
leaves only such a sibling, which is never listed or read, and which the next server removes when it starts
(``DataDir.clean_partial``).

A dataset is named by its path relative to ``data_dir`` and must be one of ``datasets()``: a name is
never joined to a path before it is found in that list, and symlinks are never followed, so nothing outside
``data_dir`` is reachable. A folder that cannot be used is not dropped in silence: ``listing()`` names it as
damaged with the reason (a symlink in it, a folder that cannot be listed, a log that cannot be read).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import threading
from typing import Any, Callable, Iterator

import numpy as np

from loggers.reader import log_dirs, read_log_dir
from rlds_lang.schema import map_nested, text_leaf

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,120}$")
#: folders of data_dir that hold the server's own bookkeeping, not datasets.
PRIVATE = ("judgements", "versions", "sessions")
#: the name prefix of a folder being written (``write_whole``): never listed, removed when a server starts.
PARTIAL = ".partial-"


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


def _fsync(path: str, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_tree(folder: str) -> None:
    """``fsync`` of every file and folder under ``folder`` (the folders last, so their entries are on disk)."""
    for path, _, files in os.walk(folder, topdown=False):
        for name in files:
            _fsync(os.path.join(path, name))
        _fsync(path, directory=True)


@contextlib.contextmanager
def write_whole(final: str) -> Iterator[str]:
    """Yields a new temporary folder beside ``final`` to write into; when the block ends without error, everything
    in it is flushed to disk and the folder is renamed to ``final`` in one step, so ``final`` appears whole or not
    at all. An error removes the temporary folder; a killed process leaves it behind under a ``PARTIAL`` name,
    which is never listed and which ``DataDir.clean_partial`` removes. ``FileExistsError`` if ``final`` exists
    (before or after the block)."""
    parent, name = os.path.split(final)
    if os.path.lexists(final):
        raise FileExistsError(f"{final} exists already")
    os.makedirs(parent, exist_ok=True)
    temporary = os.path.join(parent, f"{PARTIAL}{name}.{os.getpid()}.{secrets.token_hex(4)}")
    os.mkdir(temporary)
    try:
        yield temporary
        _sync_tree(temporary)
        if os.path.lexists(final):  # rename() would silently replace an empty folder
            raise FileExistsError(f"{final} appeared while it was being written")
        os.rename(temporary, final)
        _fsync(parent, directory=True)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def write_json_whole(path: str, value: Any) -> None:
    """Writes ``value`` as JSON to ``path`` whole or not at all (a ``PARTIAL`` sibling, fsync'd, renamed over it)."""
    parent, name = os.path.split(path)
    temporary = os.path.join(parent, f"{PARTIAL}{name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        with open(temporary, "x", encoding="utf-8") as f:
            json.dump(value, f, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
        _fsync(parent, directory=True)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temporary)
        raise


def _abandoned(name: str) -> bool:
    """Whether the ``PARTIAL`` folder ``name`` was left by a process that is gone (or by an earlier process with
    this one's id): a folder another live server is writing now is kept."""
    parts = name.rsplit(".", 2)
    pid = parts[1] if len(parts) == 3 else ""
    if not pid.isdigit() or int(pid) == os.getpid():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class DamagedDataset(ValueError):
    """A dataset that cannot be read (the message says which and why; the server answers 409)."""


class UnsafePath(ValueError):
    """A path of the data folder that runs through a symlink (the server answers 409)."""


def _listdir(folder: str) -> list[str]:
    """The names in ``folder`` (none when it is absent or not a folder)."""
    try:
        return sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _subfolders(folder: str) -> list[str]:
    """The real (not symlinked) folders in ``folder``."""
    paths = (os.path.join(folder, name) for name in _listdir(folder))
    return [p for p in paths if os.path.isdir(p) and not os.path.islink(p)]


def _scan(folder: str) -> tuple[str | None, str | None]:
    """(kind, problem) of a candidate dataset folder: kind ``tfds``/``raw``/``None``; problem names the first
    symlink or unlistable folder found (they make the folder damaged, never silently smaller)."""
    kind: str | None = None
    errors: list[OSError] = []
    for path, dirs, files in os.walk(folder, onerror=errors.append):
        for entry in sorted(dirs + files):
            if os.path.islink(os.path.join(path, entry)):
                rel = os.path.relpath(os.path.join(path, entry), folder)
                return kind, f"{rel} is a symlink (the server does not follow symlinks)"
        if "dataset_info.json" in files:
            kind = kind or "tfds"
        elif "metadata.riegeli" in files:
            kind = kind or "raw"
    if errors:
        return kind, f"cannot list {os.path.relpath(errors[0].filename or folder, folder)}: {errors[0].strerror}"
    return kind, None


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
        self._unreadable: dict[str, tuple[Any, str]] = {}
        #: whether a log directory belongs to a game being played now (set by the session store): such a
        #: log may not be readable yet and is skipped, not counted as damage.
        self.in_progress: Callable[[str], bool] = lambda folder: False
        self.clean_partial()

    def clean_partial(self) -> list[str]:
        """Removes the ``PARTIAL`` folders and files a killed server left in ``versions/``, ``exports/`` and
        ``sessions/`` (what it was writing never appeared); returns them, relative to the root. Run when a
        ``DataDir`` is made."""
        parents = [os.path.join(self.root, "exports"), os.path.join(self.root, "sessions")]
        versions = os.path.join(self.root, "versions")
        for dataset in _subfolders(versions):
            parents.extend(_subfolders(dataset))
        removed = []
        for parent in parents:
            for name in _listdir(parent):
                path = os.path.join(parent, name)
                if name.startswith(PARTIAL) and not os.path.islink(path) and _abandoned(name):
                    if os.path.isdir(path):
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        os.remove(path)
                    removed.append(os.path.relpath(path, self.root))
        for path in removed:
            logging.warning("%s: removed what a killed server left half-written (it was never listed)", path)
        return removed

    def path(self, *parts: str) -> str:
        """``root/parts...``; every part must be a safe component, and none of the folders on the way a symlink
        (``UnsafePath``)."""
        current = self.root
        for part in parts:
            if part != safe_component(part):
                raise ValueError(f"unsafe path component {part!r}")
            current = os.path.join(current, part)
            if os.path.islink(current):
                raise UnsafePath(f"{os.path.relpath(current, self.root)} is a symlink in the data folder: the "
                                 "server does not follow symlinks")
        return current

    def datasets(self) -> dict[str, str]:
        """Dataset name -> ``raw`` or ``tfds``, for every usable folder holding logs or a built TFDS dataset."""
        return self.listing()[0]

    def listing(self) -> tuple[dict[str, str], dict[str, str]]:
        """(usable datasets: name -> kind, damaged ones: name -> why they cannot be used)."""
        found: dict[str, str] = {}
        damaged: dict[str, str] = {}
        for name in self._candidates(damaged):
            kind, problem = _scan(os.path.join(self.root, *name.split("/")))
            if problem is None:
                with self._lock:
                    unreadable = self._unreadable.get(name)
                if unreadable is not None and kind == "raw" and unreadable[0] == self._stamp(name):
                    problem = unreadable[1]
            if problem is not None:
                damaged[name] = problem
            elif kind:
                found[name] = kind
        return found, damaged

    def _candidates(self, damaged: dict[str, str]) -> list[str]:
        """Names of the folders that may be datasets (symlinked ones go to ``damaged``)."""
        names = []
        for top in sorted(os.listdir(self.root)):
            full = os.path.join(self.root, top)
            if top in PRIVATE or not (os.path.isdir(full) or os.path.islink(full)):
                continue
            if os.path.islink(full):
                damaged[top] = f"{top} is a symlink (the server does not follow symlinks)"
                continue
            if top not in ("exports", "human"):
                names.append(top)
                continue
            try:
                children = sorted(os.listdir(full))
            except OSError as e:
                damaged[top] = f"cannot list {top}: {e.strerror}"
                continue
            for child in children:
                path = os.path.join(full, child)
                if child.startswith(PARTIAL):
                    continue  # being written, or left by a killed server: it never appeared
                if os.path.islink(path):
                    damaged[f"{top}/{child}"] = f"{top}/{child} is a symlink (the server does not follow symlinks)"
                elif os.path.isdir(path):
                    names.append(f"{top}/{child}")
        return names

    def _stamp(self, name: str) -> tuple[tuple[str, int], ...]:
        """Each log directory of raw dataset ``name`` with its newest file time (changes when a log is added)."""
        folder = os.path.join(self.root, *name.split("/"))
        return tuple((d, max((os.lstat(os.path.join(d, f)).st_mtime_ns for f in os.listdir(d)), default=0))
                     for d in log_dirs(folder))

    def dataset_path(self, name: str) -> tuple[str, str]:
        """(folder, kind) of the listed dataset ``name``; ``KeyError`` if it is not listed."""
        kind = self.datasets().get(name)
        if kind is None:
            raise KeyError(f"no dataset {name!r} in the data folder")
        return os.path.join(self.root, *name.split("/")), kind

    def episodes(self, name: str) -> list[dict[str, Any]]:
        """Every finished episode of dataset ``name`` (raw logs re-read when a log directory is added);
        ``DamagedDataset`` naming the log directory when one cannot be read (a game being played is skipped)."""
        folder, kind = self.dataset_path(name)
        stamp: Any = "tfds" if kind == "tfds" else self._stamp(name)
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
                except Exception as e:  # noqa: BLE001 - the reader raises whatever the riegeli backend does
                    if self.in_progress(d):
                        logging.info("%s: a game in progress, not readable yet (%s); skipped", d, e)
                        continue
                    reason = f"log {os.path.relpath(d, self.root)} cannot be read: {type(e).__name__}: {str(e)[:200]}"
                    with self._lock:
                        self._unreadable[name] = (stamp, reason)
                    raise DamagedDataset(f"dataset {name!r} is damaged: {reason}") from None
        with self._lock:
            self._cache[name] = (stamp, episodes)
        return episodes


__all__ = ["DamagedDataset", "DataDir", "PARTIAL", "PRIVATE", "UnsafePath", "next_index", "safe_component",
           "write_json_whole", "write_whole"]
