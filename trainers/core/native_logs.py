"""Native (C++) INFO logging off, warnings and errors kept: TensorFlow's and glog's log levels for the processes
of a command, and TensorFlow's INFO lines at import dropped.

TensorFlow prints INFO lines from C++ when it loads (a CPU-feature notice) and while reading data (a buffer-size
notice), and EnvLogger's Riegeli writer logs through glog an INFO line each time it flushes a shard with no steps
left ("Empty steps, nothing to do"). Neither library lets Python change its level once loaded; both read it from
the environment when they load, so ``quiet_native_logs`` sets those variables (where they are not set already)
before they are imported: the process that calls it, and the processes it starts, then show warnings and errors
only.

TensorFlow 2.21 (the pinned version; TensorFlow's issues report it from 2.17) prints some lines at import through
absl's C++ logging, which ignores ``TF_CPP_MIN_LOG_LEVEL`` before ``absl::InitializeLog`` runs: on CPUs where
oneDNN's custom operations are on, ``import tensorflow`` writes "oneDNN custom operations are on ..." as an
``I0000 ...`` line, after absl's notice "WARNING: All log messages before absl::InitializeLog() is called are written
to STDERR". So ``quiet_native_logs``
also puts ``QuietImportFinder`` first on ``sys.meta_path``: the import of ``tensorflow`` runs with file descriptor 2
captured (``native_info_dropped``), and what it wrote is written back without absl's INFO lines (and without that
notice when no line of absl's is left after it). Warnings, errors and every other line come back unchanged, in order.

Example::

    from trainers.core.native_logs import quiet_native_logs

    quiet_native_logs()   # before TensorFlow or EnvLogger are imported
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import os
import re
import sys
import tempfile
import threading
from types import ModuleType
from typing import Any, Iterator, MutableMapping, Sequence

from trainers.core.descriptors import descriptor_redirected

#: the variables and their level: 1 drops INFO and keeps warnings and errors (``TF_CPP_MIN_LOG_LEVEL`` for
#: TensorFlow's C++ logging, ``GLOG_minloglevel`` for glog in EnvLogger's extensions).
NATIVE_LOG_LEVELS = {"TF_CPP_MIN_LOG_LEVEL": "1", "GLOG_minloglevel": "1"}

#: a line of absl's C++ logging: severity letter, MMDD, hh:mm:ss (before initialisation 00:00:<epoch
#: seconds>), thread id, file:line]
#: (``I0000 00:00:1795945082.550679   23211 port.cc:153] oneDNN custom operations are on. ...``).
ABSL_LINE = re.compile(rb"^([IWEF])\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [^ \]]+:\d+\] ")

#: absl's notice, written before its first line when logging was not initialised.
ABSL_PREAMBLE = b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"

#: the modules whose import ``QuietImportFinder`` filters by default.
NOISY_IMPORTS = ("tensorflow",)


def quiet_native_logs(environ: MutableMapping[str, str] | None = None) -> None:
    """Sets each of ``NATIVE_LOG_LEVELS`` in ``environ`` (``os.environ`` by default) that it does not set already;
    effective for the libraries loaded afterwards, in this process and in the processes it starts. For this
    process (``environ`` left None) it also filters the import of ``NOISY_IMPORTS`` (``QuietImportFinder``)."""
    for name, level in NATIVE_LOG_LEVELS.items():
        (os.environ if environ is None else environ).setdefault(name, level)
    if environ is None:
        QuietImportFinder.install()


def without_native_info(captured: bytes) -> bytes:
    """``captured`` (what a block wrote to standard error) without absl's INFO lines, and without absl's
    preamble when no line of absl's is left; every other line unchanged, in order."""
    lines = [line for line in captured.splitlines(keepends=True) if not _is_absl_info(line)]
    if not any(ABSL_LINE.match(line) for line in lines):
        lines = [line for line in lines if line.rstrip(b"\r\n") != ABSL_PREAMBLE]
    return b"".join(lines)


def _is_absl_info(line: bytes) -> bool:
    match = ABSL_LINE.match(line)
    return match is not None and match.group(1) == b"I"


@contextlib.contextmanager
def native_info_dropped(fd: int = 2) -> Iterator[None]:
    """Runs the block with descriptor ``fd`` (standard error) captured in a temporary file, then writes what the
    block wrote there back to ``fd`` through ``without_native_info``, also when the block raises."""
    with tempfile.TemporaryFile() as captured:
        try:
            with descriptor_redirected(fd, captured.fileno(), sys.stderr):
                yield
        finally:
            captured.seek(0)
            kept = without_native_info(captured.read())
            while kept:
                kept = kept[os.write(fd, kept):]


class QuietLoader(importlib.abc.Loader):
    """Wraps a module's loader: ``exec_module`` runs inside ``native_info_dropped``; the rest is the wrapped
    loader's."""

    def __init__(self, loader: Any):
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        """The wrapped loader's module (None: Python's default)."""
        create = getattr(self.loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: ModuleType) -> None:
        """Runs the wrapped loader's ``exec_module`` with absl's INFO lines on standard error dropped."""
        with native_info_dropped():
            self.loader.exec_module(module)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.loader, attribute)


class QuietImportFinder(importlib.abc.MetaPathFinder):
    """A ``sys.meta_path`` finder for ``names`` only: finds them with the other finders and wraps their loader in
    ``QuietLoader``, so that importing them writes no INFO line of absl's to standard error."""

    def __init__(self, names: Sequence[str] = NOISY_IMPORTS):
        self.names = tuple(names)
        self._finding = threading.local()

    @classmethod
    def install(cls, names: Sequence[str] = NOISY_IMPORTS) -> "QuietImportFinder":
        """Puts a finder for ``names`` first on ``sys.meta_path`` unless one for them is there already; returns it."""
        for finder in sys.meta_path:
            if isinstance(finder, cls) and finder.names == tuple(names):
                return finder
        finder = cls(names)
        sys.meta_path.insert(0, finder)
        return finder

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        """The spec the later finders give ``name``, its loader wrapped; None for other names."""
        if name not in self.names or getattr(self._finding, "active", False):
            return None
        self._finding.active = True
        try:
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                spec = find(name, path, target) if finder is not self and find is not None else None
                if spec is not None:
                    break
        finally:
            self._finding.active = False
        if spec is None or spec.loader is None or isinstance(spec.loader, QuietLoader):
            return spec
        spec.loader = QuietLoader(spec.loader)
        return spec


__all__ = ["ABSL_LINE", "ABSL_PREAMBLE", "NATIVE_LOG_LEVELS", "NOISY_IMPORTS", "QuietImportFinder", "QuietLoader",
           "native_info_dropped", "quiet_native_logs", "without_native_info"]
