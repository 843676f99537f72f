"""The runnable code of a documentation page: the blocks marked ``<!-- runnable -->`` (an HTML comment on the line
before the fence), run in order, in one folder and one namespace, as the page reads.

A marked ``python`` block runs as it is; a marked ``bash`` block may hold only ``rlds-lang`` command lines
(comments and blank lines aside), each run as the installed console script beside the running interpreter, its
output printed, a failure raising with its messages. Each ``print(...)  # text`` line of the code must print
that text (``expected_prints``). Standard library only: the wheel stage (``.ci/wheel``) runs a page's code from
an installed wheel with ``python -m tests.docs_blocks --script PAGE`` (the code as one script) and checks its
output against ``python -m tests.docs_blocks --expected PAGE``; ``tests/test_docs_run.py`` runs every page.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

MARK = "<!-- runnable -->"
#: what a marked shell block's commands run through: the console script beside the running interpreter.
PRELUDE = '''import pathlib as _pathlib, shlex as _shlex, subprocess as _subprocess, sys as _sys


def _rlds_lang(line):
    """Runs one documented `rlds-lang ...` line with the installed console script; prints what it printed."""
    done = _subprocess.run([str(_pathlib.Path(_sys.executable).with_name("rlds-lang")), *_shlex.split(line)[1:]],
                           capture_output=True, text=True)
    print(done.stdout, end="")
    if done.returncode != 0:
        raise RuntimeError(f"`{line}` exited {done.returncode}:\\n{done.stdout[-2000:]}\\n{done.stderr[-4000:]}")
'''


def _shell_commands(lines: list[str], where: str) -> list[str]:
    commands = [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]
    for command in commands:
        if not command.startswith("rlds-lang "):
            raise ValueError(f"{where}: a runnable shell block may hold only rlds-lang commands, got {command!r}")
    return commands


def runnable_blocks(path: Path) -> list[tuple[int, str]]:
    """``(line, code)`` of the blocks of ``path`` marked runnable (line: the fence's, 1-based); a shell block's
    code is a call of ``_rlds_lang`` per command (``PRELUDE`` defines it)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = []
    for i, line in enumerate(lines):
        if line.strip() == MARK:
            fence = lines[i + 1] if i + 1 < len(lines) else ""
            if not fence.startswith(("```python", "```bash")):
                raise ValueError(f"{path}:{i + 1}: {MARK} must stand right before a ```python or ```bash block")
            end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
            body = lines[i + 2:end]
            if fence.startswith("```bash"):
                body = [f"_rlds_lang({command!r})" for command in _shell_commands(body, f"{path}:{i + 2}")]
            blocks.append((i + 2, "\n".join(body)))
    return blocks


def page_code(path: Path) -> str:
    """The runnable code of a page as one script: its blocks in order (``PRELUDE`` first when a shell block
    needs it)."""
    blocks = [code for _, code in runnable_blocks(path)]
    needs_prelude = any("_rlds_lang(" in code for code in blocks)
    return "\n".join(([PRELUDE] if needs_prelude else []) + blocks)


def expected_prints(code: str) -> list[str]:
    """What each ``print(...)  # text`` line of ``code`` says it prints."""
    return [m.strip() for m in re.findall(r"^print\(.*?\)\s+#\s*(.+)$", code, flags=re.M)]


def runnable_lines(path: Path) -> int:
    """How many lines the runnable blocks of a page show a reader (blank lines included)."""
    text = path.read_text(encoding="utf-8").splitlines()
    count = 0
    for i, line in enumerate(text):
        if line.strip() == MARK:
            end = next(j for j in range(i + 2, len(text)) if text[j].startswith("```"))
            count += end - (i + 2)
    return count


def main(argv: list[str] | None = None) -> None:
    """``--script PAGE`` prints a page's runnable code as one script; ``--expected PAGE`` what it must print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--script", metavar="PAGE", help="print the page's runnable code as one Python script")
    what.add_argument("--expected", metavar="PAGE", help="print what the page's code says it prints, a line each")
    args = parser.parse_args(argv)
    if args.script:
        print(page_code(Path(args.script)))
    else:
        print("\n".join(expected_prints(page_code(Path(args.expected)))))


if __name__ == "__main__":
    main()


__all__ = ["MARK", "PRELUDE", "expected_prints", "page_code", "runnable_blocks", "runnable_lines"]
