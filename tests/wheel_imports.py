"""Whether every import of the wheel's modules names something the wheel's install provides.

A module may import the standard library, the wheel's own packages (each dotted name a module or package the
wheel holds, a relative import resolved inside it) and the top-level modules of the distributions
``install_requires`` installs, with their own requirements; a test module (``*_test.py``) may also import those of
the ``dev`` extra (pytest). ``modules_of_setup`` lists the modules as ``setup.py`` installs them, without building;
``modules_of_wheel`` reads a built wheel, and ``python -m tests.wheel_imports WHEEL`` checks one (``.ci/wheel``).
"""

from __future__ import annotations

import ast
import configparser
import importlib.metadata
import importlib.util
import re
import sys
import zipfile
from pathlib import Path
from typing import Iterable, NamedTuple

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]


class Module(NamedTuple):
    """One module of the wheel: its source, and whether it is a package's ``__init__``."""

    source: str
    is_package: bool


def modules_of_setup(repo: Path = REPO) -> dict[str, Module]:
    """Installed module name -> module, for every ``.py`` file of every package ``setup.py`` installs."""
    spec = importlib.util.spec_from_file_location("rlds_lang_setup", repo / "setup.py")
    setup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup)
    packages, package_dir = setup.packages()
    modules = {}
    for package in packages:
        folder = repo / package_dir.get(package, package.replace(".", "/"))
        for path in sorted(folder.glob("*.py")):
            is_package = path.stem == "__init__"
            modules[package if is_package else f"{package}.{path.stem}"] = Module(path.read_text(encoding="utf-8"),
                                                                                  is_package)
    return modules


def modules_of_wheel(wheel: str | Path) -> dict[str, Module]:
    """Installed module name -> module, for every ``.py`` file in the built wheel ``wheel``."""
    modules = {}
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.endswith(".py") and ".dist-info/" not in name:
                dotted = name[:-3].replace("/", ".")
                is_package = dotted.endswith(".__init__")
                modules[dotted.removesuffix(".__init__")] = Module(archive.read(name).decode("utf-8"), is_package)
    return modules


def _requirement_names(lines: str) -> list[str]:
    return [Requirement(line).name for line in (raw.split("#", 1)[0].strip() for raw in lines.splitlines()) if line]


def requirements(repo: Path = REPO) -> tuple[list[str], list[str]]:
    """``(install_requires with every extra but dev, the dev extra's own tools)`` of ``setup.cfg``, as distribution
    names: what ``pip install 'rlds-lang[all]'`` installs, and what the tests add (the dev extra's reference to
    ``rlds-lang`` itself left out)."""
    config = configparser.ConfigParser()
    config.read(repo / "setup.cfg", encoding="utf-8")
    extras = config["options.extras_require"]
    installed = _requirement_names(config["options"]["install_requires"])
    for extra in extras:
        if extra != "dev":
            installed += _requirement_names(extras[extra])
    return (list(dict.fromkeys(installed)),
            [name for name in _requirement_names(extras["dev"]) if _normal(name) != "rlds-lang"])


def base_requirements(repo: Path = REPO) -> list[str]:
    """``install_requires`` alone: what ``pip install rlds-lang`` installs (no extra), as distribution names."""
    config = configparser.ConfigParser()
    config.read(repo / "setup.cfg", encoding="utf-8")
    return _requirement_names(config["options"]["install_requires"])


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def with_dependencies(names: Iterable[str]) -> set[str]:
    """The distributions ``names`` and, recursively, those they require (no extras), as normalised names."""
    seen: set[str] = set()
    pending = [_normal(name) for name in names]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            required = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # not installed here: it provides no module the check could accept
        for line in required:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(_normal(requirement.name))
    return seen


def provided_modules(distributions: set[str]) -> set[str]:
    """The top-level module names the installed ``distributions`` provide."""
    return {module for module, owners in importlib.metadata.packages_distributions().items()
            if any(_normal(owner) in distributions for owner in owners)}


def imported_modules(name: str, module: Module) -> list[tuple[int, str]]:
    """``(line, absolute dotted name)`` of each module ``module`` (installed as ``name``) imports from: the
    ``X`` of ``import X`` and of ``from X import y``, a relative ``X`` resolved against ``name``."""
    parts = name.split(".") + (["__init__"] if module.is_package else [])
    found = []
    for node in ast.walk(ast.parse(module.source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level >= len(parts):  # climbs out of the top package
            found.append((node.lineno, "." * node.level + (node.module or "")))
        elif isinstance(node, ast.ImportFrom) and node.level:
            found.append((node.lineno, ".".join(parts[:-node.level] + ([node.module] if node.module else []))))
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, node.module))
    return found


def module_level_imports(name: str, module: Module) -> list[tuple[int, str]]:
    """``imported_modules`` less the imports inside functions: what importing the module itself imports (class
    bodies and ``if``/``try`` blocks at the top run on import, function bodies do not)."""
    tree = ast.parse(module.source)
    lazy: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            lazy.update(id(inner) for inner in ast.walk(node) if inner is not node)
    parts = name.split(".") + (["__init__"] if module.is_package else [])
    found = []
    for node in ast.walk(tree):
        if id(node) in lazy or not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        found.extend(_names_of(node, parts))
    return found


def _names_of(node: ast.AST, parts: list[str]) -> list[tuple[int, str]]:
    if isinstance(node, ast.Import):
        return [(node.lineno, alias.name) for alias in node.names]
    if node.level:
        return [(node.lineno, ".".join(parts[:-node.level] + ([node.module] if node.module else [])))]
    return [(node.lineno, node.module)]


def unresolved_imports(modules: dict[str, Module], installed: set[str] | None = None,
                       for_tests: set[str] | None = None) -> list[str]:
    """``module:line: name`` for each import in ``modules`` (installed name -> module) that the install does not
    provide. ``installed``/``for_tests``: the top-level modules of the requirements and of the ``dev`` extra
    (default: ``setup.cfg``'s, with their dependencies, as installed here)."""
    required, dev = requirements()
    installed = provided_modules(with_dependencies(required)) if installed is None else installed
    for_tests = provided_modules(with_dependencies(dev)) if for_tests is None else for_tests
    own = {name.split(".")[0] for name in modules}
    problems = []
    for name, module in sorted(modules.items()):
        for line, imported in imported_modules(name, module):
            top = imported.split(".")[0]
            if top in own:
                ok = imported in modules
            else:
                ok = top in sys.stdlib_module_names or top in installed or (
                    name.endswith("_test") and top in for_tests)
            if not ok:
                problems.append(f"{name}:{line}: {imported}")
    return problems


if __name__ == "__main__":
    wheel_modules = modules_of_wheel(sys.argv[1])
    unresolved = unresolved_imports(wheel_modules)
    print("\n".join(unresolved) or f"every import of the wheel's {len(wheel_modules)} modules resolves")
    sys.exit(1 if unresolved else 0)
