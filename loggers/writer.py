"""An EnvLogger Riegeli backend writer whose finished episodes survive a SIGKILL.

EnvLogger's Riegeli writer indexes an episode only when the next one starts, and flushes at random
(1 step in 5,000) by default, so a killed process can lose many finished episodes. This writer flushes
right after the first step of every new episode -- the moment the previous episode (its steps and its
metadata) is indexed -- and never at random. ``loggers.record`` starts the next episode as soon as one
ends, so a killed run loses at most the episode in flight.
"""

from __future__ import annotations

from typing import Any

from envlogger import step_data
from envlogger.backends import riegeli_backend_writer


def _never(_: step_data.StepData) -> bool:
    return False


class DurableRiegeliWriter(riegeli_backend_writer.RiegeliBackendWriter):
    """Riegeli backend writer that makes each finished episode durable when the next one starts."""

    def __init__(self, data_directory: str, **kwargs: Any):
        kwargs.setdefault("flush_scheduler", _never)
        super().__init__(data_directory=data_directory, **kwargs)

    def _record_step(self, data: step_data.StepData, is_new_episode: bool) -> None:
        super()._record_step(data, is_new_episode)
        if is_new_episode:
            self._data_writer.flush()
