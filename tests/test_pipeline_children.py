"""The preference pipeline's children follow their parent: within about a second of a SIGKILL of the parent, a
child ends whatever it is doing: busy in a long step that polls nothing (a reward-training step), or stopping by
itself with an interpreter shutdown that would take seconds (torch and TensorFlow loaded)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.process_helpers import running
from trainers.algorithms.reward.supervision import PARENT_GRACE_S, PARENT_POLL_S

REPO = Path(__file__).resolve().parents[1]

#: a parent starting one child: ``busy`` never looks at its ``ChildWatch`` (a training step that takes a minute);
#: ``slow_exit`` stops as soon as its watch says so, but holds an object whose finalizer takes a minute (what a
#: child with torch loaded goes through when its interpreter shuts down).
PARENT = """
import multiprocessing, sys, time
from pathlib import Path
from trainers.algorithms.reward.supervision import ChildSet

class SlowToFinalize:
    def __del__(self, sleep=time.sleep):  # the module's globals may be gone when it runs
        sleep(60)

def busy(watch, marker):
    Path(marker).write_text("working")
    time.sleep(60)

def slow_exit(watch, marker):
    global KEPT
    KEPT = SlowToFinalize()
    Path(marker).write_text("working")
    while not watch.stopped():
        time.sleep(0.05)

if __name__ == "__main__":
    children = ChildSet(multiprocessing.get_context("spawn"))
    child = children.start("reward-trainer", {"busy": busy, "slow_exit": slow_exit}[sys.argv[2]], (sys.argv[1],))
    print(child.pid, flush=True)
    time.sleep(120)
"""


@pytest.mark.parametrize("work", ["busy", "slow_exit"])
def test_a_child_ends_within_a_second_once_its_parent_is_killed(tmp_path, work):
    script, marker = tmp_path / "parent.py", tmp_path / "working"
    script.write_text(PARENT)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    parent = subprocess.Popen([sys.executable, str(script), str(marker), work], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, text=True)
    child = 0
    try:
        child = int(parent.stdout.readline())
        deadline = time.monotonic() + 30
        while not marker.exists():  # the child is inside its work
            assert time.monotonic() < deadline and parent.poll() is None, "the child never started"
            time.sleep(0.02)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        killed = time.monotonic()
        bound = PARENT_POLL_S + PARENT_GRACE_S + 2.0  # + slack for a loaded machine to schedule the exit
        while running(child) and time.monotonic() - killed < bound:
            time.sleep(0.02)
        took = time.monotonic() - killed
        assert not running(child), f"the child outlived its parent by more than {bound:.1f} s"
        if work == "busy":
            assert took >= PARENT_GRACE_S * 0.9  # it had its grace to stop by itself first
    finally:
        if parent.poll() is None:
            parent.kill()
        if child and running(child):
            os.kill(child, signal.SIGKILL)
