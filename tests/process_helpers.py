"""Helpers of the tests that watch processes end: whether a pid still runs, read from Linux's ``/proc``."""

from __future__ import annotations


def running(pid: int) -> bool:
    """Whether process ``pid`` runs: a zombie waiting for its reaper (state Z or X) counts as ended."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            # the command name in parentheses may hold spaces or ")": the state follows the last ")"
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False
