"""Building datasets from the command line's side: ``tfds build`` of a builder by name, and finding the result.

The CLI's demo, the results script (``trainers.experiments.results``) and the benchmarks build datasets by name as a
user would with ``tfds build NAME --imports rlds_lang_datasets``, in a child process of the running interpreter
(``trainers.core.build_child``: the same build without the ``tfds`` command's INFO logging and ``DatasetInfo``
dump; one child serves a program's builds in turn, ``trainers.core.build_worker``, so TensorFlow is imported once);
the build shows its progress and warnings, and ``tfds_build`` says how many episodes went where.

Example::

    from trainers.core.build import tfds_build

    folder = tfds_build("wordle_synthetic", "branch", "/tmp/tfds", small=50)   # .../branch_small50/1.1.0
    folder = tfds_build("wordle_synthetic", "branch", "/tmp/tfds_ar", small=50, file_format="array_record")
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Mapping

from trainers.core.build_worker import run_build
from transforms.array_record import file_format as file_format_of

#: the module whose import registers every builder with TFDS (``builders/``, installed as ``rlds_lang_datasets``).
DATASETS_MODULE = "rlds_lang_datasets"
#: the file formats ``tfds_build`` writes (None: TFDS's default, ``tfrecord``).
FILE_FORMATS = (None, "tfrecord", "array_record")


def built_dataset_dir(data_dir: str | os.PathLike, name: str = "", config: str = "") -> str | None:
    """The built version folder (with ``dataset_info.json``) of ``name/config`` under ``data_dir``, if one is.

    Without ``name``, the one dataset under ``data_dir``; several there raise ``FileNotFoundError``.
    """
    root = Path(data_dir)
    if name:
        root = root / name / config if config else root / name
    found = sorted(p.parent for p in root.rglob("dataset_info.json")) if root.exists() else []
    if len(found) > 1:
        raise FileNotFoundError(f"{root}: several built datasets, name one: {[str(p) for p in found]}")
    return str(found[0]) if found else None


class IncompleteBuildError(RuntimeError):
    """A built dataset holds fewer (or more) episodes in a split than its recipes generate."""


def split_sizes(folder: str | os.PathLike) -> dict[str, int]:
    """``{split: episodes}`` as a built dataset's ``dataset_info.json`` records them (the sum of its shards)."""
    info = json.loads((Path(folder) / "dataset_info.json").read_text())
    return {split["name"]: sum(int(n) for n in split.get("shardLengths", [])) for split in info.get("splits", [])}


def check_split_sizes(folder: str | os.PathLike, expected: Mapping[str, int]) -> None:
    """Raises ``IncompleteBuildError`` naming the folder and each split whose size is not the expected one.

    Found on a real build: Beam's multi-process DirectRunner finished a 1,000,000-game build with 966,786 games
    in ``train`` and no error (32 shards' episodes were missing, 3 more were cut short), so sizes are checked
    rather than trusted.
    """
    found = split_sizes(folder)
    wrong = {split: (found.get(split, 0), count) for split, count in expected.items() if found.get(split, 0) != count}
    if wrong:
        details = "; ".join(f"split {split!r} holds {got:,} episodes, its recipes generate {want:,}"
                            for split, (got, want) in wrong.items())
        raise IncompleteBuildError(f"{folder}: {details}. Remove the folder and build again (with a shard cache "
                                   "the shards already recorded are read back, not played again)")


def tfds_build(name: str, config: str, data_dir: str | os.PathLike, manual_dir: str | os.PathLike | None = None,
               small: int | None = None, quiet: bool = False,
               beam_options: str = "runner=FnApiRunner,direct_num_workers=1",
               shard_cache: str | os.PathLike | None = None, expected: Mapping[str, int] | None = None,
               file_format: str | None = None, config_fields: Mapping[str, Any] | None = None) -> str:
    """Runs ``tfds build <name> --imports rlds_lang_datasets --config <config>`` into ``data_dir`` (unless already
    built) and returns the built version's folder. The builder is found by name wherever the package is installed
    (the child process needs ``rlds_lang_datasets`` importable: installed, or the checkout on ``PYTHONPATH``).
    ``small`` caps every recipe (``RLDS_LANG_SMALL``, also read from the environment): the build is then the config
    ``<config>_small<N>`` (``loggers.tfds_examples.small_config_name``), never the full build's folder;
    ``shard_cache`` keeps the generated shards there (``RLDS_LANG_SHARD_CACHE``) so that an interrupted build
    resumes. ``config`` may be empty for a builder without configs. ``config_fields`` makes a config that the
    builder does not list, named ``config`` with these fields (TFDS's ``--config`` JSON form; how
    ``rlds_logs/<name>`` is built from a log folder).

    ``beam_options`` go to ``--beam_pipeline_options``: Beam's in-process ``FnApiRunner`` by default (Beam 2.77's
    ``DirectRunner`` first tries to download its Prism runner); e.g. ``runner=FnApiRunner,direct_num_workers=2,
    direct_running_mode=multi_processing`` for a parallel local build, or a Dataflow/Flink/Spark runner.

    ``expected`` (split -> episodes) is checked against what the build wrote, and against a dataset found
    already built (``check_split_sizes``): a Beam run that lost shards fails here instead of passing on.

    ``file_format`` goes to ``--file_format``: ``tfrecord`` (TFDS's default, read by ``tf.data``) or
    ``array_record`` (read by ``tfds.data_source`` without TensorFlow: ``trainers.core.data``). A dataset found
    already built in another format than the one asked for is a ``ValueError`` naming both.
    """
    from loggers.tfds_examples import small_config_name, small_limit

    if file_format not in FILE_FORMATS:
        raise ValueError(f"file_format must be one of {', '.join(str(f) for f in FILE_FORMATS)}; got {file_format!r}")
    if small is None:
        small = small_limit()
    built_config = small_config_name(config, small) if config and config_fields is None else config
    existing = built_dataset_dir(data_dir, name, built_config)
    if existing:
        stored = file_format_of(existing)
        if file_format is not None and stored != file_format:
            raise ValueError(f"{existing} is built as {stored}, not {file_format}: build into another --data_dir, "
                             "or remove the folder first")
        check_split_sizes(existing, expected or {})
        return existing
    command = [name, "--imports", DATASETS_MODULE, "--data_dir", str(data_dir)]
    if config_fields is not None:
        command += ["--config", json.dumps({"name": config, **config_fields})]
    elif config:
        command += ["--config", config]
    if beam_options:
        command.append(f"--beam_pipeline_options={beam_options}")
    if manual_dir is not None:
        command += ["--manual_dir", str(manual_dir)]
    if file_format is not None:
        command += ["--file_format", file_format]
    env = dict(os.environ)
    if small is not None:
        env["RLDS_LANG_SMALL"] = str(small)
    if shard_cache is not None:
        env["RLDS_LANG_SHARD_CACHE"] = str(shard_cache)
    started = time.perf_counter()
    run_build(command, env, quiet=quiet)
    folder = built_dataset_dir(data_dir, name, built_config)
    if folder is None:
        raise FileNotFoundError(f"tfds build {name}/{built_config} finished but wrote no dataset under {data_dir}")
    check_split_sizes(folder, expected or {})
    if not quiet:
        counts = ", ".join(f"{split} {n:,} episodes" for split, n in split_sizes(folder).items())
        print(f"built {name}/{built_config} in {time.perf_counter() - started:.1f} s: {counts} -> {folder}")
    return folder


__all__ = ["DATASETS_MODULE", "FILE_FORMATS", "IncompleteBuildError", "built_dataset_dir", "check_split_sizes", "split_sizes", "tfds_build"]
