"""One long-lived build process per program: ``tfds_build``'s builds without paying TensorFlow's import each time.

A ``tfds build`` child spends most of a small build importing TensorFlow, Keras, Beam and TFDS (profiled on the
2-core machine: 47 of 58 s for a 4-game ``manual_dir`` build, the build itself 10 s). A program that builds many
small datasets (MALT's and online %BC's rounds, the results pages, the tests) paid that import for every one.
``run_build`` sends each build to one child (``python -m trainers.core.build_child --serve``) that imported those
libraries once and runs the same ``build_child.build`` for every request, in the order asked.

The child is as separate as a one-shot build child was:

- it sees the environment and working folder of the call: a request carries the whole environment (the child
  takes it before it builds), and a call from another working folder, or whose environment changed or lost a
  variable the child started with (but for those a build reads per build, ``PER_BUILD_VARIABLES``), starts a fresh
  child, since libraries read their variables at import. Variables added since the child started reach the build
  without a fresh child: the libraries a program imports add their own (TensorFlow's ``TF2_BEHAVIOR``, PyTorch's
  ``TORCHINDUCTOR_CACHE_DIR``, ...), and a fresh child for each would import everything again; a variable that a
  library reads at import must therefore be set before the program's first build;
- its progress bars and warnings reach the user's terminal (its standard streams are the caller's), and a quiet
  build sends its standard output to ``/dev/null`` for that build only;
- a failed build prints its traceback there and raises ``subprocess.CalledProcessError`` here, as a failed
  ``tfds build`` did; the child stays for the next build;
- it dies with the program (``loggers.workers.die_with_parent``; its input closing ends it too), and a build
  interrupted here (Ctrl-C, an exception) ends the child, so no build goes on that nobody waits for;
- a child that died (killed, out of memory) fails the build it was running with its exit status, and the next
  build starts a fresh one.

Example::

    from trainers.core.build_worker import run_build

    run_build(["wordle_synthetic", "--imports", "rlds_lang_datasets", "--config", "expert", "--data_dir", "/tmp/d"],
              env=dict(os.environ, RLDS_LANG_SMALL="4"), quiet=True)
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
from typing import Mapping, Sequence

#: the environment variables a build reads when it runs, not at import, and pytest's name of the running test
#: (set anew for every test): a change in them reuses the child, which takes them with each request.
PER_BUILD_VARIABLES = ("RLDS_LANG_SMALL", "RLDS_LANG_SHARD_CACHE", "PYTEST_CURRENT_TEST")
#: the command of a one-shot build child; a failed build's error names it with the build's arguments.
CHILD_COMMAND = (sys.executable, "-m", "trainers.core.build_child")
#: the child's command: ``trainers.core.build_child`` serving build requests on its standard input.
SERVE_COMMAND = (*CHILD_COMMAND, "--serve")
#: seconds a closing child gets to end by itself before it is killed.
CLOSE_SECONDS = 10.0


class BuildWorker:
    """A child process that runs ``build_child.build`` for each request it reads (JSON lines on its standard
    input) and answers each on a pipe of its own (``{"ok": true}`` or ``{"ok": false, "error": ...}``)."""

    def __init__(self, env: Mapping[str, str], cwd: str) -> None:
        read_end, write_end = os.pipe()
        try:
            self.process = subprocess.Popen(
                [*SERVE_COMMAND, "--reply-fd", str(write_end), "--parent", str(os.getpid())],
                stdin=subprocess.PIPE, pass_fds=(write_end,), env=dict(env), cwd=cwd, text=True)
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        self.replies = os.fdopen(read_end, "r")
        self.cwd, self.started_with = cwd, {k: v for k, v in env.items() if k not in PER_BUILD_VARIABLES}

    def serves(self, env: Mapping[str, str], cwd: str) -> bool:
        """Whether this child may build for a call from ``cwd`` with ``env``: running, in the same folder, and every
        variable it started with (per-build ones aside) unchanged in ``env``."""
        return self.alive() and cwd == self.cwd and all(env.get(k) == v for k, v in self.started_with.items())

    def alive(self) -> bool:
        """Whether the child is still running."""
        return self.process.poll() is None

    def build(self, argv: Sequence[str], env: Mapping[str, str], quiet: bool) -> None:
        """Runs one build (``build_child``'s arguments ``argv``) with ``env`` as its environment; raises
        ``subprocess.CalledProcessError`` when the build fails or the child dies during it. Interrupted here,
        the child is ended (its build is not left running)."""
        command = [*CHILD_COMMAND, *argv]  # the same build, run alone
        line = ""  # stays empty when the child dies or the wait is interrupted
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps({"argv": list(argv), "env": dict(env), "quiet": quiet}) + "\n")
            self.process.stdin.flush()
            line = self.replies.readline()
        except BrokenPipeError:
            pass
        finally:
            if not line:
                self.close(kill=True)
        if not line:
            raise subprocess.CalledProcessError(self.process.returncode or 1, command)
        reply = json.loads(line)
        if not reply["ok"]:
            raise subprocess.CalledProcessError(1, command, stderr=reply.get("error"))

    def close(self, kill: bool = False) -> None:
        """Ends the child: its input closed, then killed if it has not ended within ``CLOSE_SECONDS`` (at once with
        ``kill``: a child whose build nobody waits for any more)."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            try:
                self.process.stdin.close()
            except BrokenPipeError:
                pass
        try:
            self.process.wait(timeout=0 if kill else CLOSE_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.replies.close()


_lock = threading.Lock()
_worker: BuildWorker | None = None


def run_build(argv: Sequence[str], env: Mapping[str, str], quiet: bool = False) -> None:
    """Runs ``python -m trainers.core.build_child ARGV``'s build with environment ``env`` in this program's build
    child (started, or replaced, as the module docstring says); raises ``subprocess.CalledProcessError`` when
    it fails. Calls from several threads build one after another."""
    global _worker
    cwd = os.getcwd()
    with _lock:
        if _worker is not None and not _worker.serves(env, cwd):
            _worker.close()
            _worker = None
        if _worker is None:
            _worker = BuildWorker(env, cwd)
        worker = _worker
        try:
            worker.build(argv, env, quiet)
        finally:
            if not worker.alive():
                _worker = None


def current_build_worker() -> BuildWorker | None:
    """This program's build child, if one has been started and not ended."""
    return _worker


def close_build_worker() -> None:
    """Ends this program's build child, if one runs (also done at exit)."""
    global _worker
    with _lock:
        if _worker is not None:
            _worker.close()
            _worker = None


atexit.register(close_build_worker)


__all__ = ["BuildWorker", "CHILD_COMMAND", "CLOSE_SECONDS", "PER_BUILD_VARIABLES", "SERVE_COMMAND",
           "close_build_worker", "current_build_worker", "run_build"]
