"""The docs run: the code blocks that a page under ``docs/`` marks as runnable (an HTML comment ``<!-- runnable -->``
on the line before its fence; ``tests.docs_blocks``) are executed, in order, in one fresh folder and namespace per
page, and each ``print(...)  # text`` line must print that text. A marked ``bash`` block holds ``rlds-lang``
commands, run with the installed console script. So a documented example cannot drift from the code."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

from tests.docs_blocks import MARK, expected_prints, page_code, runnable_blocks

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"


def guide_code(guide: str) -> str:
    """The runnable code of ``docs/guides/<guide>``, its blocks joined (a shell block's commands as calls)."""
    return page_code(DOCS / "guides" / guide)


def run_code(code: str, name: str) -> str:
    """Executes ``code`` as a script named ``name`` and returns what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, name, "exec"), {"__name__": "__main__"})
    return out.getvalue()


#: ``(page, line of its first runnable block, its code)`` of every page with runnable blocks.
PAGES = [(path.relative_to(REPO).as_posix(), blocks[0][0], page_code(path))
         for path in sorted(DOCS.rglob("*.md")) for blocks in [runnable_blocks(path)] if blocks]


def test_the_guides_mark_runnable_blocks():
    assert len(PAGES) >= 5


@pytest.mark.parametrize("document,line,code", PAGES, ids=[f"{d}:{n}" for d, n, _ in PAGES])
def test_runnable_block_prints_what_it_says(document, line, code, tmp_path):
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        printed = run_code(code, f"{document}:{line}")
    finally:
        os.chdir(cwd)
    for text in expected_prints(code):
        assert text in printed, f"{document}:{line} says it prints {text!r}; it printed:\n{printed}"


def test_a_marked_block_that_is_not_python_or_rlds_lang_commands_is_refused(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(f"{MARK}\n```text\nhi\n```\n")
    with pytest.raises(ValueError, match="must stand right before"):
        runnable_blocks(page)
    page.write_text(f"{MARK}\n```bash\n# a comment\nrlds-lang datasets list\necho hi\n```\n")
    with pytest.raises(ValueError, match="only rlds-lang commands, got 'echo hi'"):
        runnable_blocks(page)


def test_a_pages_blocks_run_in_order_in_one_namespace_and_shell_blocks_call_the_console_script(tmp_path, monkeypatch):
    """The shell block runs ``rlds-lang`` beside the interpreter (here a stand-in script that echoes its
    arguments, so the test stays fast); its output is printed between the Python blocks' prints; a command that
    fails raises with its messages."""
    import sys

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "rlds-lang"
    script.write_text('#!/bin/sh\necho "ran: $*"\n[ "$1" != fail ] || { echo "bad input" >&2; exit 3; }\n')
    script.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    page = tmp_path / "page.md"
    page.write_text(f"{MARK}\n```python\nx = 2\n```\ntext\n\n{MARK}\n```bash\n# build it\n"
                    f"rlds-lang build 'my logs' --name echo\n```\n\n{MARK}\n```python\nprint(x * 3)  # 6\n```\n")
    code = page_code(page)
    assert expected_prints(code) == ["6"]
    assert run_code(code, "page.md").splitlines() == ["ran: build my logs --name echo", "6"]
    page.write_text(f"{MARK}\n```bash\nrlds-lang fail now\n```\n")
    with pytest.raises(RuntimeError, match="(?s)exited 3.*bad input"):
        run_code(page_code(page), "page.md")


def test_transforms_guide_plays_a_perfect_policy():
    code = guide_code("transforms.md")
    assert len(expected_prints(code)) >= 2
    assert "win rate 1.000" in run_code(code, "transforms.md")


def test_tweets_example_prints_exactly_what_it_says():
    code = guide_code("wordle.md")
    expected = expected_prints(code)
    assert len(expected) == 3
    assert [line.strip() for line in run_code(code, "wordle.md").splitlines()] == expected


def test_the_readme_tour_is_the_guide_that_runs():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Five-minute tour", 1)[1].split("\n## ", 1)[0]
    shown = re.findall(r"```python\n(.*?)\n```", section, flags=re.S)
    assert shown == [guide_code("tour.md")]


def test_the_documentation_site_builds_strictly(tmp_path):
    """``mkdocs build --strict``: every guide and results page is in the navigation, every link resolves and the
    API reference renders from the docstrings without a warning."""
    import subprocess
    import sys

    mkdocs = Path(sys.executable).with_name("mkdocs")
    assert mkdocs.exists(), "mkdocs is part of the dev extras (pip install -e '.[dev]')"
    done = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=REPO,
                          capture_output=True, text=True, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "api" / "core" / "index.html").is_file()


def test_the_own_environment_guide_records_builds_loads_and_trains_a_plain_dm_env_in_under_55_lines():
    """docs/guides/own_environment.md: a plain ``dm_env.Environment`` (no LanguageEnv), recorded with
    ``loggers.record``, built with ``rlds-lang build``, loaded with ``tfds.load`` and trained on with BC, in
    fewer than 55 lines of runnable blocks (the run itself: ``test_runnable_block_prints_what_it_says``)."""
    from tests.docs_blocks import runnable_lines

    page = DOCS / "guides" / "own_environment.md"
    code = page_code(page)
    assert runnable_lines(page) < 55
    assert "class Echo(dm_env.Environment):" in code and "LanguageEnv" not in code
    for step in ("record(Echo(), parrot", "_rlds_lang('rlds-lang build echo_logs --name echo", "tfds.load(",
                 'train("bc", config'):
        assert step in code, step
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    assert "guides/own_environment.md" in nav and "architecture.md" in nav and "datasets/index.md" in nav
