"""Shared by the TFDS builders (which are folders, not installed packages): RLDS episodes read from logs -> TFDS examples, and Beam wiring.

Every builder reads episodes that ``loggers.record`` wrote (through ``loggers.reader``), checks them with
``rlds_lang.schema.check_episode`` and turns them into examples restricted to the fields of a
``TaskSchema`` (missing optional metadata is filled from ``defaults``). Examples are keyed by
``episode_id``. ``rlds_config`` makes a builder's config class from a schema. A small build
(``RLDS_LANG_SMALL=N``) is the config ``<config>_small<N>`` with ``small_build: N`` in its metadata
(``SmallBuilds``). ``check_logs_fit`` refuses a folder of another environment's logs, naming the builder that
fits. TensorFlow / TFDS are imported lazily.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable, Iterable, Iterator, Mapping, TypeVar

from loggers.reader import read_log_dir
from rlds_lang.schema import STEP_KEYS, TaskSchema, check_episode, check_float32_exact


#: homepage of every rlds-lang dataset.
HOMEPAGE = "https://github.com/rlds-lang/rlds-lang"

ConfigT = TypeVar("ConfigT")


def rlds_config(config_cls: type[ConfigT], schema: TaskSchema, name: str, description: str,
                extra_metadata: Mapping[str, Any] | None = None, *, overall_description: str = "",
                homepage: str = HOMEPAGE, **kwargs: Any) -> ConfigT:
    """A builder's config (``config_cls``, a ``rlds_base.DatasetConfig`` subclass) with ``schema``'s features.

    ``extra_metadata`` (name -> spec, e.g. ``BRANCH_METADATA``) is added to the schema's episode metadata;
    ``kwargs`` are ``config_cls``'s own fields. Example::

        import dataclasses
        from tensorflow_datasets.rlds import rlds_base
        from rlds_lang.wordle.schema import WORDLE_SCHEMA

        @dataclasses.dataclass
        class MyConfig(rlds_base.DatasetConfig):
            size: int = 10

        config = rlds_config(MyConfig, WORDLE_SCHEMA, "small", "Ten games.", {"source": str}, size=10)
    """
    if extra_metadata:
        schema = dataclasses.replace(schema, episode_metadata={**schema.episode_metadata, **extra_metadata})
    base = schema.dataset_config(name, description, overall_description=overall_description, homepage=homepage)
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base) if f.init}
    return config_cls(**fields, **kwargs)


class SchemaMismatchError(ValueError):
    """An episode lacks a field the schema requires; the message names the episode and the field."""


class WrongBuilderError(SchemaMismatchError):
    """A folder of logs is not what a builder reads; the one-line message says which builder fits instead."""


def check_logs_fit(folder: str | os.PathLike, schema: TaskSchema, builder: str,
                   extra_metadata: Mapping[str, Any] | None = None,
                   alternatives: Mapping[str, TaskSchema] | None = None) -> None:
    """Raises ``WrongBuilderError`` unless the logs under ``folder`` were recorded from ``schema.task`` with every
    field ``schema`` (and ``extra_metadata``) needs: read from the logs' own metadata and first episode before
    anything is generated, so a folder of another environment's logs fails at once, in one line naming the
    builder that fits (one of ``alternatives``, builder -> schema, else the generic ``rlds_logs``)."""
    from loggers.log_schema import read_log_schema

    found = read_log_schema(folder)
    problem = _misfit(found, schema, extra_metadata)
    if problem is None:
        return
    fits = next((name for name, other in (alternatives or {}).items() if _misfit(found, other, None) is None), None)
    instead = (f"build them with {fits}" if fits else
               f"build them with the generic builder: rlds-lang build {os.fspath(folder)} --name NAME")
    raise WrongBuilderError(f"{os.fspath(folder)}: {problem}, and {builder} builds {schema.task} logs with those "
                            f"fields only; {instead}")


def _misfit(found: Any, schema: TaskSchema, extra_metadata: Mapping[str, Any] | None) -> str | None:
    """How a ``loggers.log_schema.LogSchema`` misses ``schema`` (its task, or the fields it lacks), or ``None``."""
    if found.task != schema.task:
        return f"these logs were recorded from task {found.task!r}"
    observation = found.specs["observation"]
    observation_fields = observation["fields"] if observation["kind"] == "dict" else {}
    missing = [f"observation/{k}" for k in ("text", *schema.observation_fields) if k not in observation_fields]
    missing += [f"step metadata {k!r}" for k in schema.step_metadata if k not in found.step_metadata]
    fields = {**schema.all_episode_metadata, **(extra_metadata or {})}
    missing += [f"episode metadata {k!r}" for k in fields if k not in found.episode_metadata]
    return f"these {found.task} logs lack {', '.join(missing)}" if missing else None


def episode_to_example(episode: Mapping[str, Any], schema: TaskSchema,
                       extra_metadata: Mapping[str, Any] | None = None,
                       defaults: Mapping[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """``(episode_id, example)`` for one RLDS episode dict as ``loggers.reader`` yields it.

    Args:
      episode: ``{"steps": [step dicts], **episode_metadata}``.
      schema: the task schema; only its fields are kept.
      extra_metadata: episode metadata fields beyond the schema's (name -> spec), e.g. a config's extras.
      defaults: values for metadata fields an episode may lack.
    """
    episode_id = episode.get("episode_id")
    check_episode(episode, episode_id)
    fields = {**schema.all_episode_metadata, **(extra_metadata or {})}
    defaults = dict(defaults or {})
    example: dict[str, Any] = {}
    for name in fields:
        if name in episode:
            example[name] = episode[name]
        elif name in defaults:
            example[name] = defaults[name]
        else:
            raise SchemaMismatchError(f"episode {episode_id}: metadata field {name!r} is missing")
    obs_keys = ("text", *schema.observation_fields)
    steps = []
    for i, step in enumerate(episode["steps"]):
        observation = step["observation"]
        if not isinstance(observation, Mapping):
            observation = {"text": observation}
        missing = [k for k in obs_keys if k not in observation]
        missing += [k for k in schema.step_metadata if k not in step]
        if missing:
            raise SchemaMismatchError(f"episode {episode_id}, step {i}: missing {missing}")
        out = {k: step[k] for k in STEP_KEYS if k != "observation"}
        out["observation"] = {k: observation[k] for k in obs_keys}
        out.update({k: step[k] for k in schema.step_metadata})
        steps.append(out)
    example["steps"] = steps
    check_float32_exact({k: v for k, v in example.items() if k != "steps"}, f"episode {episode_id}")
    for i, step in enumerate(steps):
        check_float32_exact(step, f"episode {episode_id}, step {i}")
    return str(episode_id), example


def examples_from_log_dir(path: str, schema: TaskSchema, extra_metadata: Mapping[str, Any] | None = None,
                          defaults: Mapping[str, Any] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Examples of every episode in one EnvLogger log directory; an episode the schema refuses is a
    ``SchemaMismatchError`` naming the directory too."""
    try:
        yield from examples_from_episodes(read_log_dir, path, schema, extra_metadata, defaults)
    except SchemaMismatchError as error:
        raise SchemaMismatchError(f"{path}: {error}") from error


def rlds_info(builder: Any, overall_description: str, ds_metadata: Mapping[str, Any] | None = None):
    """A builder's ``DatasetInfo`` from its RLDS config, with the ``README.md`` / ``CITATIONS.bib`` of its folder
    and, if given, the initial ``metadata.json`` content (e.g. rejection counts filled in by the build)."""
    from tensorflow_datasets.rlds import rlds_base

    metadata = builder.get_metadata()
    config = dataclasses.replace(builder.builder_config, citation=metadata.citation or "",
                                 overall_description=metadata.description or overall_description)
    ds_metadata = dict(ds_metadata or {})
    if small_limit() is not None:
        ds_metadata["small_build"] = small_limit()
    if not ds_metadata:
        return rlds_base.build_info(config, builder)
    return rlds_base.build_info(config, builder, ds_metadata=ds_metadata)


def beam_flat_map(items: Iterable[Any], fn: Callable[[Any], Iterable[Any]]):
    """``beam.Create(items) | beam.FlatMap(fn)``: a PTransform TFDS runs with the configured runner."""
    import tensorflow_datasets as tfds

    beam = tfds.core.lazy_imports.apache_beam
    return beam.Create(list(items)) | beam.FlatMap(fn)


def small_limit(default: int | None = None) -> int | None:
    """Episodes per recipe when ``RLDS_LANG_SMALL`` is set (tests, smoke builds), else ``default``."""
    value = os.environ.get("RLDS_LANG_SMALL", "").strip()
    return int(value) if value else default


def small_config_name(name: str, limit: int | None) -> str:
    """The config name of a small build: ``<name>_small<N>`` for ``RLDS_LANG_SMALL=N`` (``name`` itself otherwise),
    so a small build never lands in, nor is read as, the full build's folder."""
    return name if limit is None or name.endswith(f"_small{limit}") else f"{name}_small{limit}"


class SmallBuilds:
    """Mixin for a builder that honours ``RLDS_LANG_SMALL=N``: its config is renamed ``<config>_small<N>`` (a build
    writes ``<data_dir>/<dataset>/<config>_small<N>/<version>``, which TFDS never takes for the full build),
    its description says so, and ``rlds_info`` records ``small_build: N`` in the dataset's metadata."""

    def _create_builder_config(self, builder_config: Any, version: Any) -> Any:
        config = super()._create_builder_config(builder_config, version)  # type: ignore[misc]
        limit = small_limit()
        if config is None or limit is None or config.name == small_config_name(config.name, limit):
            return config
        note = f"Small build: at most {limit} episodes per recipe (RLDS_LANG_SMALL={limit}), not the full dataset."
        return dataclasses.replace(config, name=small_config_name(config.name, limit),
                                   description=f"{config.description} {note}".strip())


def shard_cache_dir(config_name: str) -> str | None:
    """Where generated shards are kept when ``RLDS_LANG_SHARD_CACHE`` is set (``<it>/<config_name>``), else None.

    A build with the cache set keeps every shard's logs there and reads back the shards already complete, so an
    interrupted build of a large config (``wordle_synthetic/lmrl_gym``: 1,100 shards) resumes where it stopped.
    """
    value = os.environ.get("RLDS_LANG_SHARD_CACHE", "").strip()
    return os.path.join(value, config_name) if value else None


def examples_from_episodes(episodes_fn: Callable[[Any], Iterable[Mapping[str, Any]]], item: Any, schema: TaskSchema,
                           extra_metadata: Mapping[str, Any] | None = None,
                           defaults: Mapping[str, Any] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Examples of the episodes ``episodes_fn(item)`` yields (use with ``functools.partial`` in Beam)."""
    for episode in episodes_fn(item):
        yield episode_to_example(episode, schema, extra_metadata, defaults)


__all__ = ["HOMEPAGE", "SchemaMismatchError", "SmallBuilds", "WrongBuilderError", "beam_flat_map", "check_logs_fit",
           "episode_to_example", "examples_from_episodes", "examples_from_log_dir", "rlds_config", "rlds_info",
           "shard_cache_dir", "small_config_name", "small_limit"]
