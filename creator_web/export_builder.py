"""Building an export of the browser tool into a TFDS dataset that keeps everything the person did.

An export (``exports/<name>/`` of the data folder, written by the Review page) holds EnvLogger logs of one task's
episodes. ``creator_web_export`` is a TFDS builder with one config per task (``wordle``, ``reddit``,
``visdial``): its features are the task builder's own (``WORDLE_SCHEMA``, ``REDDIT_SCHEMA``, ``VISDIAL_SCHEMA``:
the same observation, step and episode fields as ``builders/wordle_synthetic``, ``builders/reddit_comments`` and
``builders/visdial``) plus what the browser records beside them (``HUMAN_EPISODE_METADATA``: ``annotator``,
``session_id``, ``task_config``, ``annotations``; ``HUMAN_STEP_METADATA``: ``client_ms``). An episode recorded
elsewhere (not by a person in the browser) lacks these; it gets empty values (``""``, ``"[]"``, 0), never dropped.
An episode of another task than the config's stops the build with an error naming it.

Build and load::

    python -m creator_web.export_builder DATA/exports/NAME --out DIR
    ds = tfds.load("creator_web_export/reddit", data_dir=DIR, split="train")   # after importing this module

``build_export`` does the same from Python and returns the prepared builder.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Any, Iterator, Sequence

import numpy as np
import tensorflow_datasets as tfds
from tensorflow_datasets.rlds import rlds_base

from loggers import tfds_examples as common
from loggers.reader import log_dirs, read_log_dir
from rlds_lang.reddit.schema import REDDIT_SCHEMA
from rlds_lang.schema import TaskSchema
from rlds_lang.visdial.schema import VISDIAL_SCHEMA
from rlds_lang.wordle.schema import WORDLE_SCHEMA

#: episode metadata the browser records beside the task's own, and the value of an episode recorded elsewhere.
HUMAN_EPISODE_METADATA = {"annotator": str, "session_id": str, "task_config": str, "annotations": str}
HUMAN_EPISODE_DEFAULTS = {"annotator": "", "session_id": "", "task_config": "", "annotations": "[]"}
#: step metadata the browser records (ms from showing the previous observation to the action that led here).
HUMAN_STEP_METADATA = {"client_ms": np.int64}
TASK_SCHEMAS: dict[str, TaskSchema] = {"wordle": WORDLE_SCHEMA, "reddit": REDDIT_SCHEMA, "visdial": VISDIAL_SCHEMA}
_OVERALL = ("Episodes recorded by people in the rlds-lang browser tool (creator_web) and exported from its Review "
            "page: the task's own RLDS features plus the annotator, session, task configuration, annotations "
            "and per-step client time.")


class ExportTaskError(ValueError):
    """An export holds an episode of another task than the config's; the message names the episode."""


def human_schema(task: str) -> TaskSchema:
    """The task's schema with the browser's step metadata added (episode extras go in as ``extra_metadata``)."""
    schema = TASK_SCHEMAS[task]
    return dataclasses.replace(schema, step_metadata={**schema.step_metadata, **HUMAN_STEP_METADATA})


@dataclasses.dataclass
class ExportConfig(rlds_base.DatasetConfig):
    """An RLDS config of one task's export."""

    task: str = "wordle"


CONFIGS = [common.rlds_config(ExportConfig, human_schema(task), task,
                              f"{task} episodes recorded in the browser, with annotations.",
                              HUMAN_EPISODE_METADATA, overall_description=_OVERALL, task=task)
           for task in TASK_SCHEMAS]


def export_examples(folder: str, task: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(key, example)`` of every episode in the export ``folder`` (``ExportTaskError`` for another task's)."""
    schema = human_schema(task)
    for log_dir in log_dirs(folder):
        for episode in read_log_dir(log_dir):
            found = str(episode.get("task", ""))
            if found != task:
                raise ExportTaskError(f"{os.path.relpath(log_dir, folder)}: episode {episode.get('episode_id')!r} "
                                      f"is a {found!r} episode, not {task!r} (one task per export)")
            steps = [{"client_ms": 0, **s} for s in episode["steps"]]  # 0 for a step not played in the browser
            yield common.episode_to_example({**episode, "steps": steps}, schema, HUMAN_EPISODE_METADATA,
                                            HUMAN_EPISODE_DEFAULTS)


class Builder(tfds.core.GeneratorBasedBuilder):
    """``creator_web_export``: an export folder (the manual folder) as a TFDS dataset (see the module docstring)."""

    name = "creator_web_export"
    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Initial release."}
    BUILDER_CONFIGS = CONFIGS
    MANUAL_DOWNLOAD_INSTRUCTIONS = "Give an export folder of the browser tool (exports/<name>) as --manual_dir."

    def _info(self) -> tfds.core.DatasetInfo:
        config = dataclasses.replace(self.builder_config, overall_description=_OVERALL)
        return rlds_base.build_info(config, self)

    def _split_generators(self, dl_manager: tfds.download.DownloadManager):
        return {"train": self._generate_examples(os.fspath(dl_manager.manual_dir))}

    def _generate_examples(self, folder: str):
        yield from export_examples(folder, self.builder_config.task)


def export_task(folder: str | os.PathLike) -> str:
    """The task of the export's episodes (its first episode's ``task``); ``ValueError`` for an empty export or a
    task without a config."""
    for log_dir in log_dirs(folder):
        for episode in read_log_dir(log_dir):
            task = str(episode.get("task", ""))
            if task not in TASK_SCHEMAS:
                raise ValueError(f"{os.fspath(folder)}: task {task!r} has no export config; known: {sorted(TASK_SCHEMAS)}")
            return task
    raise ValueError(f"{os.fspath(folder)}: the export holds no finished episode")


def build_export(folder: str | os.PathLike, out_dir: str | os.PathLike, task: str | None = None) -> Builder:
    """Builds the export ``folder`` into ``out_dir`` (``creator_web_export/<task>``); returns the prepared builder."""
    task = task or export_task(folder)
    builder = Builder(config=task, data_dir=os.fspath(out_dir))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=os.fspath(folder)))
    return builder


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m creator_web.export_builder EXPORT --out DIR [--task T]``: builds an export; prints its folder."""
    parser = argparse.ArgumentParser(description="Builds a creator_web export into a TFDS dataset.")
    parser.add_argument("export", help="an export folder of the browser tool (DATA/exports/<name>)")
    parser.add_argument("--out", required=True, help="TFDS data_dir to build into")
    parser.add_argument("--task", choices=sorted(TASK_SCHEMAS), help="the export's task (default: its episodes')")
    args = parser.parse_args(argv)
    builder = build_export(args.export, args.out, args.task)
    print(builder.data_dir)


__all__ = ["Builder", "CONFIGS", "ExportConfig", "ExportTaskError", "HUMAN_EPISODE_DEFAULTS", "HUMAN_EPISODE_METADATA",
           "HUMAN_STEP_METADATA", "TASK_SCHEMAS", "build_export", "export_examples", "export_task", "human_schema",
           "main"]


if __name__ == "__main__":
    main()
