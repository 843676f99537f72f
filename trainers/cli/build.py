"""``rlds-lang build``: a dataset by name, or a folder of your own logs (``--name``), into a TFDS data folder.

``rlds-lang build NAME --config C --data-dir D`` checks the manual folder against the dataset's card
(``loggers.dataset_cards``) before it starts ``tfds build`` (``trainers.core.build.tfds_build``): a missing or
incomplete folder is one message saying what to download, from where, where to put it, and the command that tries
the shipped dummy data (``--dummy-data``); a folder of another task's logs is one line naming the builder that
fits. ``rlds-lang build LOGS --name NAME --data-dir D`` builds a folder of ``loggers.record`` logs with the generic
builder ``rlds_logs`` (features from the recorded specs), loadable as ``tfds.load("rlds_logs/NAME", data_dir=D)``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
from typing import Any

from loggers.dataset_cards import DatasetCard, manual_data_message, manual_problem
from trainers.cli.datasets import NO_CONFIG, card_of, cards, config_names


def add_build_parser(sub: Any) -> None:
    """``rlds-lang build NAME --config C --data-dir DIR`` or ``rlds-lang build LOGS --name NAME --data-dir DIR``."""
    from trainers.cli.commands import COMMAND_HELP

    build = sub.add_parser("build", help=COMMAND_HELP["build"],
                           description="Runs `tfds build NAME --imports rlds_lang_datasets --config CONFIG` "
                                       "(trainers.core.build.tfds_build) unless the dataset is built there already, "
                                       "after checking the manual folder against the dataset's card; with --name, "
                                       "builds the folder of loggers.record logs TARGET with the generic builder "
                                       "rlds_logs (load it as tfds.load('rlds_logs/NAME', data_dir=...)). Prints the "
                                       "built version's folder (what tfds.load and rlds-lang train --dataset read).")
    build.add_argument("target", metavar="NAME_OR_LOGS",
                       help="a dataset name (rlds-lang datasets list), or with --name a folder of loggers.record logs")
    build.add_argument("--name", default=None,
                       help="build the log folder TARGET as the dataset rlds_logs/NAME (features from its specs)")
    build.add_argument("--config", default=None, help="the builder config (e.g. expert, manual_dir, yn)")
    build.add_argument("--data-dir", "--data_dir", dest="data_dir", required=True, help="TFDS data folder to build into")
    where = build.add_mutually_exclusive_group()
    where.add_argument("--manual-dir", "--manual_dir", dest="manual_dir", default=None,
                       help="the folder of recorded logs or downloaded files the config reads")
    where.add_argument("--dummy-data", action="store_true",
                       help="read the dummy data the dataset ships as the manual folder (a try-out, not the dataset)")
    build.add_argument("--small", type=int, default=None,
                       help="cap every recipe at this many episodes: a smoke build, named CONFIG_smallN")
    build.add_argument("--file-format", "--file_format", dest="file_format", choices=["tfrecord", "array_record"],
                       default=None, help="how the episodes are stored: tfrecord (TFDS's default, read with tf.data) or "
                                          "array_record (read by `rlds-lang train` without TensorFlow)")
    build.set_defaults(func=cmd_build)


def _fail(message: str) -> SystemExit:
    return SystemExit(f"rlds-lang build: {message}")


def cmd_build(args: argparse.Namespace) -> str:
    """Builds a dataset by name or a folder of logs (see the module docstring); returns the built version's folder."""
    from trainers.core.build import tfds_build

    args.data_dir = os.path.expanduser(args.data_dir)  # no shell expands them on the way to tfds build
    args.manual_dir = os.path.expanduser(args.manual_dir) if args.manual_dir else args.manual_dir
    try:
        if args.name is not None:
            folder = _build_logs(args, tfds_build)
        else:
            if os.path.isdir(args.target) and args.target not in cards():
                raise _fail(f"{args.target} is a folder: to build the logs in it, name the dataset: rlds-lang build "
                            f"{args.target} --name NAME --data-dir {args.data_dir}")
            card = card_of(args.target)
            config = _config_of(card, args.config)
            manual = _manual_dir(card, config, args)
            folder = tfds_build(card.name, "" if config == NO_CONFIG else config, args.data_dir, manual_dir=manual,
                                small=args.small, file_format=args.file_format)
    except subprocess.CalledProcessError as error:
        raise _fail(f"tfds build stopped with exit status {error.returncode}; its messages are above") from None
    print(f"built -> {folder}")
    return folder


def _config_of(card: DatasetCard, config: str | None) -> str:
    configs = config_names(card)
    if config is None:
        if configs == [NO_CONFIG]:
            return NO_CONFIG
        raise _fail(f"give --config, one of {', '.join(configs)} (rlds-lang datasets show {card.name})")
    if config not in configs:
        raise _fail(f"{card.name} has no config {config!r}; its configs: {', '.join(configs)}")
    return config


def _manual_dir(card: DatasetCard, config: str, args: argparse.Namespace) -> str | None:
    """The manual folder to pass to ``tfds build``, checked against the card (a ``SystemExit`` says what is missing)."""
    name = "" if config == NO_CONFIG else config
    if card.manual is None or not card.manual.needed_by(name):
        if args.manual_dir or args.dummy_data:
            raise _fail(f"{card.name}/{config} reads no manual folder: drop --manual-dir/--dummy-data")
        return None
    if args.dummy_data:
        dummy = card.dummy_folder(name)
        if dummy is None:
            raise _fail(f"{card.name}/{config} ships no dummy data")
        return dummy
    folder = args.manual_dir or os.path.join(args.data_dir, "downloads", "manual")
    problem = manual_problem(card, name, folder)
    if problem:
        raise SystemExit(manual_data_message(card, name, problem, data_dir=args.data_dir))
    if card.manual.task:
        from loggers.log_schema import log_task

        task = log_task(folder)
        if task != card.manual.task:
            raise _fail(f"{folder}: these logs were recorded from task {task!r}, and {card.name}/{config} builds "
                        f"{card.manual.task} logs only; build them with the generic builder: rlds-lang build {folder} "
                        f"--name NAME --data-dir {args.data_dir}")
    return folder


def _build_logs(args: argparse.Namespace, tfds_build: Any) -> str:
    """``rlds-lang build LOGS --name NAME``: the generic builder ``rlds_logs`` on the log folder, as ``rlds_logs/NAME``."""
    from loggers.log_schema import LogSchemaError, read_log_schema

    if args.config or args.manual_dir or args.dummy_data or args.small:
        raise _fail("--name builds a folder of logs as it is: --config, --manual-dir, --dummy-data and --small do "
                    "not apply")
    if not re.fullmatch(r"[a-z0-9][a-z0-9_]*", args.name):
        raise _fail(f"--name {args.name!r}: use lowercase letters, digits and underscores (a TFDS config name)")
    logs = os.path.abspath(os.path.expanduser(args.target))
    if not os.path.isdir(logs):
        raise _fail(f"{args.target}: no such folder of logs")
    try:
        schema = read_log_schema(logs)
    except (LogSchemaError, FileNotFoundError) as error:
        raise _fail(str(error)) from None
    print(f"{args.target}: task {schema.task!r}; {schema.summary()}")
    folder = tfds_build("rlds_logs", args.name, args.data_dir, config_fields={"logs": logs},
                        file_format=args.file_format)
    print(f"load it with: tfds.load(\"rlds_logs/{args.name}\", data_dir={args.data_dir!r})")
    return folder


__all__ = ["add_build_parser", "cmd_build"]
