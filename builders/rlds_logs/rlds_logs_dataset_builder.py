"""rlds_logs: any folder of logs that ``loggers.record`` wrote, built into an RLDS dataset (TFDS) without writing
a builder; its features are read from the specs recorded with the logs (``loggers.log_schema``).

Each dataset is a config named by its user, pointing at a log folder::

    rlds-lang build my_logs --name echo --data-dir tfds                 # the command line's form
    tfds build rlds_logs --imports rlds_lang_datasets --data_dir tfds \\
        --config '{"name": "echo", "logs": "<the absolute path of my_logs>"}'        # TFDS's own form, the same build

and loads by name from the data folder, with no import of this package (TFDS reads the features from the built
files): ``tfds.load("rlds_logs/echo", data_dir="tfds")``. The declarative part is ``LogsConfig``, an RLDS
``DatasetConfig`` whose features ``_info`` fills in from ``read_log_schema(config.logs)``: the environment's
observation, action, reward and discount specs (text byte for byte, numbers and arrays in their dtype, float64
exactly), the episode metadata of ``loggers.record`` (``episode_id``, ``task``, ``policy``, ``policy_params``,
``seed`` and the environment's own) and any step metadata. One split, ``train``, holds every finished episode,
keyed by ``episode_id``.

The config ``dummy`` builds the shipped ``dummy_data/`` (4 episodes of a plain text ``dm_env.Environment``,
written by ``make_dummy_data.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import os

import tensorflow_datasets as tfds
from tensorflow_datasets.rlds import rlds_base

from loggers import tfds_examples as common
from loggers.beam_runner import LocalBeamRunner
from loggers.log_schema import LogSchema, examples_of_log_dir, read_log_schema
from loggers.reader import log_dirs
from rlds_lang.spec_schema import dataset_config

_OVERALL = ("Episodes of an environment recorded losslessly through EnvLogger by loggers.record, with the "
            "features its specs declare.")
#: the shipped example logs, beside this module.
DUMMY_LOGS = os.path.join(os.path.dirname(__file__), "dummy_data")


@dataclasses.dataclass
class LogsConfig(rlds_base.DatasetConfig):
    """An RLDS dataset config naming the log folder it is built from.

    Attributes:
      logs: the folder of logs (``loggers.record``'s ``data_dir``); empty for the shipped dummy logs.
    """

    logs: str = ""

    def logs_folder(self) -> str:
        """The log folder this config reads."""
        return os.path.abspath(os.path.expanduser(self.logs)) if self.logs else DUMMY_LOGS


CONFIGS = [LogsConfig(name="dummy", description="The shipped example: 4 episodes of a plain text environment.")]


class Builder(LocalBeamRunner, tfds.core.GeneratorBasedBuilder):
    """DatasetBuilder for rlds_logs (see the module docstring)."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Initial release."}
    BUILDER_CONFIGS = CONFIGS

    def _schema(self) -> LogSchema:
        if not hasattr(self, "_log_schema"):
            self._log_schema = read_log_schema(self.builder_config.logs_folder())
        return self._log_schema

    def _info(self) -> tfds.core.DatasetInfo:
        config: LogsConfig = self.builder_config
        schema = self._schema()
        metadata = self.get_metadata()  # README.md and CITATIONS.bib of this folder
        description = config.description or f"{schema.task} episodes recorded with loggers.record"
        declared = dataset_config(schema.specs, schema.step_metadata, schema.episode_metadata, name=config.name,
                                  description=description, citation=metadata.citation or "",
                                  overall_description=metadata.description or _OVERALL, homepage=common.HOMEPAGE)
        return rlds_base.build_info(declared, self, ds_metadata={"task": schema.task, "fields": schema.summary()})

    def _split_generators(self, dl_manager: tfds.download.DownloadManager):
        return {"train": self._generate_examples(log_dirs(self.builder_config.logs_folder()))}

    def _generate_examples(self, items):
        return common.beam_flat_map(items, functools.partial(examples_of_log_dir, schema=self._schema()))
