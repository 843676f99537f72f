"""The datasets by name: importing ``rlds_lang_datasets`` registers every builder with TFDS, ``tfds build NAME
--imports rlds_lang_datasets`` builds from any directory and ``tfds.load(NAME)`` reads it back; the wheel installs
``builders/`` under that name with every data file of its folders."""

from __future__ import annotations

import configparser
import glob
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import tensorflow_datasets as tfds

import rlds_lang_datasets

REPO = Path(__file__).resolve().parents[1]
BUILDERS = REPO / "builders"
#: every dataset folder (``<name>/<name>_dataset_builder.py``).
FOLDERS = sorted(p.parent.name for p in BUILDERS.glob("*/*_dataset_builder.py") if p.parent.name in p.stem)


def test_every_builder_folder_is_registered_by_name():
    assert len(FOLDERS) >= 6
    assert sorted(rlds_lang_datasets.BUILDERS) == FOLDERS
    registered = set(tfds.list_builders(with_community_datasets=False))
    assert set(FOLDERS) <= registered, f"not registered: {sorted(set(FOLDERS) - registered)}"


def test_the_source_tree_name_is_the_builders_package():
    import builders

    assert rlds_lang_datasets is builders
    assert tfds.builder_cls("wordle_synthetic").__module__ == "builders.wordle_synthetic.wordle_synthetic_dataset_builder"


def test_builder_by_name_from_another_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    builder = tfds.builder("reddit_comments/toxicity", data_dir=tmp_path / "tfds")
    assert builder.builder_config.name == "toxicity"
    assert builder.info.full_name.startswith("reddit_comments/toxicity/")
    assert "reddit" in builder.info.citation.lower()  # CITATIONS.bib, read from the builder's folder


def test_tfds_build_by_name_then_load_by_name(tmp_path):
    """``tfds build wordle_synthetic --imports rlds_lang_datasets`` (through ``tfds_build``) and ``tfds.load`` by
    name, in a child process standing in an empty directory: nothing is found relative to the working directory."""
    script = textwrap.dedent(f"""
        import tensorflow_datasets as tfds
        from trainers.core.build import tfds_build
        folder = tfds_build("wordle_synthetic", "expert", {str(tmp_path / 'tfds')!r}, small=3, quiet=True)
        print("built", folder)
        import rlds_lang_datasets
        episodes = tfds.load("wordle_synthetic/expert_small3", data_dir={str(tmp_path / 'tfds')!r}, split="train")
        print("episodes", sum(1 for _ in episodes))
    """)
    work = tmp_path / "empty"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", script], cwd=work, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"built {tmp_path / 'tfds' / 'wordle_synthetic' / 'expert_small3'}" in run.stdout  # never the full build's
    assert "episodes 3" in run.stdout
    assert not any(work.iterdir()), "the build wrote into the working directory"


def _setup_script():
    spec = importlib.util.spec_from_file_location("rlds_lang_setup_script", REPO / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_wheel_installs_builders_as_rlds_lang_datasets():
    packages, package_dir = _setup_script().packages()
    subpackages = sorted(p.parent.relative_to(REPO).as_posix() for p in BUILDERS.rglob("__init__.py"))
    expected = {"rlds_lang_datasets" + folder[len("builders"):].replace("/", "."): folder for folder in subpackages}
    assert package_dir == expected
    assert set(expected) <= set(packages)
    assert not [p for p in packages if p == "builders" or p.startswith("builders.")], "a top-level builders package"
    for name in ("rlds_lang", "loggers", "transforms", "trainers", "creator_web", "trainers.algorithms"):
        assert name in packages


def test_the_wheel_ships_every_data_file_of_the_builders():
    """Every file of a dataset folder that is not Python (README, citations, tags, dummy data) matches one of
    ``setup.cfg``'s package-data patterns of ``rlds_lang_datasets``."""
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    patterns = [p.strip() for p in config["options.package_data"]["rlds_lang_datasets"].split(",")]
    shipped = {path for pattern in patterns for path in glob.glob(pattern, root_dir=BUILDERS, recursive=True)
               if (BUILDERS / path).is_file()}
    tracked = subprocess.run(["git", "ls-files", "builders"], cwd=REPO, capture_output=True, text=True, check=True)
    data = {Path(line).relative_to("builders").as_posix() for line in tracked.stdout.splitlines()
            if not line.endswith(".py") and "/" in Path(line).relative_to("builders").as_posix()}
    assert any("dummy_data" in path for path in data)
    assert data - shipped == set(), f"not shipped in the wheel: {sorted(data - shipped)[:10]}"
