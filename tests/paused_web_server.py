"""A creator_web server (``python -m creator_web.server``'s arguments) with a pause point, for kill tests.

With ``PAUSE_AT_STEP=N`` and ``PAUSE_MARK=FILE`` in the environment, the N-th step any ``LiveEpisode`` logs in
this process (counting from 1; an annotation or export rewrites episodes through ``LiveEpisode``) first creates
``FILE`` and then sleeps: a test waits for ``FILE`` and SIGKILLs the server while it is in the middle of a write.
The server's own code is not changed; the pause is patched in here.
"""

from __future__ import annotations

import itertools
import os
import sys
import time

from creator_web import server
from loggers import live


def _pause_at(step: int, mark: str) -> None:
    original = live.LiveEpisode.step
    count = itertools.count(1)

    def step_then_maybe_pause(self, action, step_metadata=None):
        if next(count) == step:
            with open(mark, "w", encoding="utf-8") as f:
                f.write(self.log_dir)
            time.sleep(120)  # the test kills the server long before this ends
        return original(self, action, step_metadata)

    live.LiveEpisode.step = step_then_maybe_pause


if __name__ == "__main__":
    if os.environ.get("PAUSE_AT_STEP"):
        _pause_at(int(os.environ["PAUSE_AT_STEP"]), os.environ["PAUSE_MARK"])
    server.main(sys.argv[1:])
