"""The two test tiers: ``tests/slow_tests.txt`` lists the slow tier (``pytest -m "not slow"`` is the everyday one),
each id naming a test that exists, and ``setup.cfg`` registers the marker the root ``conftest.py`` puts on them."""

from __future__ import annotations

import ast
import configparser
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def listed_ids() -> list[str]:
    """The ids of ``tests/slow_tests.txt`` in order (comments and blank lines left out)."""
    lines = (line.split("#", 1)[0].strip() for line in (REPO / "tests" / "slow_tests.txt").read_text().splitlines())
    return [line for line in lines if line]


def functions_of(path: Path) -> set[str]:
    """The names of the test functions of ``path``: module level, ``Class::name`` in test classes, and ``Class::`` for
    every class."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names.add(f"{node.name}::")  # a test class: its test methods may be inherited (tfds' builder tests)
            names |= {f"{node.name}::{f.name}" for f in node.body
                      if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name.startswith("test")}
    return names


class FakeItem:
    """The part of a pytest item that the root conftest's hooks use: its id and its markers, by name."""

    def __init__(self, nodeid: str, markers: list[str] | None = None):
        self.nodeid, self.markers = nodeid, list(markers or [])

    def add_marker(self, marker: str) -> None:
        self.markers.append(marker)

    def get_closest_marker(self, name: str) -> str | None:
        return name if name in self.markers else None


def test_every_listed_slow_test_exists_once():
    ids = listed_ids()
    assert ids and len(ids) == len(set(ids)), "an id is listed twice"
    missing = []
    for test_id in ids:
        path, _, name = test_id.partition("::")
        name = name.split("[", 1)[0]
        known = functions_of(REPO / path) if (REPO / path).is_file() else set()
        if name not in known and not ("::" in name and name.split("::", 1)[0] + "::" in known):
            missing.append(test_id)
    assert not missing, f"tests/slow_tests.txt names tests that do not exist (renamed or removed?): {missing}"


def test_the_slow_marker_is_registered_and_put_on_the_listed_tests():
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    assert any(line.strip().startswith("slow:") for line in config["tool:pytest"]["markers"].splitlines())
    import conftest

    first = listed_ids()[0]
    items = [FakeItem(first), FakeItem(first + "[case]"), FakeItem("tests/test_tiers.py::not_listed")]
    conftest.pytest_collection_modifyitems(None, items)
    assert [item.markers for item in items] == [["slow"], ["slow"], []]


def test_files_holding_a_slow_test_are_handed_out_first_then_the_larger_files(request):
    import conftest

    names = ["a.py::1", "a.py::2", "a.py::3", "c.py::1", "b.py::fast", "b.py::slow", "d.py::1", "d.py::2"]
    items = [FakeItem(name, ["slow"] if name == "b.py::slow" else []) for name in names]
    ordered = [item.nodeid for item in conftest.slow_files_first(items)]
    assert ordered == ["b.py::fast", "b.py::slow", "a.py::1", "a.py::2", "a.py::3", "d.py::1", "d.py::2", "c.py::1"]
    # pytest-xdist (a dev dependency) would otherwise hand out files by test count alone, the slow ones anywhere
    assert request.config.option.loadscopereorder is False
