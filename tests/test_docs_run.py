"""The docs run: every code block that a guide under ``docs/`` marks as runnable (an HTML comment
``<!-- runnable -->`` on the line before its fence) is executed, and each ``print(...)  # text`` line of it must
print that text. So a documented example cannot drift from the code."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
MARK = "<!-- runnable -->"


def runnable_blocks(path: Path) -> list[tuple[int, str]]:
    """``(line, code)`` of the python blocks of ``path`` marked runnable (line: the fence's, 1-based)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = []
    for i, line in enumerate(lines):
        if line.strip() == MARK:
            fence = lines[i + 1] if i + 1 < len(lines) else ""
            if not fence.startswith("```python"):
                raise ValueError(f"{path}:{i + 1}: {MARK} must stand right before a ```python block")
            end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
            blocks.append((i + 2, "\n".join(lines[i + 2:end])))
    return blocks


def guide_code(guide: str) -> str:
    """The runnable code of ``docs/guides/<guide>``, its blocks joined."""
    return "\n".join(code for _, code in runnable_blocks(DOCS / "guides" / guide))


def expected_prints(code: str) -> list[str]:
    """What each ``print(...)  # text`` line of ``code`` says it prints."""
    return [m.strip() for m in re.findall(r"^print\(.*?\)\s+#\s*(.+)$", code, flags=re.M)]


def run_code(code: str, name: str) -> str:
    """Executes ``code`` as a script named ``name`` and returns what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, name, "exec"), {"__name__": "__main__"})
    return out.getvalue()


BLOCKS = [(path.relative_to(REPO).as_posix(), line, code)
          for path in sorted(DOCS.rglob("*.md")) for line, code in runnable_blocks(path)]


def test_the_guides_mark_runnable_blocks():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("document,line,code", BLOCKS, ids=[f"{d}:{n}" for d, n, _ in BLOCKS])
def test_runnable_block_prints_what_it_says(document, line, code, tmp_path):
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        printed = run_code(code, f"{document}:{line}")
    finally:
        os.chdir(cwd)
    for text in expected_prints(code):
        assert text in printed, f"{document}:{line} says it prints {text!r}; it printed:\n{printed}"


def test_a_marked_block_that_is_not_python_is_refused(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(f"{MARK}\n```bash\necho hi\n```\n")
    with pytest.raises(ValueError, match="must stand right before"):
        runnable_blocks(page)


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
