"""The commit journal of a log directory: finished episodes that EnvLogger's own files may not hold yet.

EnvLogger's Riegeli writer keeps steps in memory until it is flushed, and each flush ``fsync``s four files
(~0.6 ms here), so flushing it at every episode end costs more than logging the episode. The journal makes a
finished episode survive the death of its process for the price of one ``write`` instead: the episode (its
ordinal in the log directory, its metadata and the serialized steps EnvLogger was given) is appended to
``episodes.journal`` as one frame, ``magic | length | crc32 | payload``. A frame is the commit point: it is
either whole, with a matching checksum, or it is the torn tail of a killed write and is ignored, together
with anything after it. The writer truncates the journal whenever EnvLogger's files are flushed (then they
index every episode the journal held) and removes it on ``close``; a journal that is still there therefore
marks a log directory whose recorder did not close it.

A journal protects against the death of the recording process (SIGKILL, an out-of-memory kill, a crash),
not against losing the machine: the operating system holds a committed frame until it writes it out.
"""

from __future__ import annotations

import os
import struct
import zlib
from typing import Any, NamedTuple

import dm_env
from envlogger import step_data
from envlogger.converters import codec
from envlogger.proto import storage_pb2

from loggers import wire

#: the journal file in a log directory.
JOURNAL = "episodes.journal"
_MAGIC = b"RLJ1"
_HEADER = struct.Struct("<4sII")  # magic, payload length, crc32 of the payload


class JournalEpisode(NamedTuple):
    """A finished episode read back from a journal: its steps as EnvLogger's reader gives them, and metadata."""

    ordinal: int
    steps: list[step_data.StepData]
    metadata: Any


def frame(ordinal: int, steps: list[bytes], metadata: bytes) -> bytes:
    """The journal frame of episode ``ordinal`` from its serialized steps and serialized metadata (``b""``: none)."""
    payload = wire.encoded_tuple([wire.encode(int(ordinal)), metadata, wire.encoded_list(steps)])
    return _HEADER.pack(_MAGIC, len(payload), zlib.crc32(payload)) + payload


class Journal:
    """The append-only journal file of one log directory, created empty when opened."""

    def __init__(self, directory: str):
        self.path = os.path.join(directory, JOURNAL)
        # not O_APPEND: appending writes cost ~20x more here (ext4), and this file has one writer
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)

    def append(self, frames: bytes) -> None:
        """Appends whole frames; they are committed when this returns."""
        view = memoryview(frames)
        while view:
            view = view[os.write(self._fd, view):]

    def reset(self) -> None:
        """Empties the journal (every episode it held is now in EnvLogger's flushed files)."""
        os.ftruncate(self._fd, 0)
        os.lseek(self._fd, 0, os.SEEK_SET)

    def remove(self) -> None:
        """Closes and deletes the journal (the log directory was closed normally); does nothing the second time."""
        if self._fd is None:
            return
        os.close(self._fd)
        self._fd = None
        if os.path.exists(self.path):
            os.remove(self.path)


def _step(decoded: tuple) -> step_data.StepData:
    """A step as ``envlogger.Reader`` returns it, from EnvLogger's encoding ``((type, reward, discount, obs), action,
    custom_data)``."""
    (step_type, reward, discount, observation), action, custom = decoded
    return step_data.StepData(dm_env.TimeStep(dm_env.StepType(step_type), reward, discount, observation), action,
                              custom)


def read_journal(directory: str) -> dict[int, JournalEpisode] | None:
    """``{ordinal: episode}`` of every whole frame of ``directory``'s journal (a torn tail ends the reading);
    None when there is no journal (the recorder closed the directory, or an older writer recorded it)."""
    path = os.path.join(directory, JOURNAL)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    episodes: dict[int, JournalEpisode] = {}
    at = 0
    while at + _HEADER.size <= len(data):
        magic, size, crc = _HEADER.unpack_from(data, at)
        payload = data[at + _HEADER.size:at + _HEADER.size + size]
        if magic != _MAGIC or len(payload) != size or zlib.crc32(payload) != crc:
            break  # the torn tail of a killed write
        ordinal, metadata, steps = codec.decode(storage_pb2.Data.FromString(payload))
        episodes[int(ordinal)] = JournalEpisode(int(ordinal), [_step(s) for s in steps or []], metadata)
        at += _HEADER.size + size
    return episodes


__all__ = ["JOURNAL", "Journal", "JournalEpisode", "frame", "read_journal"]
