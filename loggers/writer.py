"""An EnvLogger Riegeli backend writer whose finished episodes survive a SIGKILL, within a chosen bound, and
whose committed episodes survive a full disk.

EnvLogger's Riegeli writer indexes an episode (writes its start and its metadata) only when the next one
starts and flushes at random (1 step in 5,000) by default, so a killed process can lose many finished
episodes; flushing it at every episode end instead costs four ``fsync`` calls (~0.6 ms) per episode and
still leaves the just-finished episode unindexed until the next one begins. This writer keeps EnvLogger's
files exactly as EnvLogger writes them (stock readers read them) and adds a commit journal
(``loggers.journal``): a finished episode is committed by appending its steps and metadata to the journal
in one ``write``, when it ends (``PER_EPISODE``) or with others (group commit, ``loggers.durability``).
EnvLogger's files are flushed every ``checkpoint_episodes`` episodes, at the start of an episode (the flush
then indexes every episode before it); ``close`` flushes them too. ``loggers.reader`` reads the journal of a
killed log directory to recover what the index lacks.

EnvLogger's flush reports no failure (it logs one), so after each flush the writer checks what reached the
files (``loggers.log_folder.flushed_files``) before it replaces the journal by a new one, whose header records
that checkpoint; the close writes the closed manifest (``log_manifest.json``) and removes the journal only
once the check passed. A write that fails (a full disk, a file that may grow no more) stops the recording with
``LogWriteError`` naming the log directory and the file; the close then cuts EnvLogger's files back to the
last checked flush and keeps the journal, so every committed episode stays readable.

One writer per log directory: it holds the directory's lock (``loggers.folder_lock``) until it closes, and
refuses a directory that already holds a log.

Steps and metadata are encoded by ``loggers.wire`` (the bytes of EnvLogger's codec, without its walk over
every scalar), once for EnvLogger's files and the journal alike.

Log directories that an older version of this writer left killed carry a side file instead
(``UNINDEXED_EPISODES``: the metadata of finished episodes keyed by the steps logged when each ended);
``read_unindexed`` still reads it.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any

from envlogger import step_data
from envlogger.backends import riegeli_backend_writer
from envlogger.converters import codec
from envlogger.proto import storage_pb2

from loggers import wire
from loggers.durability import PER_EPISODE, Durability
from loggers.folder_lock import FolderLock
from loggers.journal import JOURNAL, Checkpoint, Journal, frame
from loggers.log_folder import (MANIFEST, FileState, LogWriteError, flushed_files, truncate_to, write_closed_manifest,
                                write_open_manifest)
from loggers.riegeli_files import LOG_METADATA, DamagedLogError, count_records

#: the side file of older writers (in the log directory) describing finished episodes the index may lack.
UNINDEXED_EPISODES = "unindexed_episodes.pb"


def _never(_: step_data.StepData) -> bool:
    return False


def read_unindexed(data_directory: str) -> dict[int, Any]:
    """``{steps in the log directory once the episode ended: its episode metadata}`` from an older writer's side
    file (empty when there is none)."""
    path = os.path.join(data_directory, UNINDEXED_EPISODES)
    if not os.path.exists(path):
        return {}
    with open(path, "rb") as f:
        entries = codec.decode(storage_pb2.Data.FromString(f.read()))["episodes"]
    return {int(entry["end"]): entry["metadata"] for entry in entries}


def _refuse_used(data_directory: str) -> None:
    """Refuses a log directory that already holds a log (a second writer would truncate a killed one's journal)."""
    used = [name for name in (JOURNAL, MANIFEST, LOG_METADATA) if os.path.exists(os.path.join(data_directory, name))]
    if used:
        raise FileExistsError(f"{data_directory} already holds a log ({used[0]}): record into a new folder so "
                              "nothing recorded is lost")


def _check_started(data_directory: str) -> None:
    """Raises ``LogWriteError`` when EnvLogger could not write ``metadata.riegeli`` (it logs that, and goes on)."""
    where = f"{data_directory}: {LOG_METADATA}"
    try:
        records = count_records(os.path.join(data_directory, LOG_METADATA), where=where, hashes=False)
    except DamagedLogError as damage:
        raise LogWriteError(f"{damage}: EnvLogger could not start writing (disk full?); see its log") from None
    if records != 1:
        raise LogWriteError(f"{where}: holds {records} records, not EnvLogger's one: EnvLogger could not start "
                            "writing (disk full?); see its log")


class DurableRiegeliWriter(riegeli_backend_writer.RiegeliBackendWriter):
    """Riegeli backend writer that commits finished episodes to a journal as ``durability`` says.

    Args:
      data_directory: the log directory (new, or holding no log yet).
      durability: when finished episodes are committed (``loggers.durability``; default: each when it ends).
      **kwargs: passed to EnvLogger's ``RiegeliBackendWriter`` (``metadata``, ``writer_options``...); a
        ``flush_scheduler`` given there still flushes EnvLogger's files when it says so (by default never
        between checkpoints).

    Raises:
      loggers.folder_lock.FolderLockedError: another writer is writing into ``data_directory``.
      LogWriteError: a file could not be written (at the start, a step, a commit, a checkpoint or the close).
    """

    def __init__(self, data_directory: str, durability: Durability = PER_EPISODE, **kwargs: Any):
        kwargs.setdefault("flush_scheduler", _never)
        self._journal: Journal | None = None
        self._lock = FolderLock(data_directory, "this writer")
        try:
            _refuse_used(data_directory)
            # the journal first: from EnvLogger's first file on, it marks the directory as not closed yet
            self._journal = Journal(data_directory, Checkpoint(0, 0, {}))
            try:
                write_open_manifest(data_directory)
            except OSError as error:
                raise LogWriteError(f"{data_directory}: cannot write {MANIFEST} ({error.strerror})", error.errno) \
                    from error
            super().__init__(data_directory=data_directory, **kwargs)
            _check_started(data_directory)
        except BaseException:
            if self._journal is not None:
                self._journal.close()
                self._journal = None  # nothing for close (or __del__) to do
            self._lock.release()
            raise
        self._durability = durability
        self._ordinal = -1  # the ordinal of the episode in flight within this log directory
        self._steps: list[bytes] = []  # its serialized steps
        self._metadata = b""  # its latest serialized episode metadata
        self._ended = False  # its last step is logged and it is not committed yet
        self._waiting: list[bytes] = []  # journal frames of finished episodes awaiting a group commit
        self._waiting_since = 0.0
        self._journaled = 0  # episodes in the journal
        self._earlier_steps = 0  # steps of the episodes before the one in flight
        self._earlier_metadata = 0  # of those episodes, how many have metadata
        self._flushed: dict[str, FileState] = {}  # EnvLogger's files as the last checked flush left them
        self._failure: LogWriteError | None = None  # what stopped the recording

    def _stop(self, error: LogWriteError) -> LogWriteError:
        """Records that writing failed (the close then keeps the journal; the first failure is kept) and returns
        ``error`` to raise."""
        if self._failure is None:
            self._failure = error
        return error

    def _record_step(self, data: step_data.StepData, is_new_episode: bool) -> None:
        if is_new_episode:
            if self._failure is not None:
                raise LogWriteError(f"{self._failure}; no episode is recorded after it", self._failure.code)
            if self._ended:
                self._finish()  # the episode ended without metadata arriving with its last step
            self._ordinal += 1
            self._earlier_steps += len(self._steps)
            self._earlier_metadata += bool(self._metadata)
            self._steps, self._metadata = [], b""
        encoded = wire.encode(data)
        if not self._data_writer.add_step(storage_pb2.Data.FromString(encoded), is_new_episode):
            raise self._stop(LogWriteError(f"{self._data_directory}: EnvLogger could not write step {len(self._steps)}"
                                           f" of episode {self._ordinal} (disk full?); see its log"))
        self._steps.append(encoded)
        self._ended = data.timestep.last()
        if self._flush_scheduler(data):  # a caller's own schedule, e.g. every step of a long labelling session
            self._data_writer.flush()
        if is_new_episode and self._journaled + len(self._waiting) >= self._durability.checkpoint_episodes:
            self._checkpoint()
        elif self._waiting and self._overdue():
            self._commit()

    def set_episode_metadata(self, data: Any) -> None:
        self._metadata = wire.encode(data)
        self._data_writer.set_episode_metadata(storage_pb2.Data.FromString(self._metadata))
        if self._ended:
            self._finish()

    def _finish(self) -> None:
        """Queues the just-finished episode for commit, and commits if the durability setting says so."""
        self._waiting.append(frame(self._ordinal, self._steps, self._metadata))
        self._ended = False
        if len(self._waiting) == 1:
            self._waiting_since = time.monotonic()
        if len(self._waiting) >= self._durability.episodes or self._overdue():
            self._commit()

    def _overdue(self) -> bool:
        limit = self._durability.milliseconds
        return limit is not None and (time.monotonic() - self._waiting_since) * 1000.0 >= limit

    def _commit(self) -> None:
        """Appends the waiting episodes to the journal: from now on a SIGKILL does not lose them."""
        try:
            self._journal.append(b"".join(self._waiting))
        except LogWriteError as error:
            self._stop(error)
            raise
        self._journaled += len(self._waiting)
        self._waiting = []

    def _check_flush(self, steps: int, metadata: int) -> dict[str, FileState]:
        """EnvLogger's files after a flush, checked to hold ``steps`` steps and ``metadata`` metadata records."""
        try:
            return flushed_files(self._data_directory, self._flushed, steps, metadata)
        except LogWriteError as error:
            self._stop(error)
            raise

    def _checkpoint(self) -> None:
        """Flushes EnvLogger's files (indexing every episode before the one just begun), checks that the flush
        reached them, then replaces the journal by one holding that checkpoint only."""
        self._data_writer.flush()
        steps = self._earlier_steps + len(self._steps)
        try:
            self._flushed = self._check_flush(steps, self._earlier_metadata)
        except LogWriteError:
            if self._waiting:  # finished episodes the failed flush was to hold: into the journal, if it still can
                try:
                    self._commit()
                except LogWriteError:
                    pass
            raise
        try:
            self._journal.restart(Checkpoint(self._ordinal, steps, {r: s.size for r, s in self._flushed.items()}))
        except LogWriteError as error:
            self._stop(error)
            raise
        self._journaled, self._waiting = 0, []

    def close(self) -> None:
        """Flushes EnvLogger's files, checks them, marks the directory closed and removes the journal; when the
        check fails (or the recording had already failed), cuts the files back to the last checked flush and keeps
        the journal instead. Raises ``LogWriteError`` when the close itself failed, and not again after a failure
        already raised."""
        if self._journal is None:  # closed already
            return
        earlier = self._failure
        try:
            super().close()  # flushes and indexes every episode, the waiting ones included
            steps = self._earlier_steps + len(self._steps)
            self._flushed = self._check_flush(steps, self._earlier_metadata + bool(self._metadata))
            try:
                write_closed_manifest(self._data_directory, self._flushed, self._ordinal + 1, steps)
            except OSError as error:
                raise self._stop(LogWriteError(f"{self._data_directory}: cannot write {MANIFEST} ({error.strerror})",
                                               error.errno)) from error
            self._journal.remove()
        except LogWriteError:
            self._keep_journal()
            if earlier is None:
                raise
        finally:
            self._journal.close()
            self._journal = None
            self._lock.release()

    def __del__(self) -> None:
        if sys.is_finalizing():  # the interpreter is ending: the journal keeps what a kill would keep
            return
        self.close()

    def _keep_journal(self) -> None:
        """After a failed write: cuts EnvLogger's files back to the last checked flush (what came after may be a
        part chunk) and keeps the journal, which holds every episode committed since."""
        self._journal.close()
        try:
            truncate_to(self._data_directory, {rel: state.size for rel, state in self._flushed.items()})
        except OSError as error:
            logging.error("%s: cannot cut EnvLogger's files back to their last checked flush (%s); readers use the "
                          "journal's checkpoint instead", self._data_directory, error)

