"""Worker processes of ``loggers.record``: started with ``spawn``, checked for the missing main guard, and never
waited on for ever when one dies.

A spawned worker imports the script that started it as ``__mp_main__``. A script that calls
``record(..., workers=2)`` at its top level, outside ``if __name__ == "__main__":``, therefore calls it again
in every worker, where starting processes during start-up fails; ``multiprocessing.Pool`` then replaces the
dead worker, which dies the same way, for ever. ``check_main_guard`` finds that mistake before any process is
started, from the script's source; ``run_spawned`` uses ``concurrent.futures.ProcessPoolExecutor``, which
notices a dead worker (killed, out of memory, or failing at start-up) and lets ``record`` raise instead of
hanging.

Workers die with the process that started them (``die_with_parent``): on Linux the kernel sends them SIGKILL
when it ends (``prctl(PR_SET_PDEATHSIG)``), and everywhere a watchdog thread ends a worker whose parent is gone
within ``WATCHDOG_SECONDS``. A killed ``record`` therefore leaves no worker writing episodes nobody waits for;
their log directories are left as any killed recorder's (every committed episode readable).
"""

from __future__ import annotations

import ast
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Iterator, Sequence, TypeVar

Result = TypeVar("Result")

#: how often a worker's watchdog checks that its parent is alive (the bound where the kernel cannot help).
WATCHDOG_SECONDS = 0.5
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Makes this process end when its parent ``parent`` does (the initializer of ``run_spawned``'s workers):
    SIGKILL from the kernel on Linux, and a daemon thread that ends the process within ``WATCHDOG_SECONDS`` of
    the parent's death anywhere (also when the parent died before this call)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the watchdog below still ends this process
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCHDOG_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


class MissingMainGuardError(RuntimeError):
    """``record`` with worker processes was called by a script's top-level code outside its main guard."""


def _is_main_test(test: ast.expr) -> bool:
    """Whether ``test`` is ``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and \
        any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)


def _guarded_lines(source: str) -> list[tuple[int, int]]:
    """The line ranges of the bodies of ``if __name__ == "__main__":`` blocks in ``source`` (also when the test
    combines that comparison with others, e.g. ``and``)."""
    return [(node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno)
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.If) and any(_is_main_test(part) for part in ast.walk(node.test))]


def check_main_guard(what: str) -> None:
    """Raises ``MissingMainGuardError`` when the running script's top-level code, outside its
    ``if __name__ == "__main__":`` block, is what called (directly or not) the function starting workers.

    Does nothing without a script file (``python -c``, a notebook, an interactive session) or its source.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__main__"):
        frame = frame.f_back
    if frame is None or not path or os.path.abspath(frame.f_code.co_filename) != os.path.abspath(path):
        return
    try:
        with open(path, encoding="utf-8") as f:
            ranges = _guarded_lines(f.read())
    except (OSError, SyntaxError, UnicodeDecodeError):
        return
    line = frame.f_lineno
    if not any(first <= line <= last for first, last in ranges):
        raise MissingMainGuardError(
            f"{path}, line {line}: {what} starts worker processes with 'spawn', which import this script again "
            "in every worker, where this line would run again and fail; the workers would be restarted for ever. "
            "Put the script's top-level code under `if __name__ == \"__main__\":` (or use workers=1).")


def run_spawned(fn: Callable[[bytes], Result], payloads: Sequence[bytes], workers: int) -> Iterator[Result]:
    """Yields ``fn(payload)`` for every payload as the ``workers`` spawned processes finish them (any order);
    raises ``RuntimeError`` if a worker process dies instead of hanging. The workers die with this process
    (``die_with_parent``)."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=die_with_parent,
                             initargs=(os.getpid(),)) as pool:
        futures = [pool.submit(fn, payload) for payload in payloads]
        try:
            for future in as_completed(futures):
                yield future.result()
        except BrokenProcessPool as error:
            raise RuntimeError(
                f"a worker process died before finishing its work ({error}); the log directories it completed are "
                "kept. If it died at start-up, check that the script calling record has its top-level code under "
                "`if __name__ == \"__main__\":`") from error


__all__ = ["MissingMainGuardError", "WATCHDOG_SECONDS", "check_main_guard", "die_with_parent", "run_spawned"]
