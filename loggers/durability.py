"""How much a killed recorder may lose: the durability setting of ``loggers.record`` and its writer.

Like a database's commit setting, it trades what a crash can lose against what each episode costs:

* ``PER_EPISODE`` (``Durability(episodes=1)``): every episode is committed when its last step is logged.
  A SIGKILL loses at most the episode in flight.
* ``Durability.group(episodes=N, milliseconds=T)``, group commit: finished episodes are committed
  together, once N of them wait or once the oldest waiting one ended T ms ago, whichever comes first (the
  age is checked whenever a step is logged). A SIGKILL loses at most the episode in flight and the
  episodes that finished since the last commit: fewer than N, and none that ended more than T ms before
  the last step logged.

An episode ends when its last step is logged with its episode metadata (as ``record`` logs them); one whose
metadata does not come with its last step (an EnvLogger ``episode_fn`` that returned None there) ends when
the next episode begins, or at ``close``.

A commit appends the waiting episodes to the log directory's journal (``loggers.journal``): it survives
the death of the process, not the loss of the machine. EnvLogger's own files are flushed (and fsync'd)
every ``checkpoint_episodes`` episodes, which bounds the journal's size, and at ``close``.
"""

from __future__ import annotations

import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class Durability:
    """When finished episodes are committed: once ``episodes`` of them wait, or once the oldest waiting one
    ended ``milliseconds`` ago (None: no time limit), whichever comes first.

    Attributes:
      episodes: finished episodes committed together (1: each one when it ends).
      milliseconds: the longest a finished episode waits for its commit, checked at every logged step.
      checkpoint_episodes: EnvLogger's Riegeli files are flushed (fsync'd) every this many episodes, which
        empties the journal; each flush costs ~0.6 ms, so rarer flushes are cheaper and the journal longer.
    """

    episodes: int = 1
    milliseconds: float | None = None
    checkpoint_episodes: int = 1000

    def __post_init__(self) -> None:
        if not isinstance(self.episodes, int) or self.episodes < 1:
            raise ValueError(f"Durability.episodes must be an integer >= 1, got {self.episodes!r}")
        if self.milliseconds is not None and not (self.milliseconds >= 0 and math.isfinite(self.milliseconds)):
            raise ValueError(f"Durability.milliseconds must be a finite number >= 0 or None, got {self.milliseconds!r}")
        if not isinstance(self.checkpoint_episodes, int) or self.checkpoint_episodes < 1:
            raise ValueError(f"Durability.checkpoint_episodes must be an integer >= 1, got {self.checkpoint_episodes!r}")

    @classmethod
    def group(cls, episodes: int = 100, milliseconds: float | None = 1000.0, **kwargs: int) -> "Durability":
        """Group commit: every ``episodes`` finished episodes or ``milliseconds``, whichever comes first."""
        return cls(episodes=episodes, milliseconds=milliseconds, **kwargs)

    def loss_bound(self) -> str:
        """What a SIGKILL may lose under this setting, in words."""
        if self.episodes == 1:
            return "at most the episode in flight"
        time = f", and none that ended more than {self.milliseconds:g} ms before the last logged step" \
            if self.milliseconds is not None else ""
        return f"the episode in flight and at most {self.episodes - 1} finished episodes{time}"


#: each episode committed when it ends: a SIGKILL loses at most the episode in flight.
PER_EPISODE = Durability()

__all__ = ["Durability", "PER_EPISODE"]
