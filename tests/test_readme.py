"""The README's transforms example runs, and prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def section_code(title: str) -> str:
    """The ```python blocks of the README section headed ``title``."""
    text = README.read_text(encoding="utf-8")
    section = text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```python\n(.*?)```", section, flags=re.S))


def test_transforms_example_prints_what_it_says():
    code = section_code("Transforms (`transforms/`)")
    expected = [m.strip() for m in re.findall(r"^print\(.*?\)\s+#\s*(.+)$", code, flags=re.M)]
    assert len(expected) >= 2
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {})
    printed = out.getvalue()
    for value in expected:
        assert value in printed, f"README says {value!r}; the example printed:\n{printed}"
    assert "win rate 1.000" in printed


def test_tweets_example_prints_what_it_says():
    code = section_code("Human games from tweets (`builders/wordle_tweets`)")
    expected = [m.strip() for m in re.findall(r"^print\(.*?\)\s+#\s*(.+)$", code, flags=re.M)]
    assert len(expected) == 3
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {})
    printed = out.getvalue().splitlines()
    assert [line.strip() for line in printed] == expected
