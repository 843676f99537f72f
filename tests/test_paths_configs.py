"""Every default output folder is under ``rlds_lang.paths.runs_dir()``: each config dataclass's ``out`` (found by
importing every module of the installed packages, so a new config is checked without being listed) and each
command-line option, resolved when the config or parser is made, so ``RLDS_LANG_RUNS`` moves them all."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import pkgutil
from pathlib import Path
from typing import Any, Iterator

import pytest

from rlds_lang.paths import default_run

PACKAGES = ("rlds_lang", "loggers", "transforms", "trainers", "creator_web")
#: the names of fields and options that hold an output folder.
FOLDER_NAMES = {"out", "workdir", "runs", "runs_dir"}


def dataclasses_of_packages() -> list[type]:
    """Every dataclass defined in a module of ``PACKAGES`` (each module imported)."""
    found = []
    for package in PACKAGES:
        for info in pkgutil.walk_packages(importlib.import_module(package).__path__, f"{package}."):
            if info.name.rsplit(".", 1)[-1] == "__main__":
                continue
            module = importlib.import_module(info.name)
            found += [value for value in vars(module).values()
                      if isinstance(value, type) and dataclasses.is_dataclass(value)
                      and value.__module__ == module.__name__]
    return found


def field_default(field: dataclasses.Field) -> Any:
    """The value a field takes when it is not given (``MISSING`` for a required one)."""
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def is_under(value: Any, folder: Path) -> bool:
    return isinstance(value, str) and Path(value).is_relative_to(folder)


def runs_relative(value: Any) -> bool:
    """A relative path starting at a ``runs`` folder of the current directory."""
    return isinstance(value, str) and not Path(value).is_absolute() and Path(value).parts[:1] == ("runs",)


@pytest.fixture
def chosen_runs(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("RLDS_LANG_RUNS", str(tmp_path / "chosen"))
    return tmp_path / "chosen"


def test_every_configs_out_defaults_under_the_runs_folder(tmp_path, monkeypatch):
    """Each default is checked under a ``RLDS_LANG_RUNS`` set after the modules are imported, so a default worked
    out once at import fails too."""
    configs = [cls for cls in dataclasses_of_packages() if "out" in {f.name for f in dataclasses.fields(cls)}]
    monkeypatch.setenv("RLDS_LANG_RUNS", str(tmp_path / "chosen"))
    chosen_runs = tmp_path / "chosen"
    assert len(configs) >= 20, [cls.__name__ for cls in configs]  # the discovery finds the trainers' configs
    wrong = []
    for cls in configs:
        for field in dataclasses.fields(cls):
            value = field_default(field)
            if value is dataclasses.MISSING:
                continue  # a required folder: the caller names it
            if (field.name in FOLDER_NAMES and not is_under(value, chosen_runs)) or runs_relative(value):
                wrong.append(f"{cls.__module__}.{cls.__qualname__}.{field.name} = {value!r}")
    assert not wrong, "defaults outside $RLDS_LANG_RUNS:\n" + "\n".join(wrong)


def parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """``parser`` and every subcommand's parser under it."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from parsers(sub)


def test_no_command_line_default_is_a_runs_folder_of_the_current_directory(chosen_runs):
    from trainers.cli.main import build_parser

    defaults = [(sub.prog, action.dest, action.default) for sub in parsers(build_parser())
                for action in sub._actions]
    assert any(dest == "workdir" and is_under(default, chosen_runs) for _, dest, default in defaults)
    wrong = [entry for entry in defaults if runs_relative(entry[2])
             or (entry[1] in FOLDER_NAMES and "runs" in str(entry[2]) and not is_under(entry[2], chosen_runs))]
    assert not wrong, wrong


def test_the_default_is_resolved_when_a_config_is_made(tmp_path, monkeypatch):
    from trainers.algorithms.bc import BCConfig

    monkeypatch.setenv("RLDS_LANG_RUNS", str(tmp_path / "first"))
    first = BCConfig()
    monkeypatch.setenv("RLDS_LANG_RUNS", str(tmp_path / "second"))
    assert first.out == str(tmp_path / "first" / "bc")
    assert BCConfig().out == str(tmp_path / "second" / "bc")


def test_the_help_names_the_default_folder(chosen_runs):
    from trainers.cli.main import build_parser

    train = next(sub for sub in parsers(build_parser()) if sub.prog.endswith("train bc"))
    out = next(action for action in train._actions if action.dest == "out")
    assert f"(default: {chosen_runs / 'bc'})" in out.help


def test_a_saved_config_reloads_with_its_own_out(tmp_path, monkeypatch):
    """A config saved to JSON and read back under another ``RLDS_LANG_RUNS`` keeps the folder it was saved with."""
    from trainers.algorithms.ilql.ilql import ILQLConfig
    from trainers.core.config import config_from_dict, config_to_dict

    monkeypatch.setenv("RLDS_LANG_RUNS", str(tmp_path / "then"))
    saved = json.dumps(config_to_dict(ILQLConfig(steps=3)))
    monkeypatch.setenv("RLDS_LANG_RUNS", str(tmp_path / "now"))
    reloaded = config_from_dict(ILQLConfig, json.loads(saved))
    assert reloaded.out == str(tmp_path / "then" / "ilql") and reloaded == ILQLConfig(steps=3, out=reloaded.out)


def test_default_run_is_a_field_of_the_runs_folder(chosen_runs):
    @dataclasses.dataclass
    class Config:
        out: str = default_run("nested/name")

    assert Config().out == str(chosen_runs / "nested" / "name")
    assert Config(out="mine").out == "mine"


def test_the_test_session_has_its_own_runs_folder():
    """The root ``conftest.py`` points the default runs folder into a folder made for this session, so a test that
    leaves ``out`` to its default neither writes into the user's runs nor resumes an earlier session's run."""
    from rlds_lang.paths import runs_dir, web_data_dir

    session = runs_dir().parent
    assert session.name.startswith("rlds_lang-session-") and web_data_dir().parent == session
    assert not (session / "runs").exists() or not any((session / "runs").rglob("checkpoint"))
