"""Checks of EnvLogger's Riegeli files that name the damaged file, where EnvLogger's reader cannot.

An EnvLogger log directory holds ``metadata.riegeli`` and one folder per writer session (a *shard*) with
four Riegeli files: ``steps.riegeli`` (one record per step), ``step_offsets.riegeli`` (where each step
is), ``episode_index.riegeli`` (where each episode starts, and its metadata) and
``episode_metadata.riegeli``. EnvLogger's C++ reader trusts them: a cut or empty index file makes it
return fewer steps or episodes without a word, and a damaged file gives ``TypeError: expected bytes,
NoneType found`` or ``INTERNAL: Failed to parse riegeli record``, naming no file.

``count_records`` walks a Riegeli file's chunk headers, as the format lays them out (64 KiB blocks, each
opened by a 24-byte block header; chunks of a 40-byte header and their data), checking every chunk
header's checksum and that each chunk ends inside the file, and returns the number of records; with
``verify_data`` it also checks block headers and every chunk's data against their checksums
(HighwayHash, ``loggers.highway_hash``; about 1.5 MB/s, so readers do it only to find which file broke a
failed read). ``check_shards`` does so for every file of a log directory; ``find_damage`` names the first
damaged one. Every problem is a ``DamagedLogError`` naming the log directory, the file and the byte.
"""

from __future__ import annotations

import os
import struct
from typing import BinaryIO

from loggers.highway_hash import riegeli_hash

#: the files of one shard (a writer session's folder) of an EnvLogger log directory.
STEPS, STEP_OFFSETS, EPISODE_INDEX, EPISODE_METADATA = ("steps.riegeli", "step_offsets.riegeli",
                                                        "episode_index.riegeli", "episode_metadata.riegeli")
SHARD_FILES = (STEPS, STEP_OFFSETS, EPISODE_INDEX, EPISODE_METADATA)
#: the log directory's own file (the dataset metadata).
LOG_METADATA = "metadata.riegeli"

_BLOCK = 1 << 16
_BLOCK_HEADER = 24
_USABLE = _BLOCK - _BLOCK_HEADER
_CHUNK_HEADER = struct.Struct("<QQQQQ")  # header hash, data size, data hash, type | records << 8, decoded size
_SIGNATURE, _RECORD_CHUNKS, _OTHER_CHUNKS = ord("s"), {ord("r"), ord("t")}, {ord("m"), ord("p")}


class DamagedLogError(ValueError):
    """A log directory whose files are damaged: the message names the directory, the file and what is wrong.
    ``cut`` says the file is only shorter than it should be (missing, empty, truncated: what a killed writer can
    leave), not wrong (bytes a checksum refuses, a file that is not Riegeli)."""

    def __init__(self, message: str, cut: bool = False):
        super().__init__(message)
        self.cut = cut


def _after(chunk_begin: int, length: int) -> int:
    """The file position ``length`` bytes of chunk content after ``chunk_begin``, block headers included."""
    headers = (length + (chunk_begin + _USABLE - 1) % _BLOCK) // _USABLE
    return chunk_begin + length + headers * _BLOCK_HEADER


def _chunk_end(chunk_begin: int, data_size: int, records: int) -> int:
    """Where the next chunk begins: after the header and data, and at least ``records`` bytes on (each record
    has a position of its own), never inside or right after a block header."""
    by_records = chunk_begin + records
    in_block = by_records % _BLOCK
    if 0 < in_block <= _BLOCK_HEADER:
        by_records += _BLOCK_HEADER + 1 - in_block
    return max(_after(chunk_begin, _CHUNK_HEADER.size + data_size), by_records)


def _content(f: BinaryIO, chunk_begin: int, length: int, check_blocks: bool | None, where: str) -> bytes:
    """``length`` bytes of the chunk at ``chunk_begin`` without the block headers between them (fewer when the
    file ends first); each block header read is checked when ``check_blocks``, the first one too unless it is None."""
    parts, pos, left = [], chunk_begin, length
    while left > 0:
        if pos % _BLOCK == 0:
            f.seek(pos)
            header = f.read(_BLOCK_HEADER)
            if len(header) < _BLOCK_HEADER:
                break
            check = check_blocks or (pos == 0 and check_blocks is not None)
            if check and riegeli_hash(header[8:]) != int.from_bytes(header[:8], "little"):
                raise DamagedLogError(f"{where}: damaged block header at byte {pos:,} (checksum mismatch)"
                                      if pos else f"{where}: not a Riegeli file (no Riegeli block header at byte 0)")
            pos += _BLOCK_HEADER
        take = min(left, _BLOCK - pos % _BLOCK)
        f.seek(pos)
        part = f.read(take)
        parts.append(part)
        pos, left = pos + len(part), left - len(part)
        if len(part) < take:
            break
    return b"".join(parts)


def count_records(path: str | os.PathLike, verify_data: bool = False, where: str | None = None, start: int = 0,
                  hashes: bool = True) -> int:
    """The records of the Riegeli file ``path``, its chunk headers checked (and, with ``verify_data``, its block
    headers and chunk data too); ``DamagedLogError`` naming ``where`` (default: ``path``) and the byte otherwise.

    ``start`` (a chunk boundary, e.g. where an earlier walk ended) counts only the records of the chunks from there
    on; ``hashes=False`` checks only that every chunk is whole (inside the file), not the checksums: how a writer
    checks, cheaply, that what it just flushed reached the file."""
    path = os.fspath(path)
    where = where or path
    try:
        size = os.path.getsize(path)
    except FileNotFoundError:
        raise DamagedLogError(f"{where}: missing", cut=True) from None
    if size == 0:
        raise DamagedLogError(f"{where}: empty (0 bytes)", cut=True)
    records, pos = 0, start
    with open(path, "rb") as f:
        while pos < size:
            header = _content(f, pos, _CHUNK_HEADER.size, verify_data if hashes else None, where)
            if len(header) < _CHUNK_HEADER.size:
                raise DamagedLogError(f"{where}: truncated: the file ends at byte {size:,}, inside the header of the "
                                      f"chunk at byte {pos:,}", cut=True)
            stored, data_size, data_hash, kind, _ = _CHUNK_HEADER.unpack(header)
            if hashes and riegeli_hash(header[8:]) != stored:
                raise DamagedLogError(f"{where}: not a Riegeli file (no signature at byte 0)" if pos == 0 else
                                      f"{where}: damaged chunk header at byte {pos:,} (checksum mismatch)")
            chunk_type, chunk_records = kind & 0xFF, kind >> 8
            if (pos == 0) != (chunk_type == _SIGNATURE) or chunk_type not in \
                    _RECORD_CHUNKS | _OTHER_CHUNKS | {_SIGNATURE}:
                raise DamagedLogError(f"{where}: unexpected chunk type {chr(chunk_type)!r} at byte {pos:,}")
            end = _chunk_end(pos, data_size, chunk_records)
            if end > size:
                raise DamagedLogError(f"{where}: truncated: the chunk at byte {pos:,} ends at byte {end:,}, the file "
                                      f"at byte {size:,}", cut=True)
            if verify_data and data_size:
                data = _content(f, pos, _CHUNK_HEADER.size + data_size, True, where)[_CHUNK_HEADER.size:]
                if riegeli_hash(data) != data_hash:
                    raise DamagedLogError(f"{where}: damaged data in the chunk at byte {pos:,} (checksum mismatch)")
            if chunk_type in _RECORD_CHUNKS:
                records += chunk_records
            pos = end
    return records


def shards(log_dir: str) -> list[str]:
    """The shard folders of ``log_dir`` (those holding any of EnvLogger's shard files), sorted by name."""
    return sorted(entry.name for entry in os.scandir(log_dir)
                  if entry.is_dir() and any(os.path.exists(os.path.join(entry.path, f)) for f in SHARD_FILES))


def check_log_metadata(log_dir: str, verify_data: bool = False) -> None:
    """Checks ``log_dir``'s ``metadata.riegeli`` by ``count_records``: it must hold EnvLogger's one record."""
    where = f"{log_dir}: {LOG_METADATA}"
    if count_records(os.path.join(log_dir, LOG_METADATA), verify_data, where) != 1:
        raise DamagedLogError(f"{where}: holds no record (EnvLogger writes one): damaged")


def check_shards(log_dir: str, verify_data: bool = False) -> dict[str, dict[str, int]]:
    """``{shard: {file: records}}`` of every shard of ``log_dir``, each file checked by ``count_records`` (and
    ``metadata.riegeli`` too, which must hold its one record); ``DamagedLogError`` naming the first damaged or
    missing file otherwise."""
    check_log_metadata(log_dir, verify_data)
    return {shard: {name: count_records(os.path.join(log_dir, shard, name), verify_data,
                                        f"{log_dir}: {shard}/{name}") for name in SHARD_FILES}
            for shard in shards(log_dir)}


def find_damage(log_dir: str, error: BaseException) -> DamagedLogError:
    """The error to raise when EnvLogger's reader failed with ``error`` on ``log_dir``: the first file whose
    checksums fail (small files first), or, when every file checks out, one that names the directory and
    quotes ``error``."""
    names = [os.path.join(shard, name) for shard in shards(log_dir) for name in SHARD_FILES] + [LOG_METADATA]
    for name in sorted(names, key=lambda n: os.path.getsize(os.path.join(log_dir, n))
                       if os.path.exists(os.path.join(log_dir, n)) else -1):
        try:
            count_records(os.path.join(log_dir, name), verify_data=True, where=f"{log_dir}: {name}")
        except DamagedLogError as damage:
            return damage
    return DamagedLogError(f"{log_dir}: EnvLogger's reader failed although every file's checksums hold: "
                           f"{type(error).__name__}: {str(error)[:200]}")


__all__ = ["DamagedLogError", "EPISODE_INDEX", "EPISODE_METADATA", "LOG_METADATA", "SHARD_FILES", "STEPS",
           "STEP_OFFSETS", "check_log_metadata", "check_shards", "count_records", "find_damage", "shards"]
