"""Every code location the README and the docs name exists: dotted names (``trainers.core.loop.train``,
``python -m trainers.experiments.lmrl_gym``) import and resolve, and file paths (``trainers/core/loop.py``) are files
of the repository. A module that moves or a function that is renamed then fails here instead of leaving a dead
reference behind."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("rlds_lang", "loggers", "transforms", "trainers", "creator_web", "builders")
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
DOTTED = re.compile(rf"(?<![\w./-])((?:{'|'.join(PACKAGES)})(?:\.[A-Za-z_]\w*)+)")
FILE_ENDINGS = (".md", ".py", ".png", ".json", ".txt", ".csv")
PATH = re.compile(rf"(?<![\w./-])((?:{'|'.join(PACKAGES)}|bench|tests)/[\w/.-]*\.py)\b")


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module, or a module followed by attributes that exist."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def references(pattern: re.Pattern, dotted: bool = False) -> list[tuple[str, str]]:
    """``(document, reference)`` for every match of ``pattern`` in the README and the docs."""
    found = []
    for document in DOCUMENTS:
        for match in pattern.finditer(document.read_text(encoding="utf-8")):
            reference = match.group(1).rstrip(".")
            if not (dotted and reference.endswith(FILE_ENDINGS)):  # a file name such as tour.md is no dotted name
                found.append((document.relative_to(REPO).as_posix(), reference))
    return sorted(set(found))


@pytest.mark.parametrize("document,dotted", references(DOTTED, dotted=True))
def test_dotted_name_resolves(document, dotted):
    assert resolves(dotted), f"{document} names {dotted}, which does not import or has no such attribute"


@pytest.mark.parametrize("document,path", references(PATH))
def test_file_path_exists(document, path):
    assert (REPO / path).is_file(), f"{document} names {path}, which is not a file of the repository"


def test_the_check_catches_a_dead_reference():
    assert resolves("trainers.core.loop.train") and resolves("trainers.core.loop")
    assert not resolves("trainers.core.loop.no_such_function") and not resolves("trainers.no_such_module")
