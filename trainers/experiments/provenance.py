"""Where a results page came from: the commit it was generated at and the folders its command names.

A page names the command that regenerates it; ``relative_path`` spells a folder of that command relative to the
current directory (the repository's root, where the commands run) so that the page names no machine's folders,
and ``git_commit`` the commit of the code that wrote it."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any


def git_commit() -> str:
    """The repository's commit (short hash, ``+dirty`` with uncommitted changes to tracked files), or ``unknown``
    outside a git checkout."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True,
                                timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def relative_path(path: Any) -> str | None:
    """``path`` relative to the current directory when it lies inside it, else as given (None stays None)."""
    if path is None:
        return None
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


__all__ = ["git_commit", "relative_path"]
