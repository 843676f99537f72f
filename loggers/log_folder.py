"""What a complete log directory holds, and how a writer knows its flushes reached the disk.

EnvLogger's flush returns nothing: when the disk is full (or a file may grow no more) its Riegeli writer only
logs the failure, and the files it was writing stay short. ``flushed_files`` is how ``loggers.writer`` learns
what a flush left: it walks the chunks each file gained since the last flush it checked (``count_records``
without checksums: whether every chunk is whole, not whether its bytes are right) and compares the records
with what was logged. Until that check passes, the journal keeps every episode the flush was to hold.

The writer also leaves a manifest, ``log_manifest.json``, beside EnvLogger's files. It is written when the
writer opens the log directory (``"state": "open"``: from then on a journal must be there until the close) and
rewritten when it closes it (``"state": "closed"``), listing every file of every shard with its size, and the
episodes and steps they hold. A reader checks a closed directory against it, so a deleted shard folder, a
deleted ``metadata.riegeli`` or a file cut at a chunk boundary is an error naming the file, not fewer episodes.
Directories written before the manifest existed have none and are read as before.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any, NamedTuple

from loggers.riegeli_files import (EPISODE_INDEX, EPISODE_METADATA, LOG_METADATA, SHARD_FILES, STEP_OFFSETS, STEPS,
                                   DamagedLogError, count_records, shards)

#: the writer's manifest in a log directory.
MANIFEST = "log_manifest.json"
_FORMAT = "rlds-lang log directory 1"


class LogWriteError(OSError):
    """A log directory's files could not be written (disk full, a file too large, an I/O error): recording
    stopped. The message names the directory and the file; every episode committed before it stays readable
    (the journal keeps those EnvLogger's files may lack). ``errno`` is the operating system's, when known."""

    def __init__(self, message: str, code: int | None = None):
        if code is None:
            super().__init__(message)
        else:
            super().__init__(code, message)
        self.message, self.code = message, code

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):
        return type(self), (self.message, self.code)


class FileState(NamedTuple):
    """One file of a shard as a checked flush left it: its size and the records its whole chunks hold."""

    size: int
    records: int


def flushed_files(log_dir: str, known: dict[str, FileState], steps: int, metadata: int) -> dict[str, FileState]:
    """``{"shard/file": state}`` of every shard file of ``log_dir`` once EnvLogger flushed it, checked against
    ``known`` (the states the last check returned) and against what was logged: ``steps`` steps and ``metadata``
    episode metadata records in all. Every file must end on a whole chunk, no file may have shrunk, and a shard
    whose steps grew must have gained step offsets and episode index records too; ``LogWriteError`` naming the
    file says which did not (its flush failed, as on a full disk)."""
    states: dict[str, FileState] = {}
    for shard in shards(log_dir):
        for name in SHARD_FILES:
            rel = f"{shard}/{name}"
            before = known.get(rel, FileState(0, 0))
            try:
                size = os.path.getsize(os.path.join(log_dir, rel))
            except FileNotFoundError:
                raise LogWriteError(f"{log_dir}: {rel}: missing after EnvLogger's flush") from None
            if size < before.size:
                raise LogWriteError(f"{log_dir}: {rel}: {size:,} bytes after EnvLogger's flush, {before.size:,} "
                                    "before it")
            records = before.records
            if size > before.size:
                try:
                    records += count_records(os.path.join(log_dir, rel), where=f"{log_dir}: {rel}",
                                             start=before.size, hashes=False)
                except DamagedLogError as damage:
                    raise LogWriteError(f"{damage}: EnvLogger's flush did not complete (disk full?); see its log") \
                        from None
            states[rel] = FileState(size, records)
    _check_counts(log_dir, known, states, STEPS, steps)
    _check_counts(log_dir, known, states, EPISODE_METADATA, metadata)
    for shard in {rel.split("/")[0] for rel in states}:
        if _grew(known, states, f"{shard}/{STEPS}"):
            for name in (STEP_OFFSETS, EPISODE_INDEX):
                if not _grew(known, states, f"{shard}/{name}"):
                    raise LogWriteError(f"{log_dir}: {shard}/{name}: gained no record while {shard}/{STEPS} gained "
                                        "steps: EnvLogger's flush did not complete (disk full?); see its log")
    return states


def _grew(known: dict[str, FileState], states: dict[str, FileState], rel: str) -> bool:
    return states[rel].records > known.get(rel, FileState(0, 0)).records


def _check_counts(log_dir: str, known: dict[str, FileState], states: dict[str, FileState], name: str,
                  expected: int) -> None:
    found = sum(state.records for rel, state in states.items() if rel.endswith("/" + name))
    if found != expected:
        short = [rel for rel, state in states.items() if rel.endswith("/" + name)]
        raise LogWriteError(f"{log_dir}: {', '.join(short) or name}: {found:,} records after EnvLogger's flush, "
                            f"{expected:,} logged: the flush did not complete (disk full?); see its log")


def truncate_to(log_dir: str, files: dict[str, int]) -> None:
    """Cuts every shard file of ``log_dir`` back to its size in ``files`` (0 for a file not listed): what a failed
    flush appended after the last checked one goes, so EnvLogger's reader reads that flush's files. Cutting
    needs no free space."""
    for shard in shards(log_dir):
        for name in SHARD_FILES:
            path = os.path.join(log_dir, shard, name)
            if os.path.exists(path) and os.path.getsize(path) > files.get(f"{shard}/{name}", 0):
                os.truncate(path, files.get(f"{shard}/{name}", 0))


def snapshot(log_dir: str, files: dict[str, int], into: str) -> None:
    """Copies ``log_dir``'s ``metadata.riegeli`` and the shard files listed in ``files``, each cut to its listed
    size, into the new folder ``into``: the log directory as the flush that measured ``files`` left it."""
    os.makedirs(into)
    shutil.copyfile(os.path.join(log_dir, LOG_METADATA), os.path.join(into, LOG_METADATA))
    for rel, size in files.items():
        os.makedirs(os.path.join(into, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(log_dir, rel), "rb") as source, open(os.path.join(into, rel), "wb") as target:
            target.write(source.read(size))


def _write_atomically(path: str, data: bytes, durable: bool) -> None:
    """Writes ``path`` whole or not at all (a temporary file renamed over it), ``fsync``'d when ``durable``."""
    temporary = path + ".tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)


def write_open_manifest(log_dir: str) -> None:
    """Marks ``log_dir`` as being written: until the closed manifest replaces this one, a journal must be there."""
    _write_atomically(os.path.join(log_dir, MANIFEST), json.dumps({"format": _FORMAT, "state": "open"}).encode(),
                      durable=False)


def write_closed_manifest(log_dir: str, files: dict[str, FileState], episodes: int, steps: int) -> None:
    """Marks ``log_dir`` as closed, listing every file with its size and the episodes and steps they hold."""
    listing = {rel: state.size for rel, state in sorted(files.items())}
    listing[LOG_METADATA] = os.path.getsize(os.path.join(log_dir, LOG_METADATA))
    manifest = {"format": _FORMAT, "state": "closed", "episodes": episodes, "steps": steps, "files": listing}
    _write_atomically(os.path.join(log_dir, MANIFEST), json.dumps(manifest, indent=1).encode(), durable=True)


def read_if_there(path: str) -> bytes | None:
    """The bytes of the file ``path``, None when there is no such file."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def read_manifest(log_dir: str) -> dict[str, Any] | None:
    """``log_dir``'s manifest (None when it has none: an older writer, or EnvLogger's own); a damaged one is a
    ``DamagedLogError`` naming it."""
    data = read_if_there(os.path.join(log_dir, MANIFEST))
    if data is None:
        return None
    try:
        manifest = json.loads(data)
        if manifest["format"] != _FORMAT or manifest["state"] not in ("open", "closed"):
            raise ValueError(f"unknown format or state: {manifest['format']!r}, {manifest['state']!r}")
        if manifest["state"] == "closed" and not (isinstance(manifest["files"], dict) and
                                                  isinstance(manifest["episodes"], int)):
            raise ValueError("no file listing or episode count")
    except (ValueError, KeyError, TypeError) as error:
        raise DamagedLogError(f"{log_dir}: {MANIFEST}: damaged ({error})") from None
    return manifest


def check_closed_files(log_dir: str, manifest: dict[str, Any]) -> None:
    """Refuses a closed log directory whose files are not those its manifest lists: one missing, of another
    size, or a shard the manifest does not know (``DamagedLogError`` naming the file)."""
    listed = manifest["files"]
    for rel, size in listed.items():
        path = os.path.join(log_dir, rel)
        if not os.path.exists(path):
            raise DamagedLogError(f"{log_dir}: {rel}: missing (its recorder closed this folder with it, "
                                  f"{size:,} bytes; {MANIFEST} lists every file)", cut=True)
        found = os.path.getsize(path)
        if found != size:
            raise DamagedLogError(f"{log_dir}: {rel}: {found:,} bytes, but its recorder closed it at {size:,} "
                                  f"({MANIFEST}): damaged", cut=found < size)
    for shard in shards(log_dir):
        unknown = [name for name in SHARD_FILES if f"{shard}/{name}" not in listed and
                   os.path.exists(os.path.join(log_dir, shard, name))]
        if unknown:
            raise DamagedLogError(f"{log_dir}: {shard}/{unknown[0]}: not written by this folder's recorder (its "
                                  f"{MANIFEST} does not list it): another writer added a shard")


__all__ = ["FileState", "LogWriteError", "MANIFEST", "check_closed_files", "flushed_files", "read_if_there",
           "read_manifest", "snapshot", "truncate_to", "write_closed_manifest", "write_open_manifest"]
