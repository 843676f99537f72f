"""The process ``trainers.core.build.tfds_build`` runs: ``tfds build`` of one dataset, saying only what it does.

``python -m trainers.core.build_child NAME --imports MODULES [--config CONFIG] --data_dir DIR [--manual_dir DIR]
[--beam_pipeline_options K=V,...] [--file_format FORMAT]`` takes these flags of ``tfds build`` and does what that
command does with them: imports ``MODULES`` (which register the builders), then
``tfds.builder(NAME, config=CONFIG, data_dir=DIR).download_and_prepare(...)`` with the manual folder, the Beam
pipeline options and the file format. It leaves out what the ``tfds`` command adds around the build: that command
turns every library's Python logging up to INFO (TFDS's, Beam's and EnvLogger's INFO lines: hundreds for a large
build), checks the dataset folder before it exists (a "Variant folder ... has no dataset_info.json" warning) and
prints the whole ``DatasetInfo`` when done. Here logging keeps its WARNING default, and TensorFlow's and glog's
native INFO lines are off (``trainers.core.native_logs``, unless the environment sets their levels), so a build shows TFDS's
progress bar, its line before and after (what it builds where; that it is done), and every warning and error.

``python -m trainers.core.build_child --serve --reply-fd FD --parent PID`` runs such builds one after another for
``trainers.core.build_worker`` (``serve``): the libraries are imported once, not once per build.

The builders run Beam's in-process runner unless ``--beam_pipeline_options`` names another
(``loggers.beam_runner``): no Prism download, no ``beam-temp*`` folder.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import logging
import os
import sys
import traceback
from typing import Iterator, Sequence, TextIO

from trainers.core.descriptors import descriptor_redirected
from trainers.core.native_logs import quiet_native_logs

#: the start of the warning Beam 2.77 logs on import when Google's ``apitools`` is not installed: it concerns
#: BigQuery's client library, which no build here uses, and says itself that nothing failed.
BEAM_BIGQUERY_IMPORT_WARNING = "apitools not found, and bigquery client libraries are not available"


class _BeamBigQueryImportWarning(logging.Filter):
    """Drops Beam's import-time BigQuery warning (``BEAM_BIGQUERY_IMPORT_WARNING``), and nothing else."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(BEAM_BIGQUERY_IMPORT_WARNING)


@contextlib.contextmanager
def without_beam_bigquery_import_warning() -> Iterator[None]:
    """Inside: the root logger, where Beam logs ``BEAM_BIGQUERY_IMPORT_WARNING``, leaves that warning out."""
    root, dropped = logging.getLogger(), _BeamBigQueryImportWarning()
    root.addFilter(dropped)
    try:
        yield
    finally:
        root.removeFilter(dropped)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The ``tfds build`` flags this process takes."""
    parser = argparse.ArgumentParser(prog="python -m trainers.core.build_child",
                                     description="tfds build of one dataset, without INFO logging or the "
                                                 "DatasetInfo dump (trainers.core.build.tfds_build runs it)")
    parser.add_argument("name", help="the registered dataset name")
    parser.add_argument("--imports", required=True, help="comma-separated modules that register the builders")
    parser.add_argument("--config", default=None,
                        help="the builder config: a name, or a JSON object of a config's fields (as tfds build takes "
                             "it); none for a builder without configs")
    parser.add_argument("--data_dir", required=True, help="the TFDS data folder to build into")
    parser.add_argument("--manual_dir", default=None, help="the config's manual folder")
    parser.add_argument("--beam_pipeline_options", default="",
                        help="comma-separated Beam pipeline options, as tfds build takes them")
    parser.add_argument("--file_format", default=None, help="the record file format (tfds build --file_format)")
    return parser.parse_args(argv)


def build(args: argparse.Namespace) -> str:
    """Builds ``args.name``/``args.config`` into ``args.data_dir`` (reused when built) and returns its folder."""
    with without_beam_bigquery_import_warning():
        import apache_beam as beam
    import tensorflow_datasets as tfds

    for module in filter(None, args.imports.split(",")):
        importlib.import_module(module)
    download_config = tfds.download.DownloadConfig(manual_dir=args.manual_dir)
    if args.beam_pipeline_options:
        flags = [f"--{option}" for option in args.beam_pipeline_options.split(",")]
        download_config.beam_options = beam.options.pipeline_options.PipelineOptions(flags=flags)
    kwargs = {"file_format": args.file_format} if args.file_format else {}
    config = args.config
    if config is not None and config.startswith("{"):  # tfds build's JSON form: a config the builder does not list
        config = tfds.builder_cls(args.name).builder_config_cls(**json.loads(config))
    builder = tfds.builder(args.name, config=config, data_dir=args.data_dir, **kwargs)
    builder.download_and_prepare(download_config=download_config)
    return str(builder.data_dir)


@contextlib.contextmanager
def standard_output_to_null() -> Iterator[None]:
    """Inside: this process's standard output (``sys.stdout``, and file descriptor 1 for native code) goes to
    ``/dev/null``."""
    with open(os.devnull, "w") as dropped:
        with descriptor_redirected(1, dropped.fileno(), sys.stdout), contextlib.redirect_stdout(dropped):
            yield


def serve(requests: TextIO, replies: TextIO) -> None:
    """Runs one ``build`` per JSON line of ``requests`` (``{"argv": [...], "env": {...}, "quiet": bool}``: this
    module's arguments, the environment to build in, and whether standard output is dropped) and answers each with
    one line on ``replies``: ``{"ok": true, "folder": ...}``, or ``{"ok": false, "error": ...}`` after printing the
    traceback to standard error. Native logs are turned down in each request's environment (``quiet_native_logs``)
    as ``main`` does in its own. Ends when ``requests`` closes."""
    for line in requests:
        request = json.loads(line)
        os.environ.clear()
        os.environ.update(request["env"])
        quiet_native_logs()
        try:
            with standard_output_to_null() if request["quiet"] else contextlib.nullcontext():
                reply = {"ok": True, "folder": build(parse_args(request["argv"]))}
        except (Exception, SystemExit) as error:  # reported to the caller, which raises it; the next build runs
            if not isinstance(error, SystemExit):  # argparse has printed its usage line already
                traceback.print_exc()
            sys.stderr.flush()
            reply = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def parse_serve_args(argv: Sequence[str]) -> argparse.Namespace:
    """The flags of ``--serve``: the descriptor to answer on and the process to die with."""
    parser = argparse.ArgumentParser(prog="python -m trainers.core.build_child --serve",
                                     description="build datasets for trainers.core.build_worker, one per request")
    parser.add_argument("--serve", action="store_true", required=True)
    parser.add_argument("--reply-fd", type=int, required=True, help="the inherited descriptor to answer on")
    parser.add_argument("--parent", type=int, required=True, help="the process this one dies with")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """The process's entry: quiet native logs, then ``build`` (or ``serve`` with ``--serve``)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    quiet_native_logs()
    if argv[:1] == ["--serve"]:
        from loggers.workers import die_with_parent

        args = parse_serve_args(argv)
        die_with_parent(args.parent)
        with os.fdopen(args.reply_fd, "w") as replies:
            serve(sys.stdin, replies)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # at once: the libraries' threads held a normal exit for seconds
    build(parse_args(argv))


if __name__ == "__main__":
    main()


__all__ = ["BEAM_BIGQUERY_IMPORT_WARNING", "build", "main", "parse_args", "parse_serve_args", "serve",
           "standard_output_to_null", "without_beam_bigquery_import_warning"]
