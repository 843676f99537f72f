"""Native (C++) INFO logging off, warnings and errors kept: TensorFlow's and glog's log levels for the processes
of a command.

TensorFlow prints INFO lines from C++ when it loads (a CPU-feature notice) and while reading data (a buffer-size
notice), and EnvLogger's Riegeli writer logs through glog an INFO line each time it flushes a shard with no steps
left ("Empty steps, nothing to do"). Neither library lets Python change its level once loaded; both read it from
the environment when they load, so ``quiet_native_logs`` sets those variables (where they are not set already)
before they are imported: the process that calls it, and the processes it starts, then show warnings and errors
only.

Example::

    from trainers.core.native_logs import quiet_native_logs

    quiet_native_logs()   # before TensorFlow or EnvLogger are imported
"""

from __future__ import annotations

import os
from typing import MutableMapping

#: the variables and their level: 1 drops INFO and keeps warnings and errors (``TF_CPP_MIN_LOG_LEVEL`` for
#: TensorFlow's C++ logging, ``GLOG_minloglevel`` for glog in EnvLogger's extensions).
NATIVE_LOG_LEVELS = {"TF_CPP_MIN_LOG_LEVEL": "1", "GLOG_minloglevel": "1"}


def quiet_native_logs(environ: MutableMapping[str, str] | None = None) -> None:
    """Sets each of ``NATIVE_LOG_LEVELS`` in ``environ`` (``os.environ`` by default) that it does not set already;
    effective for the libraries loaded afterwards, in this process and in the processes it starts."""
    environ = os.environ if environ is None else environ
    for name, level in NATIVE_LOG_LEVELS.items():
        environ.setdefault(name, level)


__all__ = ["NATIVE_LOG_LEVELS", "quiet_native_logs"]
