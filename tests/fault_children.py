"""Child processes of the recorder's fault tests (tests/test_recorder_faults.py): run as
``python tests/fault_children.py <mode> <json arguments>`` with the repository on ``PYTHONPATH``.

* ``full_disk``: records tiny Wordle games for ever into each given folder, each time under a file size limit
  (``RLIMIT_FSIZE`` with SIGXFSZ ignored, so a write past it fails with EFBIG as a full disk fails with ENOSPC),
  and prints one JSON line per folder: the episodes acknowledged (``before_episode`` of game i runs once game
  i - 1 is committed) and the error that stopped the recording.
* ``hold``: records slow games into a folder, printing ``recording <pid>`` once it has begun (a writer that
  holds the folder's lock until it is killed).
* ``parent``: records slow games on two spawned workers, each worker printing ``worker <pid> <episode>`` at the
  start of each episode (a parent to SIGKILL while its workers write).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time

#: the guesses of every game these children play (two guesses: a game is three EnvLogger steps).
WORDS = ["crane", "slate"]


def _say(line: str) -> None:
    os.write(1, (line + "\n").encode())


def full_disk(runs: list[dict]) -> None:
    """One recording per ``{"data_dir", "limit", "checkpoint", "episodes"}`` under a file size limit of ``limit``
    bytes (``loggers.Durability(episodes, checkpoint_episodes=checkpoint)``)."""
    from loggers import Durability, record
    from rlds_lang.wordle.env import WordleEnv
    from tests.scripted import ScriptedWordle

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    for run in runs:
        acknowledged = [0]

        def mark(env, index):
            acknowledged[0] = index

        resource.setrlimit(resource.RLIMIT_FSIZE, (run["limit"], resource.RLIM_INFINITY))
        try:
            record(WordleEnv(seed=1, max_guesses=2), ScriptedWordle(WORDS), 1_000_000, run["data_dir"],
                   chunk_size=1_000_000, progress=False, before_episode=mark,
                   durability=Durability(run["episodes"], checkpoint_episodes=run["checkpoint"]))
            error = None
        except Exception as caught:  # what stopped it, reported to the test
            error = {"type": type(caught).__name__, "message": str(caught), "errno": getattr(caught, "errno", None)}
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        _say(json.dumps({"acknowledged": acknowledged[0], "error": error}))


class _SlowWords:
    """Plays ``WORDS``, sleeping ``pause`` seconds at each move and printing ``worker <pid> <episode>`` at each
    episode's first move."""

    name = "slow_words"

    def __init__(self, pause: float):
        self.pause, self.episode = pause, -1

    def reset(self, seed: int) -> None:
        self.episode = seed

    def params(self) -> dict:
        return {}

    def act(self, observations, actions) -> str:
        if not actions:
            _say(f"worker {os.getpid()} {self.episode}")
        time.sleep(self.pause)
        return WORDS[len(actions) % len(WORDS)]


def hold(data_dir: str) -> None:
    """Records slow games into ``data_dir`` until killed."""
    from loggers import record
    from rlds_lang.wordle.env import WordleEnv
    from tests.fault_children import _SlowWords as Slow  # importable by name wherever it is unpickled

    _say(f"recording {os.getpid()}")
    record(WordleEnv(seed=1, max_guesses=2), Slow(0.05), 100_000, data_dir, progress=False)


def parent(data_dir: str) -> None:
    """Records slow games on two spawned workers until killed."""
    from loggers import record
    from rlds_lang.wordle.env import WordleEnv
    from tests.fault_children import _SlowWords as Slow  # importable by name in the spawned workers

    _say(f"parent {os.getpid()}")
    record(WordleEnv(seed=1, max_guesses=2), Slow(0.02), 100_000, data_dir, workers=2, chunk_size=50_000,
           progress=False)


if __name__ == "__main__":
    mode, arguments = sys.argv[1], json.loads(sys.argv[2])
    {"full_disk": full_disk, "hold": hold, "parent": parent}[mode](arguments)
