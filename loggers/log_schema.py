"""The schema of a folder of logs that ``loggers.record`` wrote, read from the logs themselves, and its episodes as
TFDS examples: what the generic builder (``rlds_lang_datasets.rlds_logs``, ``rlds-lang build DIR --name NAME``)
builds any environment's logs with.

``read_log_schema(folder)`` reads the environment's specs from the first log directory's dataset-level metadata
(``rlds_lang.spec_schema.SPECS_KEY``, or EnvLogger's own ``environment_specs`` for logs without it), checks that
every log directory under the folder was recorded with the same specs, and takes the episode and step metadata
fields from the first finished episode (the common ones, ``episode_id``, ``task``, ``policy``, ``policy_params``
and ``seed``, and whatever the environment added). ``examples_of_log_dir`` turns each episode of one log directory
into a TFDS example keyed by ``episode_id``, every value checked against its field (``spec_schema.conform``): a
value that does not fit is an error naming the log directory, episode, step and field.

Example::

    from loggers.log_schema import read_log_schema

    schema = read_log_schema("my_logs")
    print(schema.task, schema.summary())
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Iterator, Mapping

from loggers.reader import dataset_metadata, log_dirs, read_log_dir
from rlds_lang.schema import COMMON_EPISODE_METADATA, STEP_KEYS, check_episode
from rlds_lang.spec_schema import (SPECS_KEY, Field, conform, describe_envlogger_specs, field_of_value, from_json,
                                   summary)


class LogSchemaError(ValueError):
    """A log folder that cannot be built as one dataset (no logs, mixed specs, no finished episode)."""


@dataclasses.dataclass(frozen=True)
class LogSchema:
    """The fields of a log folder's episodes.

    Attributes:
      task: the task recorded in the logs' metadata.
      specs: ``{observation, action, reward, discount: field}`` (``rlds_lang.spec_schema``).
      step_metadata: per-step metadata fields beside the RLDS step fields.
      episode_metadata: episode metadata fields.
    """

    task: str
    specs: Mapping[str, Field]
    step_metadata: Mapping[str, Field]
    episode_metadata: Mapping[str, Field]

    def summary(self) -> str:
        """The fields in one line, e.g. ``observation text, action text, reward float64, ...``."""
        parts = [f"{name} {summary(field)}" for name, field in self.specs.items()]
        parts += [f"step {name} {summary(field)}" for name, field in self.step_metadata.items()]
        parts += [f"episode {name} {summary(field)}" for name, field in self.episode_metadata.items()]
        return ", ".join(parts)


def _specs_of(log_dir: str) -> tuple[str, dict[str, Field]]:
    """``(task, specs description)`` of one log directory's dataset-level metadata."""
    meta = dataset_metadata(log_dir)
    task = meta.get("task", "")
    task = task.decode() if isinstance(task, bytes) else str(task)
    if SPECS_KEY in meta:
        return task, from_json(meta[SPECS_KEY])
    environment_specs = meta.get("environment_specs")
    if not environment_specs:
        raise LogSchemaError(f"{log_dir}: its metadata holds no environment specs; it was not written by "
                             "envlogger/loggers.record")
    from envlogger.converters import spec_codec

    return task, describe_envlogger_specs(spec_codec.decode_environment_specs(environment_specs))


def _first_episode(dirs: list[str]) -> dict[str, Any] | None:
    for log_dir in dirs:
        first = next(iter(read_log_dir(log_dir)), None)
        if first is not None:
            return first
    return None


def _task(recorded: str, first: Mapping[str, Any] | None) -> str:
    """The task of the dataset-level metadata, else of the first episode's (logs written by another recorder, e.g.
    the browser tool's exports, keep it per episode only)."""
    if recorded or first is None:
        return recorded
    task = first.get("task", "")
    return task.decode() if isinstance(task, bytes) else str(task)


def log_task(folder: str | os.PathLike) -> str:
    """The task recorded in the logs under ``folder`` (``""`` when neither their metadata nor their first episode
    names one)."""
    dirs = log_dirs(folder)
    if not dirs:
        raise LogSchemaError(f"{os.fspath(folder)}: holds no EnvLogger log directory (a folder with metadata.riegeli)")
    recorded = _specs_of(dirs[0])[0]
    return _task(recorded, None if recorded else _first_episode(dirs))


def read_log_schema(folder: str | os.PathLike) -> LogSchema:
    """The ``LogSchema`` of every log directory under ``folder`` (see the module docstring)."""
    dirs = log_dirs(folder)
    if not dirs:
        raise LogSchemaError(f"{os.fspath(folder)}: holds no EnvLogger log directory (a folder with metadata.riegeli)"
                             "; record one with loggers.record(env, policy, episodes, data_dir)")
    task, specs = _specs_of(dirs[0])
    for other in dirs[1:]:
        other_task, other_specs = _specs_of(other)
        if other_specs != specs or other_task != task:
            raise LogSchemaError(f"{other}: recorded from task {other_task!r} with specs {other_specs}, but {dirs[0]} "
                                 f"from task {task!r} with {specs}: build each environment's logs as its own dataset")
    first = _first_episode(dirs)
    if first is None:
        raise LogSchemaError(f"{os.fspath(folder)}: holds no finished episode")
    names = [k for k in COMMON_EPISODE_METADATA if k in first] + [k for k in first if k not in COMMON_EPISODE_METADATA]
    episode_metadata = {k: field_of_value(first[k], f"episode metadata {k}") for k in names if k != "steps"}
    step = first["steps"][0]
    step_metadata = {k: field_of_value(v, f"step metadata {k}") for k, v in step.items() if k not in STEP_KEYS}
    return LogSchema(_task(task, first), specs, step_metadata, episode_metadata)


def episode_example(episode: Mapping[str, Any], schema: LogSchema, where: str) -> tuple[str, dict[str, Any]]:
    """``(episode_id, example)`` of one RLDS episode as ``loggers.reader`` yields it, checked field by field."""
    episode_id = str(episode.get("episode_id", "?"))
    where = f"{where}: episode {episode_id}"
    check_episode(episode, episode_id)
    missing = sorted(set(schema.episode_metadata) - set(episode))
    if missing:
        raise LogSchemaError(f"{where}: episode metadata {missing} missing (the first episode has them)")
    example: dict[str, Any] = {k: conform(f, episode[k], f"{where}, metadata {k}")
                               for k, f in schema.episode_metadata.items()}
    steps = []
    for i, step in enumerate(episode["steps"]):
        at = f"{where}, step {i}"
        out = {k: step[k] for k in ("is_first", "is_last", "is_terminal")}
        out.update({k: conform(schema.specs[k], step[k], f"{at}, {k}") for k in ("observation", "action", "reward",
                                                                                 "discount")})
        for k, f in schema.step_metadata.items():
            if k not in step:
                raise LogSchemaError(f"{at}: step metadata {k!r} missing (the first step has it)")
            out[k] = conform(f, step[k], f"{at}, {k}")
        steps.append(out)
    example["steps"] = steps
    return episode_id, example


def examples_of_log_dir(log_dir: str, schema: LogSchema) -> Iterator[tuple[str, dict[str, Any]]]:
    """The TFDS examples of every finished episode of one log directory."""
    for episode in read_log_dir(log_dir):
        yield episode_example(episode, schema, log_dir)


__all__ = ["LogSchema", "LogSchemaError", "episode_example", "examples_of_log_dir", "log_task", "read_log_schema"]
