"""The layers import one way: ``rlds_lang`` (core) <- ``loggers``, ``transforms`` <- ``builders``, ``trainers``,
``creator_web``; inside ``trainers``, ``core`` <- ``tasks`` <- ``evaluation`` <- ``algorithms`` <- ``experiments``
<- ``cli``. No module imports another's underscore names, and the project's import graph has no circle. Checked on
every import statement of every module (function-level imports included), so a lazy import cannot slip an upward
arrow or a circle in. No module is over ``MAX_LINES`` lines unless its docstring says why in a line starting
with "Size:"."""

from __future__ import annotations

import ast
import re
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
#: the sanctioned sideways imports: the ``rlds-lang`` command line serves the browser tool (``rlds-lang web``), and
#: its catalog (``rlds-lang datasets``) reads the datasets' builders, as ``tfds build --imports`` does.
EXCEPTIONS = {("trainers/cli/main.py", "creator_web"), ("trainers/cli/datasets.py", "builders")}
#: the installed names of project packages: the wheel installs ``builders/`` as ``rlds_lang_datasets``.
INSTALLED_NAMES = {"rlds_lang_datasets": "builders"}


def project_imports(path: Path) -> set[str]:
    """Top-level project packages ``path`` imports anywhere in its code (``imported_names``, function level too),
    by their folder's name (an import of ``rlds_lang_datasets`` is one of ``builders``)."""
    tops = {module.split(".")[0] for module, _ in imported_names(path, path.stem)}
    return {INSTALLED_NAMES.get(top, top) for top in tops} & set(ALLOWED)


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


def test_the_check_sees_the_datasets_package_by_its_installed_name(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    import rlds_lang_datasets\n")
    assert project_imports(module) == {"builders"}


#: trainers' sub-package -> the sub-packages it may import (besides itself): the arrows run one way.
TRAINERS_ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "tasks": {"core"},
    "evaluation": {"core", "tasks"},
    "algorithms": {"core", "tasks", "evaluation"},
    "experiments": {"core", "tasks", "evaluation", "algorithms"},
    "cli": {"core", "tasks", "evaluation", "algorithms", "experiments"},
}


def project_modules() -> dict[str, Path]:
    """Every module of the project's packages, by dotted name."""
    modules = {}
    for package in ALLOWED:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def imported_names(path: Path, name: str) -> list[tuple[str, str | None]]:
    """``(module, imported name or None)`` for every import statement of ``path`` (module ``name``), relative
    imports resolved, function-level ones included."""
    out: list[tuple[str, str | None]] = []
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out.extend((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            out.extend((base, alias.name) for alias in node.names)
    return out


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (``from package import module`` counts as the module)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for module, imported in imported_names(path, name):
            if imported and f"{module}.{imported}" in modules:
                targets.add(f"{module}.{imported}")
            elif module in modules:
                targets.add(module)
        graph[name] = targets - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of two or more modules (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_no_import_circle_anywhere():
    found = circles(import_graph(project_modules()))
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(group) for group in found)


def test_the_circle_check_finds_a_lazy_circle(tmp_path):
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from c import g\n")
    (tmp_path / "c.py").write_text("def g():\n    import a\n")
    (tmp_path / "d.py").write_text("import a\n")
    modules = {name: tmp_path / f"{name}.py" for name in "abcd"}
    assert circles(import_graph(modules)) == [["a", "b", "c"]]


def test_trainers_sub_packages_import_one_way():
    wrong = []
    for name, path in project_modules().items():
        parts = name.split(".")
        if parts[0] != "trainers" or len(parts) < 3:
            continue
        for module, _ in imported_names(path, name):
            target = module.split(".")
            if target[0] == "trainers" and len(target) > 1 and target[1] != parts[1] \
                    and target[1] not in TRAINERS_ALLOWED[parts[1]]:
                wrong.append(f"{name} imports {module}")
    assert not wrong, "imports against trainers' layering:\n" + "\n".join(wrong)


def test_no_module_imports_another_modules_underscore_names():
    wrong = []
    for name, path in project_modules().items():
        for module, imported in imported_names(path, name):
            if imported and imported.startswith("_") and not imported.startswith("__") and module != name \
                    and module.split(".")[0] in ALLOWED:
                wrong.append(f"{name} imports {module}.{imported}")
    assert not wrong, "private names imported across modules:\n" + "\n".join(wrong)


#: the longest a module may be without a reason in its docstring (a line starting with "Size:").
MAX_LINES = 400
#: modules over the limit whose reason is to be written by the part of the project that owns them. An entry fails
#: the test once its module is back under the limit or states its reason, so the list cannot go stale.
PENDING_SIZE_REASONS: dict[str, str] = {}


def size_reason(path: Path) -> str | None:
    """The docstring line of ``path`` that starts with "Size:" and gives a reason after it, or None."""
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))) or ""
    return next((line for line in docstring.splitlines() if line.startswith("Size:") and line[5:].strip()), None)


def oversized_modules(modules: dict[str, Path]) -> list[str]:
    """The modules over ``MAX_LINES`` lines whose docstring states no size reason."""
    return sorted(name for name, path in modules.items()
                  if len(path.read_text(encoding="utf-8").splitlines()) > MAX_LINES and size_reason(path) is None)


def test_no_module_over_the_line_limit_without_a_stated_reason():
    found = oversized_modules(project_modules())
    unexplained = [name for name in found if name not in PENDING_SIZE_REASONS]
    assert not unexplained, (f"modules over {MAX_LINES} lines: split them, or give the reason in a docstring line "
                             "starting with 'Size:':\n" + "\n".join(unexplained))
    stale = sorted(set(PENDING_SIZE_REASONS) - set(found))
    assert not stale, f"no longer over the limit without a reason, remove from PENDING_SIZE_REASONS: {stale}"


def test_the_size_check_reads_the_reason_from_the_docstring(tmp_path):
    body = "x = 1\n" * MAX_LINES
    (tmp_path / "plain.py").write_text('"""Plain."""\n' + body)
    (tmp_path / "reasoned.py").write_text('"""Reasoned.\n\nSize: one table of 400 rows read as one.\n"""\n' + body)
    (tmp_path / "empty_reason.py").write_text('"""Empty.\n\nSize:\n"""\n' + body)
    (tmp_path / "in_a_comment.py").write_text('"""Commented."""\n# Size: a comment is not the docstring\n' + body)
    (tmp_path / "short.py").write_text('"""Short."""\n' + "x = 1\n" * (MAX_LINES - 1))
    modules = {path.stem: path for path in tmp_path.glob("*.py")}
    assert oversized_modules(modules) == ["empty_reason", "in_a_comment", "plain"]


def test_no_code_refers_to_issue_numbers():
    """Code and its comments say what things are, not which tracker issue produced them."""
    pattern = re.compile(r"\bissues?\s*#?\d+", re.IGNORECASE)
    found = []
    for path in sorted(REPO.rglob("*.py")):
        relative = path.relative_to(REPO).as_posix()
        if relative.startswith((".venv", ".cache", "site/")) or "/." in relative:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line) and "pattern = re.compile" not in line:
                found.append(f"{relative}:{number}: {line.strip()[:100]}")
    assert not found, "lines that name tracker issues:\n" + "\n".join(found)
