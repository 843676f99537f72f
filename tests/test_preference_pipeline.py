"""The multi-process preference pipeline: dropping vs blocking queues, routing, reload, clean shutdown."""

import json
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="the reward trainer needs torch (installed by setup.cfg)")

from loggers.preferences_dataset import read_judgements  # noqa: E402
from rlds_lang.env import run_episode  # noqa: E402
from rlds_lang.preferences.database import EpisodeSplit  # noqa: E402
from rlds_lang.preferences.queues import DroppingSink, put_blocking  # noqa: E402
from rlds_lang.preferences.wrapper import PreferenceEnv  # noqa: E402
from rlds_lang.wordle.env import WordleEnv  # noqa: E402
from rlds_lang.wordle.policies import make_policy  # noqa: E402
from trainers.algorithms.reward.model import RewardModelConfig  # noqa: E402
from trainers.algorithms.reward.pipeline import PipelineConfig, PreferencePipeline  # noqa: E402
from trainers.core.model import ModelConfig  # noqa: E402
from tests.process_helpers import running  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TINY_REWARD = RewardModelConfig(members=2, batch_size=8, hidden=16, lr=1e-3, val_every=2,
                                model=ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=32))


def tiny_config(out: Path, **changes) -> PipelineConfig:
    """A pipeline small enough for a test: training starts after 10 labels, a checkpoint every 2 steps."""
    fields = dict(out=str(out), n_initial_preferences=10, checkpoint_every=2, max_training_steps=4,
                  reward=TINY_REWARD, shutdown_timeout=60.0)
    fields.update(changes)
    return PipelineConfig(**fields)


def test_the_clip_sink_drops_and_counts_when_the_queue_is_full():
    target = queue.Queue(maxsize=2)
    sink = DroppingSink(target)
    assert [sink(k) for k in range(5)] == [True, True, False, False, False]
    assert (sink.sent, sink.dropped) == (2, 3)
    assert [target.get_nowait() for _ in range(2)] == [0, 1]


def test_the_label_queue_waits_for_room_and_never_drops():
    target = queue.Queue(maxsize=1)
    got = []

    def slow_reader():
        for _ in range(20):
            got.append(target.get(timeout=10))
            time.sleep(0.005)

    reader = threading.Thread(target=slow_reader)
    reader.start()
    assert all(put_blocking(target, k, poll=0.01) for k in range(20))
    reader.join(10)
    assert got == list(range(20))
    full = queue.Queue(maxsize=1)
    full.put("x")
    assert put_blocking(full, "y", alive=lambda: False, poll=0.01) is False  # reader gone: give up, do not hang


def test_pipeline_labels_routes_trains_and_the_wrapper_reloads_its_checkpoint(tmp_path):
    config = tiny_config(tmp_path / "run", clip_queue_size=4)
    policy = make_policy("random_mixture", prob_smart=0.5)
    with PreferencePipeline(config) as pipeline:
        predictor = pipeline.predictor()
        env = PreferenceEnv(WordleEnv(seed=0), clip_sink=pipeline.clip_sink, predictor=predictor,
                            n_initial_training_steps=2, reload_every=1)
        assert env.reward_source == "true"  # no checkpoint yet
        deadline = time.monotonic() + 240
        seed = 0
        while not (Path(config.out) / "checkpoint" / "config.json").is_file() and time.monotonic() < deadline:
            run_episode(env, policy, seed=seed)
            seed += 1
            time.sleep(0.01)
        assert (Path(config.out) / "checkpoint" / "config.json").is_file(), "no checkpoint within 240 s"
        run_episode(env, policy, seed=seed)  # reload_every=1: the wrapper picks the checkpoint up
        assert predictor.model is not None and predictor.training_steps >= 2
        assert env.reward_source == "predicted"
        emitted = env.clips_emitted
    summary = pipeline.close()
    assert summary["terminated"] == [] and not [p for p in __import__("multiprocessing").active_children()
                                                  if p.name in ("preference-labeller", "reward-trainer")]
    assert summary["clips_sent"] + summary["clips_dropped"] == emitted
    recorded = list(read_judgements(Path(config.out) / "preferences", "all"))
    assert summary["labels_recorded"] == summary["labels_received"] == len(recorded) >= 10
    assert summary["train_labels"] + summary["validation_labels"] == summary["labels_received"]
    assert summary["validation_labels"] > 0 and 2 <= summary["training_steps"] <= 4
    assert len({j.pair_key for j in recorded}) == len(recorded)  # no pair asked twice
    sides = EpisodeSplit(config.val_fraction)
    assert all(sides.split(j) != "straddling" for j in recorded) and summary["straddling"] == 0  # paired per side
    assert json.loads((Path(config.out) / "pipeline.json").read_text()) == summary


def test_a_pipeline_never_starts_over_an_earlier_run(tmp_path):
    (tmp_path / "run" / "checkpoint").mkdir(parents=True)
    with pytest.raises(FileExistsError, match="checkpoint exists from an earlier run"):
        PreferencePipeline(tiny_config(tmp_path / "run"))


def collect(config: PipelineConfig, games: int = 12) -> dict:
    """Plays ``games`` Wordle games into a pipeline of ``config`` and closes it; returns its summary."""
    policy = make_policy("random_mixture", prob_smart=0.5)
    with PreferencePipeline(config) as pipeline:
        env = PreferenceEnv(WordleEnv(seed=1), clip_sink=pipeline.clip_sink)
        for seed in range(games):
            run_episode(env, policy, seed=seed)
    return pipeline.summary


def test_collect_only_stores_labels_without_training(tmp_path):
    config = tiny_config(tmp_path / "run", train=False, clip_queue_size=64)
    summary = collect(config)
    assert summary["clips_dropped"] == 0 and summary["clips_sent"] == 12
    assert summary["labels_received"] == 11 and summary["training_steps"] == 0  # a pair per clip after the first
    assert not (Path(config.out) / "checkpoint").exists()


def test_the_labeller_asks_at_the_decaying_query_rate(tmp_path):
    """With T0 = 2 clips, the queries due after k clips are floor(2 ln(1 + k/2)): 3 after 12 clips, not 11."""
    summary = collect(tiny_config(tmp_path / "run", train=False, clip_queue_size=64, query_timescale=2.0))
    assert summary["clips_sent"] == 12 and summary["queries_due"] == 3 == int(2 * np.log(1 + 12 / 2))
    assert summary["labels_received"] == 3 and summary["queries_waiting"] == 0


PIPELINE_SCRIPT = textwrap.dedent("""
    import contextlib, sys, time
    from pathlib import Path
    from rlds_lang.env import run_episode
    from rlds_lang.preferences.wrapper import PreferenceEnv
    from rlds_lang.wordle.env import WordleEnv
    from rlds_lang.wordle.policies import make_policy
    from tests.test_preference_pipeline import tiny_config
    from trainers.algorithms.reward.pipeline import PreferencePipeline, stop_on_sigterm

    if __name__ == "__main__":
        out, ready_after, handle_sigterm = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "sigterm"
        config = tiny_config(out, max_training_steps=0, checkpoint_every=1)
        policy = make_policy("random_mixture", prob_smart=0.5)
        with stop_on_sigterm() if handle_sigterm else contextlib.nullcontext(), PreferencePipeline(config) as pipeline:
            env = PreferenceEnv(WordleEnv(seed=2), clip_sink=pipeline.clip_sink)
            seed = 0
            while True:  # until a signal
                run_episode(env, policy, seed=seed)
                seed += 1
                if pipeline.labels_received >= ready_after:
                    print("ready", flush=True)
                time.sleep(0.01)
""")


def start_pipeline_script(folder: Path, ready_after: int, handle_sigterm: bool) -> subprocess.Popen:
    """A separate process playing into a pipeline (``folder / "run"``) until a signal; returns once it has stored
    ``ready_after`` labels. ``handle_sigterm``: inside ``stop_on_sigterm``."""
    script = folder / "run_pipeline.py"
    script.write_text(PIPELINE_SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    process = subprocess.Popen([sys.executable, str(script), str(folder / "run"), str(ready_after),
                                "sigterm" if handle_sigterm else "plain"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    line = ""
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.strip() == "ready" or not line:
            break
    if line.strip() != "ready":
        process.kill()
        raise AssertionError(f"the pipeline script never got ready: {process.stderr.read()[-3000:]}")
    return process


def test_sigterm_closes_the_pipeline_without_orphans_or_lost_labels(tmp_path):
    process = start_pipeline_script(tmp_path, 15, handle_sigterm=True)
    out = tmp_path / "run"
    try:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
    assert code == 128 + signal.SIGTERM
    pids = json.loads((out / "pids.json").read_text())
    for name, pid in pids.items():
        assert not running(pid), f"{name} process {pid} outlived the pipeline"
    summary = json.loads((out / "pipeline.json").read_text())
    recorded = list(read_judgements(out / "preferences", "all"))
    assert summary["terminated"] == []
    assert summary["labels_recorded"] == summary["labels_received"] == len(recorded) >= 15
    assert (out / "checkpoint" / "config.json").is_file()


TINY_OPTIONS = ["--reward.members", "2", "--reward.batch_size", "8", "--reward.hidden", "16", "--reward.val_every", "2",
                "--reward.model.n_layer", "1", "--reward.model.n_embd", "16", "--reward.model.n_head", "2",
                "--reward.model.n_positions", "32", "--n_initial_preferences", "10", "--no-progress"]


def test_cli_workflows_collect_then_train_only_then_use_model(tmp_path):
    from trainers.cli.main import main

    collected, trained, used = tmp_path / "collect", tmp_path / "train", tmp_path / "use"
    main(["preferences", "run", "--workflow", "collect-only", "--episodes", "30", "--clip_queue_size", "64",
          "--out", str(collected), *TINY_OPTIONS])
    summary = json.loads((collected / "summary.json").read_text())
    assert summary["workflow"] == "collect-only" and summary["training_steps"] == 0
    assert summary["clips_sent"] == 30 and summary["labels_recorded"] == summary["labels_received"] == 29
    main(["preferences", "run", "--workflow", "train-only", "--preferences", str(collected / "preferences"),
          "--out", str(trained), "--reward.steps", "20", *TINY_OPTIONS])
    summary = json.loads((trained / "summary.json").read_text())
    assert sum(summary["routed"].values()) == 29 and summary["routed"]["validation"] > 0
    assert (trained / "checkpoint" / "config.json").is_file() and 0.0 <= summary["val_accuracy"] <= 1.0
    main(["preferences", "run", "--workflow", "use-model", "--model", str(trained), "--episodes", "12",
          "--out", str(used), *TINY_OPTIONS])
    summary = json.loads((used / "summary.json").read_text())
    assert summary["episodes"] == 12 and np.isfinite(summary["mean_predicted_return"])
    assert summary["mean_true_return"] <= 0.0  # Wordle's true rewards are never positive
    with pytest.raises(ValueError, match="needs --model"):
        main(["preferences", "run", "--workflow", "use-model", "--out", str(used)])


def test_cli_collect_and_train_records_every_label_and_completes_its_training_steps(tmp_path):
    from trainers.cli.main import main

    out = tmp_path / "run"
    main(["preferences", "run", "--episodes", "60", "--clip_queue_size", "64", "--max_training_steps", "4",
          "--checkpoint_every", "2", "--n_initial_training_steps", "2", "--reload_every", "5", "--out", str(out),
          *TINY_OPTIONS])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["training_steps"] == 4 and (out / "checkpoint" / "config.json").is_file()
    assert summary["labels_recorded"] == summary["labels_received"] == summary["clips_sent"] - 1


def test_bench_prints_segments_and_labels_per_second(capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_preferences", ROOT / "bench" / "preferences.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    figures = bench.main(["--games", "20", "--labels", "10"])
    assert figures["segments_per_s"] > 0 and figures["labels_per_s"] > 0
    assert figures["labels"] == 10 and figures["dropped"] == 0
    out = capsys.readouterr().out
    assert "segments/s" in out and "labels/s" in out
