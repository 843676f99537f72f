"""Where rlds-lang writes when no folder is given: an environment variable, else the user's directories.

Nothing defaults to a folder beside the code: an installed package lives in ``site-packages``, which is no place
for runs or caches. Each default is, in order, its environment variable, then the user's cache or data directory
as ``platformdirs`` names it for this system (on Linux ``$XDG_CACHE_HOME/rlds_lang``, default
``~/.cache/rlds_lang``, and ``$XDG_DATA_HOME/rlds_lang``, default ``~/.local/share/rlds_lang``).

==========================  =======================  ===========================================
folder                      environment variable     otherwise
==========================  =======================  ===========================================
``cache_dir()``             ``RLDS_LANG_CACHE``      the user cache directory
``runs_dir()``              ``RLDS_LANG_RUNS``       ``runs`` in the user data directory
``web_data_dir()``          ``RLDS_LANG_WEB_DATA``   ``web`` in the user data directory
==========================  =======================  ===========================================

A config's default output folder is ``default_run(name)``: a dataclass field whose default, ``runs_dir() / name``,
is worked out each time a config is made, so that ``RLDS_LANG_RUNS`` set after import still moves it.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import platformdirs

#: the application's folder name in the user's directories.
APP_NAME = "rlds_lang"


def _from_env(variable: str, otherwise: Path) -> Path:
    value = os.environ.get(variable)
    return Path(value).expanduser() if value else otherwise


def cache_dir() -> Path:
    """Derived artefacts that can be made again (feedback matrices, reward caches, built datasets of scripts)."""
    return _from_env("RLDS_LANG_CACHE", Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False)))


def runs_dir() -> Path:
    """Training and demo runs (checkpoints, logs, plots)."""
    return _from_env("RLDS_LANG_RUNS", Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / "runs")


def web_data_dir() -> Path:
    """The browser tool's recorded games and judgements (``rlds-lang web``)."""
    return _from_env("RLDS_LANG_WEB_DATA", Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / "web")


def default_run(name: str) -> str:
    """The field of a config's output folder, ``out: str = default_run("bc")``: its default, the folder ``name``
    in ``runs_dir()`` as a string, is resolved each time a config is made, not once when its class is defined.
    (Typed as the value it stands for, as ``dataclasses.field`` is.)"""
    return dataclasses.field(default_factory=lambda: str(runs_dir() / name))


__all__ = ["APP_NAME", "cache_dir", "runs_dir", "web_data_dir", "default_run"]
