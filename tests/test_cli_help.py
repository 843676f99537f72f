"""Every ``rlds-lang`` help answers without importing what only running a command needs: in a fresh process, the
top-level help and each command's and sub-command's ``--help`` leave PyTorch, TensorFlow, transformers, TFDS and
Beam unimported (they cost seconds before the first line; the times themselves are measured by
``bench/cli_help.py``). Also: each help prints (no ``%`` formatting error, no doubled ``%%``), a command's options are
built only when it is named, and a command line's mistakes are one line and exit status 2."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: what no help may import.
HEAVY = ("torch", "tensorflow", "transformers", "tensorflow_datasets", "apache_beam")

HELPS = textwrap.dedent("""
    import contextlib, io, json, sys
    from trainers.cli.commands import command_paths
    from trainers.cli.main import build_parser

    helps = {}
    for path in list(command_paths(build_parser())):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                build_parser().parse_args([*path, "--help"])
                code = None
            except SystemExit as stop:
                code = stop.code
        helps[" ".join(path)] = {"code": code, "text": out.getvalue()}
    print(json.dumps({"helps": helps, "heavy": sorted(set(HEAVY) & set(sys.modules))}))
""")


@pytest.fixture(scope="module")
def every_help() -> dict:
    """Each command path's ``--help`` (exit code and text) and the heavy modules imported, from one fresh process."""
    script = f"HEAVY = {HEAVY!r}\n" + HELPS
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "COLUMNS": "100"}
    run = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.splitlines()[-1])


def test_no_help_imports_pytorch_tensorflow_transformers_tfds_or_beam(every_help):
    from trainers.cli.main import command_table

    helps = every_help["helps"]
    assert set(command_table()) <= {path.split(" ")[0] for path in helps if path}, sorted(helps)
    assert {"", "train bc", "train ilql", "train ppo", "train online_pbc", "train reward", "eval", "results wordle",
            "results preferences curves", "demo", "web", "visdial serve", "reddit upvotes"} <= set(helps)
    assert every_help["heavy"] == []


def test_every_help_prints_and_exits_0(every_help):
    for path, result in every_help["helps"].items():
        assert result["code"] == 0 and result["text"].startswith("usage: rlds-lang"), (path, result)
        assert "%%" not in result["text"], (path, result["text"])
    assert "%BC" in every_help["helps"]["train bc"]["text"]


def test_record_help_describes_every_option_and_lists_the_policies(every_help):
    from rlds_lang.wordle.policies import POLICIES

    text = " ".join(every_help["helps"]["record"]["text"].split())
    for option, words in {"--policy POLICY": "the policy that plays", "--episodes EPISODES": "games to record",
                          "--rule {official,ilql}": "the colouring rule", "--mode {fixed,adversarial_resample}":
                          "the hidden word"}.items():
        assert f"{option} {words}" in text, (option, text)
    assert all(f"{name}: " in text for name in POLICIES)


def test_a_command_is_built_only_when_it_is_named():
    from trainers.cli.commands import LazySubParsers

    built = []

    def adder(name):
        def add(sub):
            built.append(name)
            sub.add_parser(name, help="added").add_argument("--x", default=name)
        return add

    parser = argparse.ArgumentParser(prog="tool")
    sub = parser.add_subparsers(dest="command", action=LazySubParsers, metavar="COMMAND")
    for name in ("one", "two", "three"):
        sub.add_lazy(name, f"the {name} command (100%)", adder(name))
    assert "the two command (100%)" in parser.format_help() and built == []
    assert parser.parse_args(["two"]).x == "two" and built == ["two"]
    assert list(sub.choices) == ["one", "two", "three"]  # listed in their order, built or not
    with pytest.raises(SystemExit):
        parser.parse_args(["four"])
    assert built == ["two"]


@pytest.mark.parametrize("argv, message", [
    (["--policy", "nope"], "argument --policy: invalid choice: 'nope'"),
    (["--policy-params", "{x"], "argument --policy-params: not JSON"),
    (["--policy", "random_mixture", "--policy-params", '{"x": 1}'],
     "rlds-lang record: error: --policy random_mixture --policy-params {\"x\": 1}: "),
])
def test_a_wrong_policy_is_one_line_and_exit_status_2(tmp_path, capsys, argv, message):
    from trainers.cli.main import main

    with pytest.raises(SystemExit) as stop:
        main(["record", *argv, "--episodes", "1", "--out", str(tmp_path / "logs")])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if not line.startswith(("usage:", " "))]
    assert stop.value.code == 2 and len(errors) == 1 and message in errors[0], err
    assert "Traceback" not in err and not (tmp_path / "logs").exists()
