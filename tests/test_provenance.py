"""``trainers.experiments.provenance``: the commit a page names, and its command's folders spelled relative to the
repository's root, so that no page names a machine's folders."""

from __future__ import annotations

import re
from pathlib import Path

from trainers.experiments.provenance import git_commit, relative_path

ROOT = Path(__file__).resolve().parents[1]


def test_the_commit_is_the_checkouts_and_unknown_outside_one(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    if (ROOT / ".git").exists():
        assert re.fullmatch(r"[0-9a-f]{7,40}(\+dirty)?", git_commit())
    monkeypatch.chdir(tmp_path)  # not a git checkout
    assert git_commit() == "unknown"


def test_folders_inside_the_current_directory_are_spelled_relative(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert relative_path(tmp_path / "runs" / "results") == "runs/results"
    assert relative_path("runs/results") == "runs/results"
    assert relative_path("/elsewhere/runs") == "/elsewhere/runs"  # outside: as given, never made up
    assert relative_path(None) is None
