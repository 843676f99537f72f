"""Where a results page came from: the command that regenerates it, written relative to the repository, and the
commit it was generated at.

Every writer of a page under ``docs/`` names its command through ``command_line`` and its commit through
``source_commit`` (``generated_by`` puts the two in one sentence), so a page never names a folder of the machine
that wrote it: an absolute path in the command (``--out /home/me/repo/runs/x``, ``--agent ppo=/abs/checkpoint``,
``file:/abs/tokenizer.json``) is written relative to the repository's root (``runs/x``), and so is any path a page's
JSON stores (``repository_path``).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any, Iterable

#: the folder the commands are run from, which paths in pages are written relative to: the current directory when
#: this module is first imported (the repository's root for the pages of ``docs/``, whose commands say to run them
#: there), never the package's location, which is site-packages in an installed copy.
ROOT = Path.cwd().resolve()
#: an absolute path inside a command-line token: at its start, or after ``=``, ``:`` or ``,`` (``NAME=PATH``,
#: ``file:PATH``, ``a=PATH,b=PATH``).
_ABSOLUTE = re.compile(r"(^|[=:,])(/[^=:,]*)")
#: an absolute path in a text: two or more ``/name`` segments at the start of a word, a quote, a bracket or after
#: ``=``, ``:`` or ``,`` (so ``../runs/x``, ``runs/x``, ``and/or`` and ``https://host/x`` are not).
_ABSOLUTE_IN_TEXT = re.compile(r"""(?:^|(?<=[\s"'`=(\[<,:]))(?:/[A-Za-z0-9_.@+-]+){2,}/?""", re.M)


def repository_path(path: str | os.PathLike, root: str | os.PathLike = ROOT) -> str:
    """``path`` written relative to the repository's ``root`` (POSIX separators): ``runs/x`` for a folder inside
    it, ``../elsewhere/x`` for one outside it; a relative path is returned as given."""
    text = os.fspath(path)
    if not os.path.isabs(text):
        return Path(text).as_posix()
    return Path(os.path.relpath(os.path.abspath(text), os.path.abspath(root))).as_posix()


def relative_token(token: str, root: str | os.PathLike = ROOT) -> str:
    """A command-line token with every absolute path in it written relative to ``root`` (``repository_path``)."""
    return _ABSOLUTE.sub(lambda m: m.group(1) + repository_path(m.group(2), root), token)


def absolute_paths(text: str) -> list[str]:
    """The absolute paths written in ``text`` (a page, its JSON, a command): what no page of ``docs/`` may hold."""
    return _ABSOLUTE_IN_TEXT.findall(text)


def command_line(args: argparse.Namespace | None, base: str, spelled: Iterable[tuple[str, Any]] = (),
                 root: str | os.PathLike = ROOT) -> str:
    """The ``rlds-lang`` command that reproduces a run: the command line as typed (``args.argv``, which
    ``trainers.cli.main.main`` records; ``base`` when there is none, e.g. a run started from Python), every absolute
    path in it relative to ``root``, then each ``(flag, value)`` of ``spelled`` that was not typed and is not None
    (the sizes a page spells out so that a later change of a default does not change what its command means)."""
    argv = getattr(args, "argv", None) if args is not None else None
    parts = ["rlds-lang", *argv] if argv else shlex.split(base)
    typed = {part.split("=", 1)[0] for part in parts if part.startswith("--")}
    for flag, value in spelled:
        if value is not None and flag not in typed:
            parts += [flag, str(value)]
    return shlex.join(relative_token(part, root) for part in parts)


#: the ``rlds-lang`` command this process runs (``set_running_command``; None from Python): what a checkpoint
#: records as the command that saved it.
_running: str | None = None


def set_running_command(command: str | None) -> None:
    """Records ``command`` (``command_line``'s form) as the one this process runs, for ``running_command``."""
    global _running
    _running = command or None


def running_command() -> str | None:
    """The ``rlds-lang`` command this process runs (set by the command line's entry point), or None."""
    return _running


def source_commit(root: str | os.PathLike = ROOT) -> str:
    """The commit ``root`` is checked out at (``git rev-parse HEAD``), or "unknown" outside a git checkout."""
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=30,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", commit) else "unknown"


def generated_by(command: str, root: str | os.PathLike = ROOT, commit: str | None = None) -> str:
    """The sentence that opens a page: its command (run from the repository's root), its commit (``commit``, when
    the caller has already asked ``source_commit`` for it, e.g. to write it into the page's JSON too) and the
    package's version, which is all an installed copy (no git checkout: commit unknown) can name."""
    from rlds_lang import __version__

    commit = commit or source_commit(root)
    version = f"rlds-lang {__version__}" + (", an installed copy without a git checkout" if commit == "unknown" else "")
    return f"Generated by `{command}` (run from the repository's root) at commit {commit} ({version})"


__all__ = ["ROOT", "absolute_paths", "command_line", "generated_by", "relative_token", "repository_path",
           "running_command", "set_running_command", "source_commit"]
