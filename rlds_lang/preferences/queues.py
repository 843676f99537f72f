"""The two kinds of queue between the preference pipeline's processes: one that drops, one that never does.

Clips flow from the environment to the labelling process through a small bounded queue: the agent must
never wait for a labeller, so a clip that finds the queue full is dropped and counted (``DroppingSink``,
usable as ``PreferenceEnv``'s ``clip_sink``). Labels flow from the labelling process to the reward trainer
through a queue that never drops: ``put_blocking`` waits for room, so every label that was recorded reaches
the trainer. Both work with ``queue.Queue`` and ``multiprocessing`` queues.

Example::

    import multiprocessing as mp
    clips = mp.get_context("spawn").Queue(maxsize=4)
    sink = DroppingSink(clips)
    env = PreferenceEnv(WordleEnv(), clip_sink=sink)      # sink.sent / sink.dropped count what happened
"""

from __future__ import annotations

import queue
import time
from typing import Any, Callable


class DroppingSink:
    """A clip sink that puts each clip on ``target`` without waiting and drops it when the queue is full.

    ``check`` (optional) is called before each put and may raise to stop the caller, e.g. when the process
    reading the queue has died: clips are then neither put nor counted as dropped.

    Attributes:
      sent: clips put on the queue.
      dropped: clips dropped because the queue was full.
    """

    def __init__(self, target: Any, check: Callable[[], None] | None = None):
        self.target = target
        self.check = check
        self.sent = 0
        self.dropped = 0

    def __call__(self, item: Any) -> bool:
        """Puts ``item`` if there is room; ``False`` (and one more drop) if the queue is full."""
        if self.check is not None:
            self.check()
        try:
            self.target.put_nowait(item)
        except queue.Full:
            self.dropped += 1
            return False
        self.sent += 1
        return True


def put_blocking(target: Any, item: Any, alive: Callable[[], bool] = lambda: True, poll: float = 0.5) -> bool:
    """Puts ``item`` on ``target``, waiting as long as it takes while ``alive()`` holds.

    Returns ``True`` once the item is on the queue, ``False`` only if ``alive()`` turned false while the queue
    stayed full (the reader is gone: waiting longer would hang the writer for ever).
    """
    while True:
        try:
            target.put(item, timeout=poll)
            return True
        except queue.Full:
            if not alive():
                return False


def get_or_none(source: Any, timeout: float) -> tuple[bool, Any]:
    """``(True, item)`` for the next item of ``source`` within ``timeout`` seconds, ``(False, None)`` if none came."""
    try:
        return True, source.get(timeout=timeout)
    except queue.Empty:
        return False, None


def drain(source: Any, limit: int = 1_000_000) -> list[Any]:
    """Every item ``source`` holds right now (up to ``limit``), without waiting."""
    items = []
    deadline = time.monotonic() + 1.0
    while len(items) < limit:
        try:
            items.append(source.get_nowait())
        except queue.Empty:
            if time.monotonic() > deadline or not _maybe_more(source):
                break
    return items


def _maybe_more(source: Any) -> bool:
    """Whether a multiprocessing queue may still deliver buffered items (``empty()`` lags its feeder thread)."""
    try:
        return not source.empty()
    except (NotImplementedError, OSError):
        return False


__all__ = ["DroppingSink", "drain", "get_or_none", "put_blocking"]
