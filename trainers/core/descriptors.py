"""A process's file descriptor pointed elsewhere for a block: what native code (TensorFlow, EnvLogger, Beam) writes
to standard output or standard error goes through the descriptor, not through ``sys.stdout``/``sys.stderr``.

Example::

    import os, sys, tempfile
    from trainers.core.descriptors import descriptor_redirected

    with tempfile.TemporaryFile() as captured:
        with descriptor_redirected(2, captured.fileno(), sys.stderr):
            os.write(2, b"into the file\\n")
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator, TextIO


@contextlib.contextmanager
def descriptor_redirected(fd: int, target: int, stream: TextIO | None) -> Iterator[None]:
    """Inside: descriptor ``fd`` writes where descriptor ``target`` does; afterwards, also when the block raises, it
    writes where it did before. ``stream``, Python's file on ``fd`` (``sys.stdout`` for 1, ``sys.stderr`` for 2; None
    where the interpreter has none), is flushed on the way in and out, so its buffered text lands on the right side."""
    if stream is not None:
        stream.flush()
    saved = os.dup(fd)
    try:
        os.dup2(target, fd)
        yield
    finally:
        if stream is not None:
            stream.flush()
        os.dup2(saved, fd)
        os.close(saved)


__all__ = ["descriptor_redirected"]
