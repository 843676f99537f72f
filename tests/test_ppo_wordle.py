"""PPO on Wordle from a BC checkpoint through the CLI (`rlds-lang train ppo --init ... --reward env`), and a smoke
run of `rlds-lang ppo-results` (the command that writes docs/ppo.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from rlds_lang.tokenizers import wordle_tokenizer
from tests.ppo_helpers import one_thread  # noqa: F401  (autouse fixture)
from trainers.algorithms.bc import BCConfig, BCModel
from trainers.cli.main import main
from trainers.core.checkpoint import save_checkpoint
from trainers.core.model import ModelConfig


@pytest.fixture(scope="module")
def bc_checkpoint(tmp_path_factory) -> Path:
    """A (tiny, untrained) checkpoint in BC's format, as `rlds-lang train bc` writes it."""
    out = tmp_path_factory.mktemp("bc")
    torch.manual_seed(0)
    config = BCConfig(out=str(out), model=ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=128))
    tok = wordle_tokenizer()
    return save_checkpoint(out, "bc", config, BCModel(config, tok), tok, {"step": 0})


def test_train_ppo_cli_from_a_bc_checkpoint_on_wordle(bc_checkpoint, tmp_path):
    out = tmp_path / "ppo"
    main(["train", "ppo", "--task", "wordle", "--init", str(bc_checkpoint), "--reward", "env", "--updates", "1",
          "--episodes", "2", "--out", str(out), "--no-progress"])
    saved = json.loads((out / "checkpoint" / "config.json").read_text())
    assert saved["algorithm"] == "ppo" and saved["config"]["model"]["n_embd"] == 32  # the init's model
    state = torch.load(out / "checkpoint" / "model.pt", weights_only=True)
    start = torch.load(bc_checkpoint / "model.pt", weights_only=True)
    assert not torch.equal(state["lm.transformer.wte.weight"], start["lm.transformer.wte.weight"])
    row = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])
    assert -6 <= row["episode_return"] <= 0 and row["turns"] >= 2


def test_ppo_results_smoke_writes_a_document_with_a_computed_verdict(bc_checkpoint, tmp_path):
    doc = tmp_path / "ppo.md"
    main(["ppo-results", "--bc", str(bc_checkpoint), "--runs", str(tmp_path / "runs"), "--updates", "1",
          "--games", "12", "--out", str(doc), "--no-progress", "--rlhf-updates", "2", "--rlhf-labels", "40",
          "--rlhf-games-per-policy", "4", "--rlhf-bc-games", "4", "--rlhf-reward-steps", "3",
          # result 3 (trainers.experiments.ppo.sentiment) at small sizes: a base LM of 3 steps writes continuations that VADER
          # scores all alike, so every best-of-4 group would be a tie and nothing would be left to train on
          "--sentiment-base-steps", "30", "--sentiment-base-examples", "64", "--sentiment-preference-prompts", "24",
          "--sentiment-reward-epochs", "1", "--sentiment-reward-members", "1", "--sentiment-updates", "1",
          "--sentiment-episodes", "2", "--sentiment-eval-prompts", "4"])
    text = doc.read_text()
    assert "| bc | 12 |" in text and "| ppo | 12 |" in text
    assert "- PPO − BC = " in text and "(LMRL-Gym, GPT-2 small) | -2.63 | 84.2 |" in text
    # result 2: RLHF against the learned reward, with computed verdicts and the curves
    section = text[text.index("## 2. RLHF on Wordle"):]
    assert "| rlhf | 12 |" in section and "- RLHF − BC (true return) = " in section and "over 2 updates" in section
    assert "40 synthetic labels" in section and (tmp_path / "ppo_rlhf.png").stat().st_size > 1000
    saved = json.loads((tmp_path / "runs" / "rlhf" / "config.json").read_text())["config"]
    assert saved["reward"] == f"model:{tmp_path / 'runs' / 'reward' / 'reward'}" and saved["init"] == str(bc_checkpoint)
    rows = [json.loads(line) for line in (tmp_path / "runs" / "rlhf" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2] and all(-6 <= r["true_return"] <= 0 for r in rows)
    sentiment = text[text.index("## 3. A sentiment-like continuation task"):]
    assert "| ppo | 4 |" in sentiment and "- PPO − base (VADER) = " in sentiment


def test_ppo_starts_from_an_ilql_checkpoint_with_its_lm(tmp_path):
    from trainers.algorithms.ilql.ilql import ILQLConfig, ILQLModel
    from trainers.algorithms.ppo.config import PPOConfig
    from trainers.algorithms.ppo.trainer import initial_model

    torch.manual_seed(1)
    config = ILQLConfig(out=str(tmp_path), model=ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=80))
    tok = wordle_tokenizer()
    ilql = ILQLModel(config, tok)
    path = save_checkpoint(tmp_path, "ilql", config, ilql, tok, {"step": 0})
    resolved, model, tokenizer = initial_model(PPOConfig(init=str(path)))
    assert resolved.model.n_positions == 80 and tokenizer == tok
    assert all(torch.equal(v, ilql.lm.state_dict()[k]) for k, v in model.lm.state_dict().items())
    assert float(model.value_head.weight.detach().abs().sum()) == 0 and all(p.requires_grad for p in model.parameters())


def test_torchrun_two_processes_train_ppo(bc_checkpoint, tmp_path):
    """Two gloo processes each play their own games (own rollout folders), step together, and process 0 writes
    one metrics row per update and the checkpoint."""
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    out = tmp_path / "ddp"
    args = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "trainers.cli.main",
            "train", "ppo", "--init", str(bc_checkpoint), "--updates", "2", "--episodes", "1", "--ppo_epochs", "2",
            "--out", str(out), "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(repo), "OMP_NUM_THREADS": "1"}
    run = subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    from loggers import read_episodes

    seeds = [int(ep["seed"]) for rank in (0, 1) for ep in read_episodes(out / "rollouts" / f"update-00001-rank{rank}")]
    assert len(set(seeds)) == 2  # the processes played different games
    state = torch.load(out / "checkpoint" / "model.pt", weights_only=True)
    start = torch.load(bc_checkpoint / "model.pt", weights_only=True)
    assert not torch.equal(state["lm.transformer.wte.weight"], start["lm.transformer.wte.weight"])
