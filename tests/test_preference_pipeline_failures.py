"""The preference pipeline fails loudly: a dead or broken child (labeller, trainer) or a dead or failing
environment side stops it promptly with the child's error, leaves no process behind and loses no label that
was acknowledged (counted as recorded)."""

import dataclasses
import json
import os
import signal
import time
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the reward trainer needs torch (installed by setup.cfg)")

from loggers.preferences_dataset import read_judgements  # noqa: E402
from rlds_lang.env import run_episode  # noqa: E402
from rlds_lang.preferences.wrapper import PreferenceEnv  # noqa: E402
from rlds_lang.wordle.env import WordleEnv  # noqa: E402
from rlds_lang.wordle.policies import make_policy  # noqa: E402
from tests.process_helpers import running  # noqa: E402
from tests.test_preference_pipeline import TINY_REWARD, start_pipeline_script, tiny_config  # noqa: E402
from trainers.algorithms.reward.pipeline import PipelineError, PreferencePipeline  # noqa: E402
from trainers.algorithms.reward.supervision import PARENT_GRACE_S, PARENT_POLL_S  # noqa: E402

#: seconds a failure may take to surface at the environment side (the children start in a few seconds).
NOTICE_WITHIN = 120.0


def _pids(out: Path) -> dict[str, int]:
    return json.loads((out / "pids.json").read_text())


def _assert_no_orphans(out: Path, within: float = 15.0) -> None:
    """Every child named in ``pids.json`` has ended (checked in /proc) within ``within`` seconds."""
    deadline = time.monotonic() + within
    pids = _pids(out)
    while time.monotonic() < deadline and any(running(pid) for pid in pids.values()):
        time.sleep(0.1)
    alive = {name: pid for name, pid in pids.items() if running(pid)}
    assert not alive, f"processes outlived the pipeline: {alive}"


def _assert_acknowledged_labels_on_disk(out: Path, summary: dict) -> None:
    recorded = list(read_judgements(out / "preferences", "all"))
    assert len(recorded) >= summary["labels_recorded"] > 0


def _play_until_error(pipeline: PreferencePipeline, env: PreferenceEnv, within: float = NOTICE_WITHIN,
                      on_labels: int | None = None, action=None) -> PipelineError:
    """Plays games until the pipeline raises; ``action()`` runs once ``on_labels`` labels were recorded."""
    policy = make_policy("random_mixture", prob_smart=0.5)
    deadline = time.monotonic() + within
    seed = 0
    with pytest.raises(PipelineError) as caught:
        while time.monotonic() < deadline:
            run_episode(env, policy, seed=seed)
            seed += 1
            if action is not None and pipeline.labels_recorded >= on_labels:
                action()
                action = None
            time.sleep(0.01)
    return caught.value


def test_a_trainer_failing_at_its_first_step_stops_the_environment_with_its_error(tmp_path):
    broken = dataclasses.replace(TINY_REWARD, tokenizer="no-such-tokenizer")
    config = tiny_config(tmp_path / "run", reward=broken, shutdown_timeout=10.0, clip_queue_size=64)
    pipeline = PreferencePipeline(config)
    env = PreferenceEnv(WordleEnv(seed=0), clip_sink=pipeline.clip_sink, predictor=pipeline.predictor(),
                        n_initial_training_steps=2, reload_every=1)
    started = time.monotonic()
    error = _play_until_error(pipeline, env)
    assert time.monotonic() - started < NOTICE_WITHIN
    assert "reward-trainer" in str(error) and "exit code 1" in str(error)
    assert "unknown tokenizer 'no-such-tokenizer'" in str(error)  # the child's own error, not a vague one
    assert "Traceback" in error.details["reward-trainer"]["error"]
    began = time.monotonic()
    summary = pipeline.close(raise_on_failure=False)
    assert time.monotonic() - began <= config.shutdown_timeout + 6
    assert summary["failures"]["reward-trainer"]["exit_code"] == 1
    _assert_no_orphans(Path(config.out))
    _assert_acknowledged_labels_on_disk(Path(config.out), summary)
    assert json.loads((Path(config.out) / "pipeline.json").read_text())["failures"] == summary["failures"]


def _kill_child_then_close(config, child: str, on_labels: int) -> PreferencePipeline:
    """Plays into a pipeline of ``config``, SIGKILLs its ``child`` (``labeller``/``trainer``) after ``on_labels``
    labels and checks that the environment side hears of it and that ``close()`` names it within the timeout."""
    names = {"labeller": "preference-labeller", "trainer": "reward-trainer"}
    pipeline = PreferencePipeline(config)
    env = PreferenceEnv(WordleEnv(seed=1), clip_sink=pipeline.clip_sink)
    pid = _pids(Path(config.out))[child]
    error = _play_until_error(pipeline, env, on_labels=on_labels, action=lambda: os.kill(pid, signal.SIGKILL))
    assert names[child] in str(error) and "killed by SIGKILL" in str(error)
    began = time.monotonic()
    with pytest.raises(PipelineError, match=names[child]):
        pipeline.close()
    assert time.monotonic() - began <= config.shutdown_timeout + 6
    assert pipeline.summary["terminated"] == []  # the other child was told to stop and stopped by itself
    _assert_no_orphans(Path(config.out))
    _assert_acknowledged_labels_on_disk(Path(config.out), pipeline.summary)
    return pipeline


def test_a_killed_labeller_stops_the_pipeline_and_the_trainer_ends_too(tmp_path):
    config = tiny_config(tmp_path / "run", shutdown_timeout=10.0, clip_queue_size=64, max_training_steps=0)
    assert _kill_child_then_close(config, "labeller", on_labels=5).summary["stopped_early"]


def test_a_killed_trainer_does_not_hang_the_labeller_or_close(tmp_path):
    """The label queue holds one label: with the trainer gone, the labeller blocks on it, and close() must still
    return within the shutdown timeout, the labeller ended, every recorded label on disk."""
    config = tiny_config(tmp_path / "run", shutdown_timeout=10.0, clip_queue_size=64, label_queue_size=1,
                         max_training_steps=0, train=False)
    _kill_child_then_close(config, "trainer", on_labels=3)


def test_a_broken_labeller_config_fails_at_start_naming_the_labeller(tmp_path):
    config = tiny_config(tmp_path / "run", label_noise=2.0, shutdown_timeout=10.0)
    with pytest.raises(PipelineError, match=r"preference-labeller.*noise must be a probability"):
        PreferencePipeline(config)
    _assert_no_orphans(Path(config.out))


def test_an_environment_error_closes_the_pipeline_promptly_and_keeps_every_label(tmp_path):
    config = tiny_config(tmp_path / "run", shutdown_timeout=20.0, clip_queue_size=64, max_training_steps=2)
    policy = make_policy("random_mixture", prob_smart=0.5)
    with pytest.raises(ZeroDivisionError):
        with PreferencePipeline(config) as pipeline:
            env = PreferenceEnv(WordleEnv(seed=3), clip_sink=pipeline.clip_sink)
            for seed in range(15):
                run_episode(env, policy, seed=seed)
            pipeline.wait_for_labels(14, timeout=60)
            began = time.monotonic()
            1 / 0  # the environment side breaks
    assert time.monotonic() - began <= config.shutdown_timeout + 6
    _assert_no_orphans(Path(config.out))
    summary = pipeline.summary
    recorded = list(read_judgements(Path(config.out) / "preferences", "all"))
    assert summary["failures"] == {} and summary["labels_recorded"] == summary["labels_received"] == len(recorded)


def test_children_end_when_the_environment_process_is_killed(tmp_path):
    process = start_pipeline_script(tmp_path, 5, handle_sigterm=False)
    out = tmp_path / "run"
    try:
        process.kill()  # SIGKILL: no handler runs, no close()
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    _assert_no_orphans(out, within=PARENT_POLL_S + PARENT_GRACE_S + 3.0)  # the documented second, and slack
    recorded = list(read_judgements(out / "preferences", "all"))
    assert len(recorded) >= 5


def _fail_at_once(watch) -> None:
    raise ValueError("broken on purpose")


def _wait_until_told(watch) -> None:
    while not watch.stopped():
        time.sleep(0.05)


def test_a_child_that_fails_while_the_parent_waits_stops_its_sibling():
    """``ChildSet.join`` sets the stop event when a child fails, so a sibling waiting for it ends by itself long
    before the deadline instead of being killed there; the failure is reported with the child's own error."""
    import multiprocessing

    from trainers.algorithms.reward.supervision import ChildSet

    children = ChildSet(multiprocessing.get_context("spawn"))
    children.start("waiter", _wait_until_told, ())
    children.start("failer", _fail_at_once, ())
    began = time.monotonic()
    report = children.join(time.monotonic() + 90)
    assert time.monotonic() - began < 45
    assert report.killed == [] and report.exit_codes == {"waiter": 0, "failer": 1}
    assert "ValueError: broken on purpose" in report.errors["failer"]
    with pytest.raises(PipelineError, match=r"the failer process failed \(exit code 1\): ValueError: broken on purpose"):
        children.raise_for(report)


FORGETFUL_SCRIPT = """
import sys
from pathlib import Path
from rlds_lang.env import run_episode
from rlds_lang.preferences.wrapper import PreferenceEnv
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import make_policy
from tests.test_preference_pipeline import tiny_config
from trainers.algorithms.reward.pipeline import PreferencePipeline

if __name__ == "__main__":
    pipeline = PreferencePipeline(tiny_config(Path(sys.argv[1]), train=False, clip_queue_size=64))
    env = PreferenceEnv(WordleEnv(seed=5), clip_sink=pipeline.clip_sink)
    for seed in range(4):
        run_episode(env, make_policy("random_mixture", prob_smart=0.5), seed=seed)
    pipeline.wait_for_labels(3)
    # never closed: the interpreter's exit must close it, not wait for its children for ever
"""


def test_a_program_that_never_closes_the_pipeline_still_exits(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "forgetful.py"
    script.write_text(FORGETFUL_SCRIPT)
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root), OMP_NUM_THREADS="1")
    process = subprocess.Popen([sys.executable, str(script), str(tmp_path / "run")], cwd=root, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        code = process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert code == 0, process.stderr.read()[-3000:]
    _assert_no_orphans(tmp_path / "run")
    summary = json.loads((tmp_path / "run" / "pipeline.json").read_text())  # closed at exit, counts written
    assert summary["labels_recorded"] == summary["labels_received"] == 3
