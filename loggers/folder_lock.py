"""An exclusive lock on a folder for the life of one writer, so that two recorders never write into one folder.

Two recorders started together in one folder would both find it empty, then interleave their files (two
EnvLogger shards, one journal truncated by the other). ``FolderLock`` takes ``flock`` on the folder itself (an
open descriptor of the directory, so no file is added to it); the kernel releases it when the holder closes it
or dies, SIGKILL included, so a crashed recorder never leaves a stale lock. A second writer gets
``FolderLockedError`` naming the folder and, on Linux, the holder's process id (from ``/proc/locks``).

A file system that cannot lock directories (some network file systems) gets a warning and no lock.
"""

from __future__ import annotations

import fcntl
import logging
import os


class FolderLockedError(RuntimeError):
    """Another writer holds the folder's lock: the message names the folder and, where known, the holder's pid."""


def _holder(fd: int) -> int | None:
    """The process id holding an ``flock`` on the file open as ``fd`` (Linux's ``/proc/locks``), None if unknown."""
    stat = os.fstat(fd)
    device = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            for line in f:
                fields = line.split()
                if "->" in fields:  # a process waiting for the lock, not holding it
                    continue
                if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == device:
                    return int(fields[4])
    except (OSError, ValueError):
        pass
    return None


class FolderLock:
    """Holds an exclusive lock on the existing folder ``path`` until ``release`` (or the process ends).

    Args:
      path: the folder.
      what: who wants it, for the error message (e.g. ``"record"``).

    Raises:
      FolderLockedError: another process (or another writer in this one) holds it.
    """

    def __init__(self, path: str | os.PathLike, what: str = "a recorder"):
        self.path = os.fspath(path)
        self._fd: int | None = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _holder(self._fd)
            self.release()
            holder = f"pid {pid}" if pid is not None else "a process whose id /proc/locks does not show"
            raise FolderLockedError(f"{self.path}: another writer ({holder}) is writing into this folder; {what} "
                                    "refuses to write beside it (record into another folder, or wait for it to "
                                    "end)") from None
        except OSError as error:
            logging.warning("%s: cannot lock this folder (%s): nothing stops a second writer from writing beside "
                            "this one", self.path, error)

    def release(self) -> None:
        """Releases the lock (the second time does nothing)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "FolderLock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


__all__ = ["FolderLock", "FolderLockedError"]
