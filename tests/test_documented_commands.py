"""Every ``rlds-lang`` command written in a code block of the README or the docs is a valid command line as
written: the parser accepts its sub-commands and options (a renamed command or flag fails here). Running them is
the business of the tests of each command, on small data."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from trainers.cli.main import build_parser

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def shell_blocks(text: str) -> list[str]:
    """The fenced code blocks of a markdown text whose language is a shell (or not given)."""
    blocks, current, language = [], None, ""
    for line in text.splitlines():
        if line.startswith("```"):
            if current is None:
                current, language = [], line[3:].strip()
            else:
                if language in ("", "bash", "sh", "console", "shell"):
                    blocks.append("\n".join(current))
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def documented_commands() -> list[tuple[str, str]]:
    """``(document, command)`` for every line of a shell code block that runs ``rlds-lang`` (backslash
    continuations joined, comments dropped, anything before ``rlds-lang`` on the line such as ``.venv/bin/``
    cut off, and anything after ``&&`` or ``|``; lines with shell expansions are templates and are left out)."""
    found = []
    for document in DOCUMENTS:
        for block in shell_blocks(document.read_text(encoding="utf-8")):
            for line in re.sub(r"\\\n\s*", " ", block).splitlines():
                line = line.split(" #", 1)[0].strip()
                match = re.search(r"(?:^|[\s/])rlds-lang(\s.*)?$", line)
                if match and not line.startswith("#") and "$" not in line:  # a shell template, not a command
                    command = ("rlds-lang" + (match.group(1) or "")).split(" && ", 1)[0].split(" | ", 1)[0]
                    found.append((document.relative_to(REPO).as_posix(), command.strip()))
    return found


COMMANDS = documented_commands()


#: what only a checkout has: the benchmarks, the tests, the builders' folders, the committed pages, a PYTHONPATH set
#: to the checkout's root (the wheel installs builders/ as rlds_lang_datasets and ships no bench/ or tests/).
CHECKOUT_ONLY = re.compile(r"bench/|PYTHONPATH=\.|(?<![\w/-])builders/|(?<![\w/-])tests/|cp docs/")


def checkout_only_lines(text: str) -> list[str]:
    """The lines of the shell blocks of ``text`` that need a checkout but do not say so (``checkout`` in the line, or
    in a comment line above it in the block)."""
    found = []
    for block in shell_blocks(text):
        said = False
        for line in block.splitlines():
            said = said or (line.lstrip().startswith("#") and "checkout" in line)
            if CHECKOUT_ONLY.search(line) and "checkout" not in line and not said:
                found.append(line.strip())
    return found


def test_every_guide_command_works_from_the_wheel_or_says_it_needs_a_checkout():
    unsaid = {document.relative_to(REPO).as_posix(): checkout_only_lines(document.read_text(encoding="utf-8"))
              for document in sorted((REPO / "docs").rglob("*.md"))}
    assert not {k: v for k, v in unsaid.items() if v}, unsaid
    assert checkout_only_lines("```bash\npython bench/x.py\nrlds-lang build visdial --dummy-data\n```\n") == [
        "python bench/x.py"]
    assert not checkout_only_lines("```bash\n# in a checkout:\npython bench/x.py\n```\n")


def test_the_documents_have_commands():
    assert len(COMMANDS) >= 20


@pytest.mark.parametrize("document,command", COMMANDS)
def test_documented_command_parses(document, command):
    argv = shlex.split(command)[1:]
    try:
        build_parser().parse_args(argv)
    except SystemExit as error:
        pytest.fail(f"{document}: `{command}` is not a valid command line (exit {error.code})")


def sub_command_actions(parser) -> list:
    """The sub-command actions of ``parser`` (argparse keeps them among its actions)."""
    import argparse

    return [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]


def test_every_listed_command_has_a_one_line_help_at_every_level():
    missing, unlisted = [], []

    def walk(parser, path):
        for action in sub_command_actions(parser):
            listed = {choice.dest: choice.help for choice in action._choices_actions}
            text = parser.format_help()
            for name, help_text in listed.items():
                if not (help_text or "").strip():
                    missing.append(" ".join(path + [name]))
                elif name not in text:
                    unlisted.append(" ".join(path + [name]))
            for name, sub in action.choices.items():
                if name in listed:
                    walk(sub, path + [name])

    walk(build_parser(), ["rlds-lang"])
    assert not missing, f"commands without a help line: {missing}"
    assert not unlisted, f"commands missing from their group's --help: {unlisted}"


def test_task_tools_are_grouped_and_former_names_still_parse():
    parser = build_parser()
    grouped = parser.parse_args(["visdial", "tokenizer", "--manual-dir", "d", "--out", "o.json"])
    former = parser.parse_args(["visdial-tokenizer", "--manual-dir", "d", "--out", "o.json"])
    assert grouped.func is former.func and grouped.manual_dir == former.manual_dir == "d"
    top = parser.format_help()
    assert "visdial-tokenizer" not in top and "reddit-upvotes" not in top  # hidden aliases
    assert "visdial" in top and "reddit" in top


def test_result_pages_are_under_one_verb_and_former_spellings_are_hidden_aliases():
    from trainers.cli.former import canonical_argv

    parser = build_parser()
    top = parser.format_help()
    for former in ("ppo-results", "malt-results", "reward-demo"):
        assert former not in top  # hidden
    for former, today in (
            (["ppo-results", "--games", "5"], ["results", "ppo", "--games", "5"]),
            (["malt-results", "--smoke"], ["results", "malt", "--smoke"]),
            (["reward-demo", "dot", "--size", "5"], ["results", "preferences", "dot", "--size", "5"]),
            (["results", "--setting", "lmrl_gym", "--games", "6"], ["results", "lmrl-gym", "--games", "6"]),
            (["results", "--steps", "6", "--setting=section5"], ["results", "section5", "--steps", "6"]),
            (["results", "--settings", "official"], ["results", "wordle", "--settings", "official"])):
        assert canonical_argv(former) == today
        assert vars(parser.parse_args(former)) == vars(parser.parse_args(today)), former
    assert canonical_argv(["results", "section5", "--steps", "2"]) == ["results", "section5", "--steps", "2"]
    with pytest.raises(SystemExit, match="--setting 'paper'"):
        canonical_argv(["results", "--setting", "paper"])
    pages = parser.parse_args(["results", "lmrl-gym", "--small", "12"])
    assert pages.page == "lmrl-gym" and pages.small == 12 and pages.func.__name__ == "run_lmrl_gym"


def test_build_verb_runs_tfds_build_of_a_builder(monkeypatch, tmp_path):
    import shutil

    import trainers.core.build

    calls = []
    monkeypatch.setattr(trainers.core.build, "tfds_build", lambda *a, **k: calls.append((a, k)) or "built")
    logs = tmp_path / "logs"
    shutil.copytree(REPO / "builders" / "wordle_synthetic" / "dummy_data", logs)  # Wordle logs: the config's task
    args = build_parser().parse_args(["build", "wordle_synthetic", "--config", "manual_dir", "--data-dir", "runs/tfds",
                                      "--manual-dir", str(logs), "--small", "3"])
    assert args.func(args) == "built"
    args = build_parser().parse_args(["build", "wordle_synthetic", "--config", "expert", "--data-dir", "runs/ar",
                                      "--file-format", "array_record"])
    assert args.func(args) == "built"
    assert calls == [(("wordle_synthetic", "manual_dir", "runs/tfds"), {"manual_dir": str(logs), "small": 3,
                                                                         "file_format": None}),
                     (("wordle_synthetic", "expert", "runs/ar"), {"manual_dir": None, "small": None,
                                                                  "file_format": "array_record"})]


def test_the_train_line_names_every_algorithm_it_trains():
    parser = build_parser()
    top = next(a for a in sub_command_actions(parser))
    line = next(choice.help for choice in top._choices_actions if choice.dest == "train")
    algorithms = sub_command_actions(top.choices["train"])[0].choices
    assert all(name in line for name in algorithms), (line, sorted(algorithms))
