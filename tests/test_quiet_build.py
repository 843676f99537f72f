"""Builds say what they do and nothing else, offline: no Beam banner, no "Unparseable argument" warnings, no Prism
download (no connection or name lookup beyond this machine), no ``DatasetInfo`` dump, no INFO lines, no
``beam-temp*`` folder left behind, and real warnings still show.

Two end-to-end builds in subprocesses (``tfds_build``, and the plain ``tfds build NAME --imports
rlds_lang_datasets``; the slow tier) watch the network with an audit hook that a ``sitecustomize`` module installs
in every Python process of the build; their fast twins check each cause alone: the builders' default runner
(``loggers.beam_runner``), the options it makes without reading ``sys.argv``, the child process ``tfds_build`` runs
and its flags, and the one Beam import warning the child leaves out.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import trainers.core.build
from builders import BUILDERS
from loggers.beam_runner import LOCAL_RUNNER, LocalBeamRunner, with_local_runner
from trainers.core import build_child
from trainers.core.native_logs import NATIVE_LOG_LEVELS, quiet_native_logs

#: what no build may print: TFDS's Beam banner, Beam's sys.argv parsing, Beam's Prism runner and its download,
#: TFDS's command line's DatasetInfo dump, Beam's import warning about BigQuery.
NOISE = ("Some Beam datasets take weeks", "Unparseable argument", "Discarding unparseable args", "rism",
         "Downloading prism", "tfds.core.DatasetInfo(", "apitools not found")

#: installed in every Python process of a build (``sitecustomize``): appends each name lookup or connection to a
#: host that is not this machine to the file ``$RLDS_LANG_NETWORK_LOG``.
NETWORK_HOOK = textwrap.dedent('''
    import ipaddress, os, sys

    def _loopback(host):
        if isinstance(host, bytes):
            host = host.decode()
        if not isinstance(host, str) or host in ("", "localhost"):
            return True
        try:
            return ipaddress.ip_address(host.split("%")[0]).is_loopback
        except ValueError:
            return False

    def _watch(event, args):
        if event == "socket.getaddrinfo":
            host = args[0]
        elif event == "socket.connect" and isinstance(args[1], tuple):
            host = args[1][0]
        else:
            return
        if not _loopback(host):
            with open(os.environ["RLDS_LANG_NETWORK_LOG"], "a") as log:
                log.write(f"{event} {host!r} in {sys.argv}\\n")

    if os.environ.get("RLDS_LANG_NETWORK_LOG"):
        sys.addaudithook(_watch)
''')

#: imported by the build (``--imports``): one warning through absl and one through Python's logging, which the
#: build's output must show.
WARNING_PROBE = textwrap.dedent('''
    import logging
    from absl import logging as absl_logging

    absl_logging.warning("probe warning through absl")
    logging.getLogger("probe").warning("probe warning through logging")
''')


def _watched_env(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """An environment whose Python processes run ``NETWORK_HOOK``, import ``warning_probe`` when asked, and make
    temporary folders in a folder of their own; returns it, the network log and that temporary folder."""
    hooks, temp = tmp_path / "hooks", tmp_path / "temp"
    hooks.mkdir()
    temp.mkdir()
    (hooks / "sitecustomize.py").write_text(NETWORK_HOOK)
    (hooks / "warning_probe.py").write_text(WARNING_PROBE)
    log = tmp_path / "network.log"
    env = dict(os.environ, RLDS_LANG_NETWORK_LOG=str(log), TMPDIR=str(temp), OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(hooks), os.environ.get("PYTHONPATH", "")])))
    for name in NATIVE_LOG_LEVELS:
        env.pop(name, None)  # the build sets them, not the test's shell
    return env, log, temp


def _assert_quiet_offline_and_tidy(output: str, log: Path, temp: Path) -> None:
    """No line of ``NOISE``, no network attempt in ``log``, no ``beam-temp*`` in ``temp``, the probe's warnings."""
    for noise in NOISE:
        assert noise not in output, f"{noise!r} in the build's output:\n{output}"
    assert not log.exists(), log.read_text()
    assert not list(temp.glob("beam-temp*"))
    assert "probe warning through absl" in output and "probe warning through logging" in output


def test_tfds_build_says_what_it_built_and_nothing_else_offline(tmp_path):
    env, log, temp = _watched_env(tmp_path)
    data = tmp_path / "tfds"
    script = ("import trainers.core.build as b; b.DATASETS_MODULE = 'rlds_lang_datasets,warning_probe'; "
              f"b.tfds_build('wordle_synthetic', 'expert', {str(data)!r}, small=2)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    _assert_quiet_offline_and_tidy(output, log, temp)
    folder = data / "wordle_synthetic" / "expert_small2" / "1.1.0"  # a small build is a config of its own
    assert "built wordle_synthetic/expert_small2 in " in output and f": train 2 episodes -> {folder}" in output
    assert not [line for line in output.splitlines() if line.startswith(("INFO", "I0", "I2", "WARNING: All log"))]
    # besides the progress bar: the probe's two warnings, TFDS's line before and after the build, tfds_build's line
    shown = _visible_lines(output)
    bar = [line for line in shown if line.startswith("Generating splits...")]
    said = sorted(line.split(" ", 1)[0] for line in shown if line not in bar)
    assert bar and said == sorted(["Downloading", "Dataset", "built", "WARNING:probe:probe", "WARNING:absl:probe"]), \
        output


def _visible_lines(output: str) -> list[str]:
    """The lines a terminal shows: of each line, what follows its last carriage return; blank ones left out."""
    return [shown for line in output.split("\n") if (shown := line.rsplit("\r", 1)[-1].strip())]


def test_plain_tfds_build_of_our_builders_runs_beam_in_process_offline(tmp_path):
    env, log, temp = _watched_env(tmp_path)
    command = [str(Path(sys.executable).with_name("tfds")), "build", "wordle_synthetic", "--imports",
               "rlds_lang_datasets,warning_probe", "--config", "expert", "--data_dir", str(tmp_path / "tfds")]
    done = subprocess.run(command, capture_output=True, text=True, env=dict(env, RLDS_LANG_SMALL="2"), timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    # the tfds command itself still logs at INFO and prints the DatasetInfo (docs/guides/install.md says so)
    _assert_quiet_offline_and_tidy(output.replace("tfds.core.DatasetInfo(", "").replace("apitools not found", ""),
                                   log, temp)


def test_every_beam_builder_runs_the_local_runner_unless_told_otherwise():
    import tensorflow_datasets as tfds

    beam_builders = [cls for name, cls in BUILDERS.items() if name != "preferences"]
    assert len(beam_builders) == 6
    for cls in beam_builders:
        bases = cls.__mro__
        assert bases.index(LocalBeamRunner) < bases.index(tfds.core.GeneratorBasedBuilder), cls


def test_the_mixin_hands_tfds_the_local_runner_and_the_other_arguments():
    seen = []

    class Prepared:
        """Stands for ``tfds.core.GeneratorBasedBuilder``: records what its ``download_and_prepare`` gets."""

        def download_and_prepare(self, *, download_config=None, **kwargs):
            seen.append((download_config, kwargs))

    class Builder(LocalBeamRunner, Prepared):
        """A builder with the mixin."""

    Builder().download_and_prepare(download_dir="/downloads", file_format="tfrecord")
    ((config, kwargs),) = seen
    assert config.beam_runner is None and _runner(config.beam_options) == LOCAL_RUNNER
    assert kwargs == {"download_dir": "/downloads", "file_format": "tfrecord"}


def _runner(options) -> str | None:
    from apache_beam.options.pipeline_options import StandardOptions

    return options.view_as(StandardOptions).runner


def test_local_runner_options_do_not_read_the_command_line(monkeypatch, caplog):
    monkeypatch.setattr(sys, "argv", ["tfds", "build", "wordle_synthetic", "--imports", "rlds_lang_datasets"])
    with caplog.at_level(logging.INFO):
        config = with_local_runner(None)
        options = config.beam_options.get_all_options()
    assert options["runner"] == LOCAL_RUNNER and options["direct_num_workers"] == 1
    assert not [r for r in caplog.records if "nparseable" in r.getMessage()]


def test_a_chosen_runner_stays_and_options_without_one_get_the_local_runner():
    import tensorflow_datasets as tfds
    from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions

    dataflow = tfds.download.DownloadConfig(beam_options=PipelineOptions(flags=["--runner=DataflowRunner"]))
    assert with_local_runner(dataflow) is dataflow
    runner_object = tfds.download.DownloadConfig(beam_runner=object())
    assert with_local_runner(runner_object) is runner_object
    given = PipelineOptions(flags=["--direct_num_workers=2", "--direct_running_mode=multi_processing"])
    config = tfds.download.DownloadConfig(beam_options=given, manual_dir="/logs")
    local = with_local_runner(config)
    assert _runner(local.beam_options) == LOCAL_RUNNER and local.manual_dir == "/logs"
    assert local.beam_options.view_as(DirectOptions).direct_num_workers == 2
    assert _runner(given) is None and config.beam_options is given  # the caller's objects are not changed


def test_tfds_build_runs_the_child_with_the_local_runner_and_reports_counts(monkeypatch, tmp_path, capsys):
    from apache_beam.options.pipeline_options import PipelineOptions

    commands = []

    def fake_run(command, env, quiet=False):
        commands.append((command, {"env": env, "quiet": quiet}))
        folder = tmp_path / "wordle_synthetic" / "manual_dir" / "1.1.0"
        folder.mkdir(parents=True)
        info = {"splits": [{"name": "train", "shardLengths": ["1200", "34"]}]}
        (folder / "dataset_info.json").write_text(json.dumps(info))

    monkeypatch.setattr(trainers.core.build, "run_build", fake_run)
    folder = trainers.core.build.tfds_build("wordle_synthetic", "manual_dir", tmp_path, manual_dir="/logs")
    ((command, kwargs),) = commands
    args = build_child.parse_args(command)
    assert (args.name, args.config, args.data_dir, args.manual_dir) == ("wordle_synthetic", "manual_dir",
                                                                        str(tmp_path), "/logs")
    assert args.imports == "rlds_lang_datasets"
    flags = [f"--{option}" for option in args.beam_pipeline_options.split(",")]
    assert _runner(PipelineOptions(flags=flags)) == LOCAL_RUNNER  # not DirectRunner: it tries to download Prism
    assert kwargs["quiet"] is False  # the progress bar and counts reach the user
    said = capsys.readouterr().out
    assert re.fullmatch(rf"built wordle_synthetic/manual_dir in \d+\.\d s: train 1,234 episodes -> {re.escape(folder)}\n",
                        said), said


def test_child_parses_the_tfds_build_flags_it_is_given():
    args = build_child.parse_args(["reddit_comments", "--imports", "a,b", "--config", "toxicity", "--data_dir", "/d",
                                   "--beam_pipeline_options=runner=FnApiRunner,direct_num_workers=2",
                                   "--file_format", "array_record"])
    assert args.beam_pipeline_options == "runner=FnApiRunner,direct_num_workers=2"
    assert (args.imports, args.file_format, args.manual_dir) == ("a,b", "array_record", None)


def test_native_info_logs_go_off_unless_a_level_is_set():
    environ = {"TF_CPP_MIN_LOG_LEVEL": "0"}
    quiet_native_logs(environ)
    assert environ == {"TF_CPP_MIN_LOG_LEVEL": "0", "GLOG_minloglevel": "1"}


def test_the_child_turns_native_info_logs_off_before_it_builds(monkeypatch):
    for name in NATIVE_LOG_LEVELS:
        monkeypatch.delenv(name, raising=False)
    seen = []
    monkeypatch.setattr(build_child, "build", lambda args: seen.append((args.name, {
        name: os.environ.get(name) for name in NATIVE_LOG_LEVELS})))
    build_child.main(["wordle_synthetic", "--imports", "m", "--config", "expert", "--data_dir", "/d"])
    assert seen == [("wordle_synthetic", NATIVE_LOG_LEVELS)]


def test_child_leaves_out_beam_s_bigquery_import_warning_only(caplog):
    with caplog.at_level(logging.WARNING):
        with build_child.without_beam_bigquery_import_warning():
            logging.warning(build_child.BEAM_BIGQUERY_IMPORT_WARNING + ", despite the import not raising")
            logging.warning("apitools is fine but this is a real warning")
            logging.getLogger("other").warning("a warning of another logger")
        logging.warning(build_child.BEAM_BIGQUERY_IMPORT_WARNING + " (after the import)")
    said = [record.getMessage() for record in caplog.records]
    assert said == ["apitools is fine but this is a real warning", "a warning of another logger",
                    build_child.BEAM_BIGQUERY_IMPORT_WARNING + " (after the import)"]
