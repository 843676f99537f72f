"""An EnvLogger Riegeli backend writer whose finished episodes survive a SIGKILL, each from its last step on.

EnvLogger's Riegeli writer indexes an episode (writes its start and its metadata) only when the next one
starts, and flushes at random (1 step in 5,000) by default, so a killed process can lose many finished
episodes; even flushing at every episode start leaves a window between an episode's last step and the next
episode's first in which the finished episode is not yet indexed. This writer closes that window: when an
episode ends (its episode metadata arrives with its last step) it first writes the metadata of the episodes
the on-disk index may still lack -- this one and the one before -- to a small side file, atomically
(written aside, then renamed), each keyed by the number of steps the log directory holds once it ends; then
it flushes the steps. At every instant the flushed steps of a finished episode are either indexed or
described by the side file, which ``loggers.reader`` reads to recover them; ``close`` writes the index and
removes the side file. A killed run therefore loses at most the episode in flight.
"""

from __future__ import annotations

import os
from typing import Any

from envlogger import step_data
from envlogger.backends import riegeli_backend_writer
from envlogger.converters import codec
from envlogger.proto import storage_pb2

#: the side file (in the log directory) describing the finished episodes the index may not hold yet.
UNINDEXED_EPISODES = "unindexed_episodes.pb"


def _never(_: step_data.StepData) -> bool:
    return False


def read_unindexed(data_directory: str) -> dict[int, Any]:
    """``{steps in the log directory once the episode ended: its episode metadata}`` from the side file
    (empty when there is none: the run closed normally or ended no episode)."""
    path = os.path.join(data_directory, UNINDEXED_EPISODES)
    if not os.path.exists(path):
        return {}
    with open(path, "rb") as f:
        entries = codec.decode(storage_pb2.Data.FromString(f.read()))["episodes"]
    return {int(entry["end"]): entry["metadata"] for entry in entries}


class DurableRiegeliWriter(riegeli_backend_writer.RiegeliBackendWriter):
    """Riegeli backend writer that makes each episode durable, with its metadata, when its last step is logged."""

    def __init__(self, data_directory: str, **kwargs: Any):
        kwargs.setdefault("flush_scheduler", _never)
        super().__init__(data_directory=data_directory, **kwargs)
        self._directory = data_directory
        self._steps = 0  # steps logged so far, over every shard of this log directory
        self._ended = False  # the last logged step ended its episode, which is not committed yet
        self._unindexed: list[dict[str, Any]] = []

    def _record_step(self, data: step_data.StepData, is_new_episode: bool) -> None:
        if is_new_episode and self._ended:
            self._commit(None)  # an episode ended without metadata: commit it before the next begins
        super()._record_step(data, is_new_episode)
        self._steps += 1
        self._ended = data.timestep.last()

    def set_episode_metadata(self, data: Any) -> None:
        super().set_episode_metadata(data)
        if self._ended:
            self._commit(data)

    def _commit(self, metadata: Any) -> None:
        """Describes the just-ended episode (and the one before) in the side file, then flushes its steps."""
        self._unindexed = self._unindexed[-1:] + [{"end": self._steps, "metadata": metadata}]
        path = os.path.join(self._directory, UNINDEXED_EPISODES)
        with open(path + ".tmp", "wb") as f:
            f.write(codec.encode({"episodes": self._unindexed}).SerializeToString())
        os.replace(path + ".tmp", path)
        self._data_writer.flush()
        self._ended = False

    def close(self) -> None:
        super().close()
        path = os.path.join(self._directory, UNINDEXED_EPISODES)
        if os.path.exists(path):
            os.remove(path)
