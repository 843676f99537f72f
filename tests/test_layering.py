"""The layers import one way: ``rlds_lang`` (core) <- ``loggers``, ``transforms`` <- ``builders``, ``trainers``,
``creator_web``. Checked on every import statement of every module (function-level imports included), so a
lazy import cannot slip an upward arrow in."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: package -> the project packages it may import (besides itself).
ALLOWED: dict[str, set[str]] = {
    "rlds_lang": set(),
    "loggers": {"rlds_lang"},
    "transforms": {"rlds_lang"},
    "builders": {"rlds_lang", "loggers", "transforms"},
    "trainers": {"rlds_lang", "loggers", "transforms"},
    "creator_web": {"rlds_lang", "loggers", "transforms"},
}
#: the one sanctioned sideways import: the ``rlds-lang`` command line serves the browser tool (``rlds-lang web``).
EXCEPTIONS = {("trainers/cli.py", "creator_web")}


def project_imports(path: Path) -> set[str]:
    """Top-level project packages ``path`` imports anywhere in its code (absolute imports)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names & set(ALLOWED)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_the_layers_below(package):
    wrong = []
    for path in sorted((REPO / package).rglob("*.py")):
        relative = path.relative_to(REPO).as_posix()
        for name in project_imports(path) - ALLOWED[package] - {package}:
            if (relative, name) not in EXCEPTIONS:
                wrong.append(f"{relative} imports {name}")
    assert not wrong, "imports against the layering:\n" + "\n".join(wrong)


def test_the_check_sees_function_level_imports(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from trainers.loop import train\n    import loggers.record\n")
    assert project_imports(module) == {"trainers", "loggers"}
