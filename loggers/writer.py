"""An EnvLogger Riegeli backend writer whose finished episodes survive a SIGKILL, within a chosen bound.

EnvLogger's Riegeli writer indexes an episode (writes its start and its metadata) only when the next one
starts and flushes at random (1 step in 5,000) by default, so a killed process can lose many finished
episodes; flushing it at every episode end instead costs four ``fsync`` calls (~0.6 ms) per episode and
still leaves the just-finished episode unindexed until the next one begins. This writer keeps EnvLogger's
files exactly as EnvLogger writes them (stock readers read them) and adds a commit journal
(``loggers.journal``): a finished episode is committed by appending its steps and metadata to the journal
in one ``write``, when it ends (``PER_EPISODE``) or with others (group commit, ``loggers.durability``).
EnvLogger's files are flushed every ``checkpoint_episodes`` episodes, at the start of an episode (the flush
then indexes every episode before it), which empties the journal; ``close`` flushes them and removes the
journal. ``loggers.reader`` reads the journal of a killed log directory to recover what the index lacks.

Steps and metadata are encoded by ``loggers.wire`` (the bytes of EnvLogger's codec, without its walk over
every scalar), once for EnvLogger's files and the journal alike.

Log directories that an older version of this writer left killed carry a side file instead
(``UNINDEXED_EPISODES``: the metadata of finished episodes keyed by the steps logged when each ended);
``read_unindexed`` still reads it.
"""

from __future__ import annotations

import os
import time
from typing import Any

from envlogger import step_data
from envlogger.backends import riegeli_backend_writer
from envlogger.converters import codec
from envlogger.proto import storage_pb2

from loggers import wire
from loggers.durability import PER_EPISODE, Durability
from loggers.journal import Journal, frame

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


class DurableRiegeliWriter(riegeli_backend_writer.RiegeliBackendWriter):
    """Riegeli backend writer that commits finished episodes to a journal as ``durability`` says.

    Args:
      data_directory: the log directory.
      durability: when finished episodes are committed (``loggers.durability``; default: each when it ends).
      **kwargs: passed to EnvLogger's ``RiegeliBackendWriter`` (``metadata``, ``writer_options``...); a
        ``flush_scheduler`` given there still flushes EnvLogger's files when it says so (by default never
        between checkpoints).
    """

    def __init__(self, data_directory: str, durability: Durability = PER_EPISODE, **kwargs: Any):
        kwargs.setdefault("flush_scheduler", _never)
        self._journal: Journal | None = None
        # opened first: from EnvLogger's first file on, the journal marks the directory as not closed yet
        self._journal = Journal(data_directory)
        super().__init__(data_directory=data_directory, **kwargs)
        self._durability = durability
        self._ordinal = -1  # the ordinal of the episode in flight within this log directory
        self._steps: list[bytes] = []  # its serialized steps
        self._metadata = b""  # its latest serialized episode metadata
        self._ended = False  # its last step is logged and it is not committed yet
        self._waiting: list[bytes] = []  # journal frames of finished episodes awaiting a group commit
        self._waiting_since = 0.0
        self._journaled = 0  # episodes in the journal

    def _record_step(self, data: step_data.StepData, is_new_episode: bool) -> None:
        if is_new_episode:
            if self._ended:
                self._finish()  # the episode ended without metadata arriving with its last step
            self._ordinal += 1
            self._steps, self._metadata = [], b""
        encoded = wire.encode(data)
        if not self._data_writer.add_step(storage_pb2.Data.FromString(encoded), is_new_episode):
            raise RuntimeError(f"{self._data_directory}: EnvLogger failed to write step {len(self._steps)} of episode "
                               f"{self._ordinal}; see its log")
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
        self._journal.append(b"".join(self._waiting))
        self._journaled += len(self._waiting)
        self._waiting = []

    def _checkpoint(self) -> None:
        """Flushes EnvLogger's files (indexing every episode before the one just begun), then empties the journal."""
        self._data_writer.flush()
        self._journal.reset()
        self._journaled, self._waiting = 0, []

    def close(self) -> None:
        if self._journal is None:  # the journal could not be opened: nothing was written
            return
        super().close()  # flushes and indexes every episode, the waiting ones included
        self._journal.remove()
