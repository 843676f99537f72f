"""The commands that need an extra (``train``: PyTorch; ``web``: the servers), and what a light install
(``pip install rlds-lang``: record, read, build, load, statistics) shows instead of them: each such command parses
any arguments and exits naming the extra to install.
"""

from __future__ import annotations

import argparse
import functools
from typing import Any, Callable

#: the modules of the ``train`` and ``web`` extras whose absence leaves out the commands that need them.
TRAIN_MODULES = ("torch", "transformers")
WEB_MODULES = ("fastapi", "uvicorn")
#: the commands that need the ``train`` extra (PyTorch), with their help when it is not installed.
NEEDS_TRAIN = {"demo": "the record-build-train-evaluate demo", "train": "train an algorithm",
               "eval": "play trained agents", "results": "regenerate a results page", "malt": "MALT rounds",
               "preferences": "preference workflows", "visdial": "Visual Dialogue tools", "reddit": "Reddit tools",
               "top-advantage": "a dataset's top-advantage actions"}


def missing_modules(names: tuple[str, ...]) -> list[str]:
    """The modules of ``names`` that are not installed (found without importing them)."""
    import importlib.util

    missing = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def missing_extra_help(what: str, extra: str, missing: list[str]) -> str:
    """The help line of a command that does ``what`` and whose ``extra`` is not installed (``missing``)."""
    return f"{what} (needs pip install 'rlds-lang[{extra}]': {', '.join(missing)} not installed)"


def missing_extra(name: str, what: str, extra: str, missing: list[str]) -> tuple[str, Callable[[Any], None]]:
    """``(help line, parser-adding function)`` of the command ``name`` whose extra is not installed
    (``add_missing_extra``), for ``rlds-lang``'s command table."""
    return missing_extra_help(what, extra, missing), functools.partial(add_missing_extra, name=name, what=what,
                                                                       extra=extra, missing=missing)


def add_missing_extra(sub: Any, name: str, what: str, extra: str, missing: list[str]) -> None:
    """A command whose extra is not installed: it parses any arguments and exits saying what to install."""
    help_text = missing_extra_help(what, extra, missing)
    parser = sub.add_parser(name, help=help_text, description=help_text, add_help=False)
    parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)

    def refuse(args: argparse.Namespace) -> None:
        raise SystemExit(f"rlds-lang {name} needs the {extra} extra ({', '.join(missing)} not installed): "
                         f"pip install 'rlds-lang[{extra}]' (or 'rlds-lang[all]')")

    parser.set_defaults(func=refuse)


__all__ = ["NEEDS_TRAIN", "TRAIN_MODULES", "WEB_MODULES", "add_missing_extra", "missing_extra", "missing_extra_help",
           "missing_modules"]
