"""The wheel as installed: every module's imports resolve to installed names (the builders' tests included, which
the wheel ships as TFDS ships its own), and the browser tool serves its pages from a zipped package, so nothing
reads its files beside ``__file__``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

from tests.wheel_imports import Module, modules_of_setup, unresolved_imports

REPO = Path(__file__).resolve().parents[1]


def test_every_import_of_the_wheels_modules_is_installed():
    modules = modules_of_setup()
    assert "rlds_lang_datasets.wordle_synthetic.wordle_synthetic_dataset_builder_test" in modules  # tests shipped
    assert "rlds_lang_datasets.testing" in modules and "builders.testing" not in modules
    assert unresolved_imports(modules) == []


def test_the_import_check_finds_what_the_wheel_does_not_install():
    modules = {
        "pkg": Module("from .sub import thing\n", True),
        "pkg.sub": Module("import json\nimport numpy\nfrom . import other\nfrom .gone import x\n", False),
        "pkg.other": Module("import pytest\nfrom builders.testing import Mixin\n", False),
        "pkg.other_test": Module("import pytest\nfrom .. import elsewhere\n", False),
    }
    assert unresolved_imports(modules, installed={"numpy"}, for_tests={"pytest"}) == [
        "pkg.other:1: pytest",            # the dev extra, outside a test module
        "pkg.other:2: builders.testing",  # neither the wheel's nor a requirement's
        "pkg.other_test:2: ..",           # climbs out of the wheel's package
        "pkg.sub:4: pkg.gone",            # no such module in the wheel
    ]


def test_the_builders_tests_import_under_the_installed_name(tmp_path):
    """A copy of ``builders/`` named ``rlds_lang_datasets``, with ``builders`` unimportable, imports every
    builder's test module: their imports are relative, so they follow the package's installed name."""
    site = tmp_path / "site"
    shutil.copytree(REPO / "builders", site / "rlds_lang_datasets",
                    ignore=shutil.ignore_patterns("__pycache__", "dummy_data"))
    tests = sorted(f"rlds_lang_datasets.{path.parent.name}.{path.stem}"
                   for path in (site / "rlds_lang_datasets").glob("*/*_test.py"))
    builder_folders = {path.parent.name for path in (REPO / "builders").glob("*/*_dataset_builder.py")}
    assert len(builder_folders) >= 7 and {name.split(".")[1] for name in tests} == builder_folders, tests
    code = textwrap.dedent(f"""
        import importlib, sys
        sys.modules["builders"] = None  # the checkout's name: not installed
        sys.path.insert(0, {str(site)!r})
        for name in {tests!r}:
            print(importlib.import_module(name).__file__)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr[-2000:]
    files = result.stdout.splitlines()[-len(tests):]
    assert all(file.startswith(str(site)) for file in files), files


def test_the_browser_tool_serves_its_pages_from_a_zipped_package(tmp_path):
    """``creator_web`` imported from a zip archive (zipimport) renders every page and serves every static file
    byte for byte: its files are read through ``importlib.resources``, not as paths beside ``__file__``."""
    archive = tmp_path / "creator_web.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in sorted((REPO / "creator_web").rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                zipped.write(path, path.relative_to(REPO).as_posix())
    code = textwrap.dedent(f"""
        import json, sys, zipimport
        sys.path.insert(0, {str(archive)!r})
        import creator_web.app
        from fastapi.testclient import TestClient

        assert isinstance(creator_web.__spec__.loader, zipimport.zipimporter), creator_web.__spec__
        client = TestClient(creator_web.app.create_app({str(tmp_path / "data")!r}), base_url="http://127.0.0.1")
        pages = {{path: client.get(path).text for path in ("/", "/play", "/judge", "/review")}}
        names = sorted(f.name for f in creator_web.app.STATIC.iterdir())
        served = {{name: client.get("/static/" + name).content.hex() for name in names}}
        print(json.dumps({{"file": creator_web.__file__, "pages": pages, "served": served}}))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["file"].startswith(str(archive))
    for path, page in report["pages"].items():
        assert "<html" in page.lower() and "<nav" in page.lower(), (path, page[:200])
    static = REPO / "creator_web" / "static"
    assert sorted(report["served"]) == sorted(p.name for p in static.iterdir() if p.is_file())
    for name, served in report["served"].items():
        assert bytes.fromhex(served) == (static / name).read_bytes(), name
