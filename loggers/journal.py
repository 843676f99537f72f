"""The commit journal of a log directory: finished episodes that EnvLogger's own files may not hold yet.

EnvLogger's Riegeli writer keeps steps in memory until it is flushed, and each flush ``fsync``s four files
(~0.6 ms here), so flushing it at every episode end costs more than logging the episode. The journal makes a
finished episode survive the death of its process for the price of one ``write`` instead: the episode (its
ordinal in the log directory, its metadata and the serialized steps EnvLogger was given) is appended to
``episodes.journal`` as one frame, ``magic | length | crc32 | payload``. A frame is the commit point.

The journal begins with a header frame, the *checkpoint*: how many episodes and steps EnvLogger's files held,
and each file's size, after the last flush the writer checked (``loggers.log_folder.flushed_files``); the
frames after it hold the episodes from that ordinal on. At every checkpoint the writer replaces the journal
(a new file, renamed over the old one, so a kill leaves one or the other whole). It removes the journal on
``close``; a journal that is still there marks a log directory whose recorder did not close it.

Reading a journal (``read_journal``) tells a kill from damage: a kill can only cut the last ``write`` short,
so a frame that runs past the end of the file, with no whole frame after it, is the torn tail of a killed write
and is dropped (``JournalContents.torn_at`` says where). Any other frame that fails its checksum, a missing
header, or ordinals that skip one is a ``DamagedLogError`` naming the file and the byte.

Journals of older writers have no header; they are read as before (a torn or damaged frame ends the reading).

A journal protects against the death of the recording process (SIGKILL, an out-of-memory kill, a crash),
not against losing the machine: the operating system holds a committed frame until it writes it out.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from typing import Any, NamedTuple

import dm_env
from envlogger import step_data
from envlogger.converters import codec
from envlogger.proto import storage_pb2

from loggers import wire
from loggers.log_folder import LogWriteError, read_if_there
from loggers.riegeli_files import DamagedLogError

#: the journal file in a log directory.
JOURNAL = "episodes.journal"
_MAGIC = b"RLJ1"  # an episode's frame
_CHECKPOINT = b"RLJC"  # the header frame
_HEADER = struct.Struct("<4sII")  # magic, payload length, crc32 of the payload


class Checkpoint(NamedTuple):
    """What EnvLogger's files of a log directory held after the last flush its writer checked.

    Attributes:
      episodes: the episodes they index (ordinals below this are there; the journal holds those from it on).
      steps: the steps they hold.
      files: ``{"shard/file": size in bytes}`` of every shard file then.
    """

    episodes: int
    steps: int
    files: dict[str, int]


class JournalEpisode(NamedTuple):
    """A finished episode read back from a journal: its steps as EnvLogger's reader gives them, and metadata."""

    ordinal: int
    steps: list[step_data.StepData]
    metadata: Any


class JournalContents(NamedTuple):
    """A journal read back: its checkpoint (None in an older writer's journal), its episodes by ordinal, and the
    byte where a torn tail (a killed write's part frame) was dropped (None when there was none)."""

    checkpoint: Checkpoint | None
    episodes: dict[int, JournalEpisode]
    torn_at: int | None


def frame(ordinal: int, steps: list[bytes], metadata: bytes) -> bytes:
    """The journal frame of episode ``ordinal`` from its serialized steps and serialized metadata (``b""``: none)."""
    payload = wire.encoded_tuple([wire.encode(int(ordinal)), metadata, wire.encoded_list(steps)])
    return _HEADER.pack(_MAGIC, len(payload), zlib.crc32(payload)) + payload


def _checkpoint_frame(checkpoint: Checkpoint) -> bytes:
    payload = json.dumps(checkpoint._asdict(), sort_keys=True).encode()
    return _HEADER.pack(_CHECKPOINT, len(payload), zlib.crc32(payload)) + payload


class Journal:
    """The append-only journal file of one log directory, created holding ``checkpoint`` only."""

    def __init__(self, directory: str, checkpoint: Checkpoint):
        self.directory = directory
        self.path = os.path.join(directory, JOURNAL)
        self._fd: int | None = None
        self._fd, self._size = self._create(checkpoint)

    def _create(self, checkpoint: Checkpoint) -> tuple[int, int]:
        """A new journal holding ``checkpoint``, renamed into place: a kill leaves the old one or this one."""
        header = _checkpoint_frame(checkpoint)
        temporary = self.path + ".tmp"
        try:
            # not O_APPEND: appending writes cost ~20x more here (ext4), and this file has one writer
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                if os.write(fd, header) != len(header):
                    raise OSError(0, "short write")
                os.replace(temporary, self.path)
            except BaseException:
                os.close(fd)
                raise
        except OSError as error:
            if os.path.exists(temporary):
                os.remove(temporary)
            raise LogWriteError(f"{self.directory}: cannot write a new {JOURNAL} ({error.strerror}): recording "
                                "stopped; the episodes committed before are kept", error.errno or None) from error
        return fd, len(header)

    def append(self, frames: bytes) -> None:
        """Appends whole frames; they are committed when this returns. A failed write (a full disk) is cut off
        again, so the journal still ends on a whole frame, and raises ``LogWriteError``."""
        view = memoryview(frames)
        try:
            while view:
                view = view[os.write(self._fd, view):]
        except OSError as error:
            os.ftruncate(self._fd, self._size)
            os.lseek(self._fd, self._size, os.SEEK_SET)
            raise LogWriteError(f"{self.directory}: cannot append to {JOURNAL} ({error.strerror}): recording stopped; "
                                "the episodes committed before are kept", error.errno) from error
        self._size += len(frames)

    def restart(self, checkpoint: Checkpoint) -> None:
        """Replaces the journal by one holding ``checkpoint`` only (EnvLogger's files now hold every episode the
        old one held); when that fails the old journal stays and ``LogWriteError`` is raised."""
        fd, size = self._create(checkpoint)
        os.close(self._fd)
        self._fd, self._size = fd, size

    def close(self) -> None:
        """Closes the journal and keeps it (the log directory's files lack episodes it holds)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def remove(self) -> None:
        """Closes and deletes the journal (the log directory was closed normally)."""
        self.close()
        if os.path.exists(self.path):
            os.remove(self.path)


def _step(decoded: tuple) -> step_data.StepData:
    """A step as ``envlogger.Reader`` returns it, from EnvLogger's encoding ``((type, reward, discount, obs), action,
    custom_data)``."""
    (step_type, reward, discount, observation), action, custom = decoded
    return step_data.StepData(dm_env.TimeStep(dm_env.StepType(step_type), reward, discount, observation), action,
                              custom)


def _whole_frame_at(data: bytes, at: int) -> bool:
    """Whether a whole episode frame with a matching checksum starts at byte ``at``."""
    if at + _HEADER.size > len(data):
        return False
    magic, size, crc = _HEADER.unpack_from(data, at)
    payload = data[at + _HEADER.size:at + _HEADER.size + size]
    return magic == _MAGIC and len(payload) == size and zlib.crc32(payload) == crc


def _frame_after(data: bytes, at: int) -> int | None:
    """The byte of the first whole episode frame after ``at`` (None when there is none)."""
    found = data.find(_MAGIC, at + 1)
    while found >= 0:
        if _whole_frame_at(data, found):
            return found
        found = data.find(_MAGIC, found + 1)
    return None


def _read_checkpoint(path: str, data: bytes) -> tuple[Checkpoint | None, int]:
    """The journal's checkpoint and the byte after it (``(None, 0)`` for an older writer's journal, which is empty
    or begins with an episode's frame)."""
    if not data or data.startswith(_MAGIC):
        return None, 0
    if len(data) < _HEADER.size:
        raise DamagedLogError(f"{path}: damaged header at byte 0 (the file ends inside it)")
    magic, size, crc = _HEADER.unpack_from(data, 0)
    payload = data[_HEADER.size:_HEADER.size + size]
    try:
        if magic != _CHECKPOINT:
            raise ValueError(f"it begins with {magic!r}, not a frame's magic")
        if len(payload) != size or zlib.crc32(payload) != crc:
            raise ValueError("checksum mismatch")
        fields = json.loads(payload)
        checkpoint = Checkpoint(int(fields["episodes"]), int(fields["steps"]),
                                {str(k): int(v) for k, v in fields["files"].items()})
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise DamagedLogError(f"{path}: damaged header at byte 0 ({error})") from None
    return checkpoint, _HEADER.size + size


def read_journal(directory: str) -> JournalContents | None:
    """The checkpoint and episodes of ``directory``'s journal, a torn tail dropped; None when there is no journal
    (the recorder closed the directory, or it was never journaled). ``DamagedLogError`` names the file and byte
    of damage no kill can leave: a frame that fails its checksum before the tail, ordinals that skip one."""
    path = os.path.join(directory, JOURNAL)
    data = read_if_there(path)
    if data is None:
        return None
    checkpoint, at = _read_checkpoint(path, data)
    episodes: dict[int, JournalEpisode] = {}
    torn_at = None
    expected = None if checkpoint is None else checkpoint.episodes
    while at < len(data):
        if not _whole_frame_at(data, at):
            if checkpoint is None:
                torn_at = at  # an older writer's journal: a torn or damaged frame ends it
                break
            magic, size = data[at:at + 4], _HEADER.unpack_from(data, at)[1] if at + _HEADER.size <= len(data) else 0
            runs_past_end = at + _HEADER.size + size > len(data) and _MAGIC.startswith(magic[:len(_MAGIC)])
            if runs_past_end and _frame_after(data, at) is None:
                torn_at = at  # the part frame of a killed write
                break
            raise DamagedLogError(f"{path}: damaged frame at byte {at:,} (of {len(data):,}): it fails its checksum "
                                  "and is not the torn tail of a killed write; the episodes it and the frames after "
                                  "it hold are not read")
        _, size, _ = _HEADER.unpack_from(data, at)
        payload = data[at + _HEADER.size:at + _HEADER.size + size]
        ordinal, metadata, steps = codec.decode(storage_pb2.Data.FromString(payload))
        ordinal = int(ordinal)
        if expected is not None and ordinal != expected:
            raise DamagedLogError(f"{path}: the frame at byte {at:,} holds episode {ordinal:,} where episode "
                                  f"{expected:,} was due: a frame is missing or out of place")
        episodes[ordinal] = JournalEpisode(ordinal, [_step(s) for s in steps or []], metadata)
        expected = None if expected is None else ordinal + 1
        at += _HEADER.size + size
    return JournalContents(checkpoint, episodes, torn_at)


__all__ = ["Checkpoint", "JOURNAL", "Journal", "JournalContents", "JournalEpisode", "frame", "read_journal"]
