"""The ILQL code's other baselines (``cql``, ``psi``, ``dt``) as trainers of the package: registered by name, the
loss falls on a tiny dataset, a resumed run equals a straight one, and ``rlds-lang eval`` plays each on Wordle.
Their defining losses: tests/test_cql.py, tests/test_psi.py, tests/test_dt.py."""

from __future__ import annotations

import json

import pytest
import torch

from tests.test_trainers import config, metrics
from trainers.core.model import ModelConfig
from tests.toy_data import build_dataset, wordle_like
from trainers.algorithms.registry import algorithm_by_name, load_agent_model, load_policy, parse_agent, train

BASELINES = ["cql", "psi", "dt", "utterance_ilql", "chai"]
#: room for a whole six-guess game when the agent plays (the trainers' tests' model has 64 positions).
PLAYING = ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=128)


@pytest.fixture(scope="module")
def wordle_dataset(tmp_path_factory) -> str:
    return build_dataset(wordle_like(48, seed=3), tmp_path_factory.mktemp("wordle_like"))


@pytest.mark.parametrize("algorithm", BASELINES)
def test_loss_falls_and_the_checkpoint_plays_wordle(algorithm, wordle_dataset, tmp_path, capsys):
    from trainers.cli.main import main

    assert algorithm_by_name(algorithm).name == algorithm
    train(algorithm, config(algorithm, wordle_dataset, tmp_path / algorithm, steps=30, model=PLAYING), progress=False)
    losses = [row["loss"] for row in metrics(tmp_path / algorithm)]
    assert len(losses) == 30 and sum(losses[-5:]) / 5 < 0.9 * sum(losses[:5]) / 5, losses
    checkpoint = tmp_path / algorithm / "checkpoint"
    loaded = load_agent_model(checkpoint)
    assert loaded.algorithm == algorithm and loaded.step == 30
    capsys.readouterr()
    main(["eval", "--agent", f"{algorithm}={checkpoint}", "--games", "4", "--answers", "demo_words",
          "--guesses", "demo_words", "--no-progress"])
    shown = capsys.readouterr().out
    assert "4 games" in shown and algorithm in shown


@pytest.mark.parametrize("algorithm", BASELINES)
def test_resume_from_checkpoint_gives_the_same_next_steps(algorithm, wordle_dataset, tmp_path):
    from tests.resume_check import train_straight_and_resumed

    def make(out, **overrides):
        return config(algorithm, wordle_dataset, tmp_path / out, **overrides)

    train_straight_and_resumed(algorithm, make, tmp_path, steps=6)
    final_a = load_agent_model(tmp_path / "straight" / "checkpoint").model.state_dict()
    final_b = load_agent_model(tmp_path / "resumed" / "checkpoint").model.state_dict()
    assert final_a.keys() == final_b.keys()
    for key in final_a:
        torch.testing.assert_close(final_b[key], final_a[key], rtol=1e-5, atol=1e-7, msg=key)


def test_value_baselines_decode_with_their_heads_and_dt_with_its_target_return(wordle_dataset, tmp_path):
    for algorithm in BASELINES:
        train(algorithm, config(algorithm, wordle_dataset, tmp_path / algorithm, steps=1), progress=False)
    for algorithm in ("cql", "psi"):
        policy = load_policy(tmp_path / algorithm / "checkpoint", allowed_actions=["crane", "slate"])
        assert policy.heads is not None and policy.beta == 8.0  # the authors' VisDial adv_weight
    dt = load_policy(tmp_path / "dt" / "checkpoint", allowed_actions=["crane", "slate"], target_return=-2.5)
    assert dt.lm.target_return == -2.5 and dt.params()["target_return"] == -2.5
    assert load_policy(tmp_path / "dt" / "checkpoint").lm.target_return == -5.7  # the checkpoint's own
    with pytest.raises(ValueError, match="target_return is a setting of return-conditioned agents"):
        load_policy(tmp_path / "cql" / "checkpoint", target_return=0.0)
    assert parse_agent("dt=runs/dt/checkpoint,target_return=-3") == ("dt", "runs/dt/checkpoint", {"target_return": "-3"})
    # the saved lm/ is the plain GPT-2; the return embedding lives in model.pt
    assert json.loads((tmp_path / "dt" / "checkpoint" / "lm" / "config.json").read_text())["model_type"] == "gpt2"
    assert any(k.startswith("lm.return_embedding.") for k in load_agent_model(tmp_path / "dt" / "checkpoint")
               .model.state_dict())
