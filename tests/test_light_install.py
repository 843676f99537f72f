"""The light install (``pip install rlds-lang``, no extra): recording, reading, building and loading datasets and
their statistics need no PyTorch. ``setup.cfg``'s base requirements pull none of the trainers' stack, no module of
``rlds_lang``, ``loggers``, ``transforms`` or the datasets imports anything beyond them when it is imported (only
inside the functions that need more), and, with PyTorch and the servers hidden, a plain environment records, builds
and loads by name while ``rlds-lang`` says what to install for the commands that need the ``train`` extra."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.wheel_imports import (Module, base_requirements, module_level_imports, modules_of_setup, provided_modules,
                                 requirements, with_dependencies)

REPO = Path(__file__).resolve().parents[1]
#: the packages of the light install, by their installed names.
LIGHT = ("rlds_lang", "loggers", "transforms", "rlds_lang_datasets")
#: what the light install must never pull in or import.
HEAVY = {"torch", "transformers", "tensorboard", "fastapi", "uvicorn"}
#: the light packages' modules that exist for the ``train`` extra (imported only by name): the PyTorch bridge and
#: the data-source reader's torch ``DataLoader`` batches.
FOR_THE_TRAIN_EXTRA = {"transforms.torch_bridge", "transforms.data_source"}
#: the modules of the command line that a light install imports: the parser and the record, build, datasets and
#: stats commands (the commands that need the extras are imported only when those are installed).
LIGHT_CLI = {"trainers", "trainers.cli", "trainers.cli.main", "trainers.cli.commands", "trainers.cli.record",
             "trainers.cli.build", "trainers.cli.datasets",
             "trainers.cli.stats", "trainers.cli.extras", "trainers.cli.former", "trainers.core",
             "trainers.core.build", "trainers.core.build_worker", "trainers.core.provenance"}


def is_light(name: str) -> bool:
    """Whether module ``name`` is one that a light install imports (see ``LIGHT`` and ``LIGHT_CLI``)."""
    return (name.split(".")[0] in LIGHT and name not in FOR_THE_TRAIN_EXTRA) or name in LIGHT_CLI


def heavy_module_level_imports(modules: dict[str, Module], installed: set[str]) -> list[str]:
    """``module:line: name`` for each import that importing a light module runs and that ``installed`` (the
    top-level modules of the base requirements), the standard library and the light modules themselves do not
    provide (so the check holds for everything they import in turn); a builder's test module may also import
    pytest (the dev extra)."""
    own = {name.split(".")[0] for name in modules}
    problems = []
    for name, module in sorted(modules.items()):
        if not is_light(name):
            continue
        for line, imported in module_level_imports(name, module):
            top = imported.split(".")[0]
            ok = (imported in modules and is_light(imported) if top in own else
                  top in sys.stdlib_module_names or top in installed or (name.endswith("_test") and top == "pytest"))
            if not ok:
                problems.append(f"{name}:{line}: {imported}")
    return problems


def test_the_base_requirements_pull_no_pytorch_and_the_extras_add_it():
    base = with_dependencies(base_requirements())
    assert not base & HEAVY, sorted(base & HEAVY)
    everything, dev = requirements()
    assert HEAVY <= {name.lower() for name in everything} and "pytest" in dev


def test_importing_the_light_packages_imports_nothing_beyond_the_base_install():
    installed = provided_modules(with_dependencies(base_requirements()))
    assert heavy_module_level_imports(modules_of_setup(), installed) == []
    sample = {"rlds_lang": Module("", True),
              "rlds_lang.ok": Module("import numpy\ndef f():\n    import torch\n", False),
              "rlds_lang.bad": Module("import torch\nclass A:\n    import transformers\n", False),
              "trainers.x": Module("import torch\n", False),
              "trainers.cli.main": Module("from trainers.x import y\n", False)}
    assert heavy_module_level_imports(sample, {"numpy"}) == [
        "rlds_lang.bad:1: torch", "rlds_lang.bad:3: transformers", "trainers.cli.main:1: trainers.x"]


HIDE = textwrap.dedent("""
    import importlib.abc, sys
    HEAVY = {heavy!r}

    class Hidden(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in HEAVY:
                raise ModuleNotFoundError(f"No module named {{name!r}} (hidden)", name=name)

    sys.meta_path.insert(0, Hidden())
""")


def test_without_pytorch_a_plain_environment_records_builds_and_loads_by_name(tmp_path):
    """In a child process where PyTorch, transformers, TensorBoard and the servers cannot be imported."""
    script = HIDE.format(heavy=sorted(HEAVY)) + textwrap.dedent(f"""
        import importlib, pkgutil
        import tensorflow_datasets as tfds
        import loggers, rlds_lang, transforms, rlds_lang_datasets
        from tests.test_own_environment import TextGame, raw_bytes
        from loggers import record
        Builder = rlds_lang_datasets.BUILDERS["rlds_logs"]  # under the package's name here (builders, in a checkout)
        LogsConfig = type(Builder.BUILDER_CONFIGS[0])

        for package in (rlds_lang, loggers, transforms, rlds_lang_datasets):
            for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
                if not info.name.endswith("_test") and info.name not in {sorted(FOR_THE_TRAIN_EXTRA)!r}:
                    importlib.import_module(info.name)
        record(TextGame(bytes_actions=True), raw_bytes, episodes=3, data_dir={str(tmp_path / 'logs')!r}, progress=False)
        builder = Builder(config=LogsConfig(name="text_game", logs={str(tmp_path / 'logs')!r}),
                          data_dir={str(tmp_path / 'tfds')!r})
        builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
            beam_options=tfds.core.lazy_imports.apache_beam.options.pipeline_options.PipelineOptions(
                ["--runner=DirectRunner"])))
        episodes = tfds.load("rlds_logs/text_game", data_dir={str(tmp_path / 'tfds')!r}, split="train")
        actions = sorted(tuple(s["action"].numpy() for s in e["steps"]) for e in episodes)
        print("actions", actions[0])
        second = [list(e["steps"])[1]["observation"] for e in episodes]
        print("exact float64 and int8:", all(o["score"].numpy() == 1 / 3 and o["score"].dtype.name == "float64"
                                             and o["board"].numpy().tolist() == [0, 1, 2] for o in second))
        from transforms.statistics import compute_statistics
        print("episodes", compute_statistics(episodes, win_reward=None).episodes)
        from trainers.cli.main import main
        main(["datasets", "list"])
        try:
            main(["train", "bc", "--dataset", "x"])
        except SystemExit as error:
            print("train:", error)
        print("heavy imported:", sorted(set(HEAVY) & set(sys.modules)))
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    out = run.stdout
    assert "actions (b'apple', b'\\xff\\x00\\xfe', b'fig', b'')" in out, out[-2000:]
    assert "exact float64 and int8: True" in out and "episodes 3" in out and "rlds_logs: " in out
    assert "train: rlds-lang train needs the train extra (torch, transformers not installed)" in out
    assert "heavy imported: []" in out


def test_the_light_commands_answer_without_importing_the_extras(tmp_path):
    """With every extra installed, ``rlds-lang datasets list`` and a manual-data error parse the light commands
    alone: neither PyTorch nor the servers are imported (they cost seconds before the first line)."""
    from trainers.cli.main import LIGHT_COMMANDS, build_parser

    light = build_parser(light_only=True)
    assert set(light._subparsers._group_actions[0].choices) == set(LIGHT_COMMANDS)
    script = textwrap.dedent(f"""
        import sys
        from trainers.cli.main import main
        main(["datasets", "list"])
        try:
            main(["build", "visdial", "--config", "yn", "--data-dir", {str(tmp_path / 'tfds')!r}])
        except SystemExit as error:
            print("build:", str(error).splitlines()[-1])
        print("heavy imported:", sorted(set({sorted(HEAVY)!r}) & set(sys.modules)))
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-4000:]
    assert "wordle_synthetic: " in run.stdout and "heavy imported: []" in run.stdout, run.stdout[-2000:]
    assert f"build: Try the shipped dummy data first: rlds-lang build visdial --config yn --data-dir {tmp_path / 'tfds'}" \
        " --dummy-data" in run.stdout


def test_a_command_whose_reader_leaves_ends_without_a_traceback(tmp_path):
    """``rlds-lang datasets list | head``: the pipe's reader is gone before the listing is written; the command
    stops with status 1 and says nothing on stderr (it printed a BrokenPipeError traceback)."""
    script = "from trainers.cli.main import main; main(['datasets', 'list'])"
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    child = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    child.stdout.close()  # the reader leaves at once, as `head` does after its lines
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == 1 and b"Traceback" not in stderr and b"BrokenPipe" not in stderr, stderr[-2000:]
