"""Default folders come from an environment variable or the user's directories, never from the code's location;
data files are read through ``importlib.resources``."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

import rlds_lang
from rlds_lang import paths
from rlds_lang.continuation.corpus import CORPUS_FILES, DATA_DIR, corpus_examples

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("rlds_lang", "loggers", "transforms", "trainers", "creator_web")
DEFAULTS = [(paths.cache_dir, "RLDS_LANG_CACHE", "XDG_CACHE_HOME", ""),
            (paths.runs_dir, "RLDS_LANG_RUNS", "XDG_DATA_HOME", "runs"),
            (paths.web_data_dir, "RLDS_LANG_WEB_DATA", "XDG_DATA_HOME", "web")]


@pytest.mark.parametrize("folder, variable, xdg, leaf", DEFAULTS)
def test_the_environment_variable_names_the_folder(folder, variable, xdg, leaf, tmp_path, monkeypatch):
    monkeypatch.setenv(variable, str(tmp_path / "chosen"))
    assert folder() == tmp_path / "chosen"


@pytest.mark.parametrize("folder, variable, xdg, leaf", DEFAULTS)
def test_otherwise_the_users_directory(folder, variable, xdg, leaf, tmp_path, monkeypatch):
    monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv(xdg, str(tmp_path / "xdg"))
    assert folder() == tmp_path / "xdg" / paths.APP_NAME / leaf
    assert not folder().is_relative_to(Path(rlds_lang.__file__).parent)  # never inside the package's folder


def test_an_empty_variable_is_not_a_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("RLDS_LANG_RUNS", "")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert paths.runs_dir() == tmp_path / paths.APP_NAME / "runs"


def test_the_command_lines_default_folders_are_the_users(tmp_path, monkeypatch):
    from creator_web.server import add_data_dir_argument
    from trainers.cli.main import build_parser

    monkeypatch.setenv("RLDS_LANG_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("RLDS_LANG_WEB_DATA", str(tmp_path / "web"))
    parser = build_parser()
    assert parser.parse_args(["demo"]).workdir == str(tmp_path / "runs")
    assert parser.parse_args(["web"]).data_dir == str(tmp_path / "web")
    server = argparse.ArgumentParser()
    add_data_dir_argument(server)
    assert server.parse_args([]).data_dir == str(tmp_path / "web")


#: the modules allowed to name ``__file__``, and why it is not a data file or default folder beside the code.
FILE_USES = {
    "loggers/workers.py": "the __file__ of the user's __main__ script (can worker processes re-import it)",
}


def package_lines(packages=PACKAGES, root=REPO):
    """``(path relative to root, line number, line)`` of every line of every module of ``packages``."""
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                yield path.relative_to(root).as_posix(), number, line


def test_no_default_reaches_outside_its_package():
    """No module of the installed packages climbs out of its package (``parents[1]``, ``parents[2]``, ``..``
    from ``__file__``) for data or a default folder."""
    climbing = re.compile(r"parents\[[12]\]|(__file__|\.parent)\)*\s*\)?\s*/\s*\"\.\.\"|os\.pardir")
    found = [f"{path}:{number}: {line.strip()}" for path, number, line in package_lines() if climbing.search(line)]
    assert not found, "\n".join(found)


def test_no_module_reads_files_beside_its_own_path():
    """Package data is read through ``importlib.resources`` (which also reads from a zip), never as a path made
    from ``__file__``; the few other uses of ``__file__`` are listed with their reason in ``FILE_USES``."""
    found = [f"{path}:{number}: {line.strip()}" for path, number, line in package_lines()
             if "__file__" in line and path not in FILE_USES]
    assert not found, "\n".join(found)
    users = {path for path, _, line in package_lines() if "__file__" in line}
    assert set(FILE_USES) <= users, f"FILE_USES names modules that no longer use __file__: {set(FILE_USES) - users}"


def test_the_corpus_reads_through_importlib_resources_from_a_zip(tmp_path):
    """``DATA_DIR`` is the package's resource folder, and the corpus reads from any ``importlib.resources``
    traversable, not only from a folder on disk (a zipped install)."""
    import importlib.resources
    import zipfile

    assert DATA_DIR == importlib.resources.files("rlds_lang.continuation") / "data"
    archive = tmp_path / "corpus.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for name in CORPUS_FILES:
            zipped.writestr(f"data/{name}", (DATA_DIR / name).read_bytes())
    from_zip = corpus_examples("train", data_dir=zipfile.Path(archive, "data/"))
    assert len(from_zip) > 100 and from_zip == corpus_examples("train")
