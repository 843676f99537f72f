"""The Beam runner of the dataset builders: Beam's in-process ``FnApiRunner`` unless the caller chose a runner.

Every builder of ``builders/`` generates its examples as a Beam ``PTransform``, which TFDS runs in a
``beam.Pipeline`` built from ``DownloadConfig.beam_runner`` / ``beam_options``. When a build names neither (plain
``tfds build NAME --imports rlds_lang_datasets``, ``tfds.load(..., download=True)``,
``builder.download_and_prepare()``), TFDS 4.9 prints its "Some Beam datasets take weeks to generate" banner and
builds ``PipelineOptions()`` from ``sys.argv`` (Beam then warns once for every argument of the ``tfds build``
command it does not know), and Beam's default ``DirectRunner`` (2.77) first tries to download its Prism runner from
GitHub: offline, a failed download and an empty ``beam-temp*`` folder left in the temporary folder before it falls
back to ``FnApiRunner``. ``LocalBeamRunner`` gives such a build explicit options naming ``FnApiRunner``, the
runner the ``DirectRunner`` ends up using for these batch pipelines, so none of that happens: the build is the same,
offline and quiet.

A build that names a runner (``--beam_pipeline_options=runner=DataflowRunner,...`` or a ``beam_runner``) keeps it;
options without a runner (``direct_num_workers=2,direct_running_mode=multi_processing``) get ``FnApiRunner``,
which honours them.

Example::

    import tensorflow_datasets as tfds
    from loggers.beam_runner import LocalBeamRunner

    class Builder(LocalBeamRunner, tfds.core.GeneratorBasedBuilder):
        ...
"""

from __future__ import annotations

import copy
from typing import Any

#: the runner a build gets when it names none: Beam's in-process portable runner (``direct_num_workers`` and
#: ``direct_running_mode`` apply to it as to the ``DirectRunner``).
LOCAL_RUNNER = "FnApiRunner"


def with_local_runner(download_config: Any = None) -> Any:
    """``download_config`` (a ``tfds.download.DownloadConfig``, or None for the default one) with
    ``LOCAL_RUNNER`` as its Beam runner when it names no runner; the given config and options are not changed."""
    import tensorflow_datasets as tfds

    config = download_config if download_config is not None else tfds.download.DownloadConfig()
    if config.beam_runner is not None:
        return config
    pipeline_options = tfds.core.lazy_imports.apache_beam.options.pipeline_options
    options = config.beam_options
    if options is None:
        # flags=[]: options of their own, not parsed from sys.argv (the command line of `tfds build`)
        options = pipeline_options.PipelineOptions(flags=[], runner=LOCAL_RUNNER)
    elif options.view_as(pipeline_options.StandardOptions).runner is None:
        options = copy.deepcopy(options)
        options.view_as(pipeline_options.StandardOptions).runner = LOCAL_RUNNER
    else:
        return config
    config = copy.copy(config)
    config.beam_options = options
    return config


class LocalBeamRunner:
    """Mixin of a TFDS builder (before ``tfds.core.GeneratorBasedBuilder`` in its bases): ``download_and_prepare``
    runs its Beam pipeline with ``with_local_runner``'s config."""

    def download_and_prepare(self, *, download_config: Any = None, **kwargs: Any) -> None:
        """``tfds.core.DatasetBuilder.download_and_prepare`` with ``with_local_runner(download_config)``."""
        super().download_and_prepare(download_config=with_local_runner(download_config), **kwargs)  # type: ignore[misc]


__all__ = ["LOCAL_RUNNER", "LocalBeamRunner", "with_local_runner"]
