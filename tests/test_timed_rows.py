"""LMRL-Gym's BC and ILQL rows trained within time budgets (``trainers.experiments.lmrl_gym.timed_rows``, the rows
stage of ``bench/gpu.sh``): the steps follow the probe's measured rate within the page's bounds, ILQL starts from
the BC run it trained, the device, precision and reader processes reach every run, and the figures file is what
``rlds-lang results gpu`` reads. Training and playing are replaced by recording fakes here; ``bench/gpu.sh``'s
rehearsal on the CPU (``DEVICE=cpu``) runs them for real."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from trainers.core.logs import Throughput
from trainers.evaluation.wordle import EvalResult
from trainers.experiments import gpu
from trainers.experiments.lmrl_gym import timed_rows

REPO = Path(__file__).resolve().parents[1]


def test_the_steps_fill_the_budget_at_the_measured_rate_within_the_page_s_bounds():
    assert timed_rows.chosen_steps(100, 25.0, 100, 32000) == 2500
    assert timed_rows.chosen_steps(100, 0.5, 100, 32000) == 100  # never fewer than the probe
    assert timed_rows.chosen_steps(10_000, 25.0, 100, 32000) == 32000  # never more than the page


def test_steps_per_second_leaves_out_the_first_step():
    clock = Throughput()
    assert clock.steps_per_second() == 0.0
    time.sleep(0.2)  # start-up: the first step pays for it
    clock.step_done(10)
    for _ in range(4):
        time.sleep(0.01)
        clock.step_done(10)
    assert clock.steps_per_second() > 4 / 0.15  # 4 steps in about 0.04 s, not 5 in 0.24 s


def fake_dataset(tmp_path: Path, train: list[int]) -> Path:
    folder = tmp_path / "lmrl_gym" / "1.1.0"
    folder.mkdir(parents=True)
    (folder / "dataset_info.json").write_text(json.dumps(
        {"splits": [{"name": "eval", "shardLengths": ["7"]}, {"name": "train", "shardLengths": [str(n) for n in train]}]}))
    return folder


def test_the_rows_are_trained_in_order_on_the_device_and_played_into_a_figures_file(tmp_path, monkeypatch):
    dataset = fake_dataset(tmp_path, [600, 400])
    trained, played = [], []
    rates = {"BC": 30.0, "ILQL": 20.0}

    def train(algorithm, config, progress=True):
        name = Path(config.out).name
        trained.append((name, config.steps, config.device, config.precision, config.reader_workers,
                        str(config.model.checkpoint or ""), Path(config.out).parent.name))
        return SimpleNamespace(steps_per_second=rates[name])

    def evaluate_run(experiment, run, steps, eval_config, decoding, fresh, beta=None):
        played.append((experiment.name, run.name, steps, eval_config.games, eval_config.batch_games, decoding.key))
        rewards = np.array([-3.0, -4.0] if experiment.name == "BC" else [-2.0, -2.1])
        return EvalResult(experiment.name, rewards, np.array([3, 4]), np.array([True, False]), 0, 0.5)

    monkeypatch.setattr("trainers.algorithms.registry.train", train)
    monkeypatch.setattr(timed_rows, "evaluate_run", evaluate_run)
    monkeypatch.setattr(timed_rows, "finished_bc_lm", lambda runs, steps: runs / f"BC-at-{steps}" / "lm")
    monkeypatch.setattr(timed_rows, "check_started_from_bc", lambda run, bc: None)
    out = tmp_path / "rows.json"
    timed_rows.main(["--dataset", str(dataset), "--device", "cpu", "--precision", "fp32", "--bc-seconds", "10",
                     "--ilql-seconds", "50", "--probe-steps", "5", "--games", "2", "--batch-games", "2",
                     "--reader-workers", "3", "--runs", str(tmp_path / "runs"), "--json", str(out)])
    # each row: a probe in a scratch folder, then the steps its budget gives at the probe's rate
    assert [(t[0], t[1]) for t in trained] == [("BC", 5), ("BC", 300), ("ILQL", 5), ("ILQL", 1000)]
    assert {t[2:5] for t in trained} == {("cpu", "fp32", 3)}
    assert trained[0][6] != "runs" != trained[2][6] and trained[1][6] == trained[3][6] == "runs"  # probes apart
    assert trained[1][5] == "" and trained[3][5].endswith("BC-at-300/lm")  # ILQL starts from the BC it trained
    assert played == [("BC", "BC", 300, 2, 2, "greedy"), ("ILQL", "ILQL", 1000, 2, 2, "greedy"),
                      ("BC", "BC", 300, 2, 2, "sample"), ("ILQL", "ILQL", 1000, 2, 2, "sample")]
    figures = json.loads(out.read_text())
    assert figures["kind"] == "trained_rows" and figures["device"] == "cpu" and "1,000 training games" in figures["setting"]
    assert "3 reader processes" in figures["setting"]
    bc = figures["rows"][0]
    assert (bc["name"], bc["steps"], bc["mean_reward"], bc["published_mean_reward"]) == ("BC (greedy)", 300, -3.5, -2.81)
    figures_store = gpu.read_figures(tmp_path / "none.json")
    gpu.merge(figures_store, out)
    figures_store["trained_rows"][0]["device"] = "cuda:0"  # the page shows figures measured on a GPU only
    assert "| BC (greedy) | 300 |" in gpu.render(figures_store, "cmd")


def test_the_page_computes_whether_the_published_returns_were_reached():
    rows = [{"name": "BC", "steps": 1, "train_minutes": 1.0, "games": 4, "mean_reward": -2.9, "stderr": 0.1,
             "win_rate": 0.5, "published_mean_reward": -2.81},
            {"name": "ILQL", "steps": 1, "train_minutes": 1.0, "games": 4, "mean_reward": -3.0, "stderr": 0.1,
             "win_rate": 0.5, "published_mean_reward": -2.04}]
    figures = {"train_throughput": [], "device_agreement": [],
               "trained_rows": [{"kind": "trained_rows", "device": "cuda:0", "device_name": "H", "precision": "bf16",
                                 "rows": rows}]}
    text = gpu.render(figures, "cmd")
    assert "**not reached** on H: 1 of 2 played rows are more than 2 SE below their published mean return (ILQL)" in text
    rows[1]["mean_reward"] = -2.2
    assert "reached on H: 0 of 2" in gpu.render(figures, "cmd")


def test_runs_with_other_reader_processes_stay_side_by_side():
    figures = gpu.read_figures(Path("/nonexistent.json"))
    entry = {"device": "cuda:0", "precision": "bf16", "rows": [{"reader_workers": 0}]}
    figures["train_throughput"] = [entry]
    assert gpu.entry_key(entry) != gpu.entry_key({**entry, "reader_workers": 8})
    assert gpu.entry_key(entry) == gpu.entry_key({"device": "cuda:0", "precision": "bf16", "rows": []})


def test_the_gpu_script_runs_only_the_stages_asked_for(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "OUT": str(tmp_path), "STAGES": "none", "WHEELS": "none",
           "PYTHON": sys.executable, "HOME": str(tmp_path)}
    run = subprocess.run(["bash", str(REPO / "bench" / "gpu.sh")], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "== done; failed: none" in run.stdout and "== agreement" not in run.stdout
    assert (tmp_path / "gpu.log").read_text().count("torch") >= 1
