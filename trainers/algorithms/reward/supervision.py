"""Keeping the preference pipeline's child processes on a short leash: failures surface, nobody is orphaned.

The pipeline (``trainers.algorithms.reward.pipeline``) runs its labeller and its reward trainer in child
processes. This module holds the rules that tie them to the parent:

- a child runs its work through ``run_child``: an exception is sent to the parent (its traceback, cut to
  ``MAX_ERROR_CHARS``) on an error queue, printed to the child's stderr, and the child exits with code 1;
- a child asks ``ChildWatch.stopped()`` whenever it would wait: it is true once the parent set the shared stop
  event (a sibling failed, or the parent is closing in a hurry) or once the parent process is gone (its
  parent id changed). Children ignore SIGTERM/SIGINT, so this polling is what makes them end when the parent
  is killed outright. A child busy in a long step polls nothing for a while, so ``run_child`` also starts a
  thread that looks for the parent every ``PARENT_POLL_S`` seconds and, ``PARENT_GRACE_S`` seconds after the
  parent is gone, ends the process (``os._exit``) if it has not ended by itself: a child outlives its parent by
  at most about a second, whatever it is doing. A child that stopped by itself because its parent is gone
  skips the interpreter's shutdown (seconds with torch loaded) and exits at once. (A child still importing when
  its parent dies ends once its imports are done and this thread starts: a spawned child runs no code of ours
  before that.)
- the parent keeps a ``ChildSet``: ``check()`` raises ``PipelineError`` (naming the child, its exit code and
  its error) as soon as a child has ended while the pipeline is open, and ``join(deadline)`` waits for the
  children until a deadline, sets the stop event when one of them fails so the other one stops waiting for
  it, and kills (SIGKILL: SIGTERM is ignored) whatever is still running at the deadline.

Example::

    children = ChildSet(context)
    children.start("reward-trainer", work, args)
    children.check()                       # raises PipelineError once the trainer has died
    report = children.join(time.monotonic() + 10.0)
"""

from __future__ import annotations

import dataclasses
import os
import queue
import signal
import sys
import threading
import time
import traceback
from typing import Any, Callable

#: characters of a child's traceback sent to the parent (the end of it, where the error is).
MAX_ERROR_CHARS = 4000
#: how often a child looks for its parent, and how long it may take to end by itself once the parent is gone.
PARENT_POLL_S, PARENT_GRACE_S = 0.1, 0.8
#: the exit code of a child that ended itself because its parent was gone.
ORPHAN_EXIT_CODE = 75


class PipelineError(RuntimeError):
    """A child process of the preference pipeline failed (or did not end in time); the message names it."""

    def __init__(self, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        #: per child name: ``{"exit_code": int | None, "error": str}``.
        self.details = details or {}


class ChildWatch:
    """What a child polls to learn that it must stop: the parent's stop event, or the parent's death."""

    def __init__(self, stop: Any, parent_pid: int):
        self.stop = stop
        self.parent_pid = int(parent_pid)

    def parent_gone(self) -> bool:
        """Whether the process that started this child has ended (the child was re-parented)."""
        return os.getppid() != self.parent_pid

    def stopped(self) -> bool:
        """Whether this child must stop now (stop event set, or parent gone)."""
        return self.stop.is_set() or self.parent_gone()


def follow_parent(watch: ChildWatch, poll: float = PARENT_POLL_S, grace: float = PARENT_GRACE_S) -> None:
    """Waits until the parent of this child is gone, gives the child ``grace`` seconds to stop by itself, then ends
    the process (``ORPHAN_EXIT_CODE``). Runs in a daemon thread of every child (``run_child``)."""
    while not watch.parent_gone():
        time.sleep(poll)
    time.sleep(grace)
    # No message: stderr may be a pipe nobody reads any more, and a write to a full one would block this exit.
    os._exit(ORPHAN_EXIT_CODE)


def run_child(name: str, work: Callable[..., None], errors: Any, watch: ChildWatch, *args: Any) -> None:
    """A child's entry point: ignores SIGTERM/SIGINT, follows its parent (``follow_parent``), runs
    ``work(watch, *args)`` and reports its exception.

    On an exception the traceback goes to ``errors`` as ``(name, text)`` and to stderr, and the process exits
    with code 1 (``SystemExit`` carries the code out of ``multiprocessing``'s bootstrap).
    """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=follow_parent, args=(watch,), name=f"{name}-follows-parent", daemon=True).start()
    try:
        work(watch, *args)
    except BaseException:  # noqa: BLE001 -- every failure must reach the parent
        if watch.parent_gone():
            os._exit(ORPHAN_EXIT_CODE)  # nobody to tell, and stderr may be a full pipe nobody reads
        text = traceback.format_exc()
        print(f"{name} failed:\n{text}", file=sys.stderr, flush=True)
        try:
            errors.put((name, text[-MAX_ERROR_CHARS:]))
        except (OSError, ValueError):
            pass  # the parent is gone; the exit code still tells
        sys.exit(1)
    if watch.parent_gone():
        # Nobody waits for this process: skip the interpreter's shutdown, which takes seconds once torch and
        # TensorFlow are loaded (``follow_parent`` cannot end a process that is already shutting down).
        os._exit(ORPHAN_EXIT_CODE)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def describe_exit(code: int | None) -> str:
    """``exit code 1`` / ``killed by SIGKILL`` / ``still running`` for a process's ``exitcode``."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


@dataclasses.dataclass
class JoinReport:
    """What ``ChildSet.join`` saw: exit codes, the children it had to kill, and the errors sent."""

    exit_codes: dict[str, int | None]
    killed: list[str]
    errors: dict[str, str]

    def failures(self) -> dict[str, dict[str, Any]]:
        """Children that did not end cleanly: nonzero exit, killed at the deadline, or an error sent."""
        bad = {name for name, code in self.exit_codes.items() if code != 0} | set(self.killed) | set(self.errors)
        return {name: {"exit_code": self.exit_codes.get(name), "error": self.errors.get(name, "")}
                for name in sorted(bad)}


class ChildSet:
    """The parent's side: starts the children, notices their failures, ends them by a deadline (module docstring)."""

    def __init__(self, context: Any):
        self.context = context
        self.stop = context.Event()
        self.errors = context.Queue()
        self.processes: dict[str, Any] = {}
        self._errors: dict[str, str] = {}

    def start(self, name: str, work: Callable[..., None], args: tuple[Any, ...]) -> Any:
        """Starts ``work(watch, *args)`` in a child process named ``name`` (through ``run_child``)."""
        watch = ChildWatch(self.stop, os.getpid())
        process = self.context.Process(target=run_child, name=name, args=(name, work, self.errors, watch, *args))
        process.start()
        self.processes[name] = process
        return process

    def pids(self) -> dict[str, int]:
        """The process id of every child, by name."""
        return {name: process.pid for name, process in self.processes.items()}

    def _collect_errors(self) -> None:
        while True:
            try:
                name, text = self.errors.get_nowait()
            except (queue.Empty, OSError, ValueError, EOFError):
                return
            self._errors[name] = text

    def error_of(self, name: str) -> str:
        """The traceback child ``name`` sent (empty if it sent none, e.g. when it was killed)."""
        self._collect_errors()
        return self._errors.get(name, "")

    def failure(self) -> PipelineError | None:
        """A ``PipelineError`` for the first child that has ended, or None while all run."""
        for name, process in self.processes.items():
            if process.exitcode is not None:
                deadline = time.monotonic() + 1.0  # an error put just before exiting may still be in the pipe
                while not self.error_of(name) and process.exitcode != 0 and time.monotonic() < deadline:
                    time.sleep(0.05)
                return self._error(name, process.exitcode, "ended while the pipeline was running")
        return None

    def _error(self, name: str, code: int | None, what: str) -> PipelineError:
        error = self.error_of(name)
        reason = f": {_last_line(error)}" if error else ""
        return PipelineError(f"preference pipeline: the {name} process {what} ({describe_exit(code)}){reason}",
                             {name: {"exit_code": code, "error": error}})

    def check(self) -> None:
        """Raises ``PipelineError`` if a child has ended (the pipeline cannot go on without it)."""
        failure = self.failure()
        if failure is not None:
            raise failure

    def join(self, deadline: float, poll: float = 0.05) -> JoinReport:
        """Waits for every child until ``deadline`` (``time.monotonic()``), then kills the rest.

        A child that ends with a nonzero code sets the stop event, so its sibling does not wait for it.
        """
        while time.monotonic() < deadline and any(p.is_alive() for p in self.processes.values()):
            if any(p.exitcode not in (None, 0) for p in self.processes.values()):
                self.stop.set()
            time.sleep(poll)
        killed = []
        for name, process in self.processes.items():
            if process.is_alive():
                killed.append(name)
                process.kill()
        for process in self.processes.values():
            process.join(5)
        self._collect_errors()
        codes = {name: process.exitcode for name, process in self.processes.items()}
        return JoinReport(codes, killed, dict(self._errors))

    def raise_for(self, report: JoinReport) -> None:
        """Raises ``PipelineError`` naming every child of ``report`` that did not end cleanly."""
        failures = report.failures()
        if not failures:
            return
        parts = []
        for name, info in failures.items():
            what = "was killed: it did not end within the shutdown timeout" if name in report.killed else "failed"
            line = _last_line(info["error"])
            parts.append(f"the {name} process {what} ({describe_exit(info['exit_code'])})" + (f": {line}" if line else ""))
        raise PipelineError("preference pipeline: " + "; ".join(parts), failures)


__all__ = ["ChildSet", "ChildWatch", "JoinReport", "MAX_ERROR_CHARS", "ORPHAN_EXIT_CODE", "PARENT_GRACE_S",
           "PARENT_POLL_S", "PipelineError", "describe_exit", "follow_parent", "run_child"]
