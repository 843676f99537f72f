"""Training the reward-model ensemble: it learns separable synthetic preferences (text and vector clips),
takes the same step with or without gradient accumulation, and ``train_reward`` / ``rlds-lang train reward``
write a loadable checkpoint and ``metrics.json``."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the reward model needs torch (installed by setup.cfg)")

from rlds_lang.preferences.types import Judgement  # noqa: E402
from tests.reward_fixtures import dot_clip, judgements, label_by_return, text_clip, vector_clip  # noqa: E402
from trainers.algorithms.reward.model import RewardModel, RewardModelConfig  # noqa: E402
from trainers.algorithms.reward.trainer import (  # noqa: E402
    RewardModelTrainer,
    evaluate,
    held_out,
    split_held_out,
    split_validation,
    train_reward,
)
from trainers.core.model import ModelConfig  # noqa: E402
from trainers.core.plots import CURVES_ENV  # noqa: E402

SMALL = RewardModelConfig(members=2, batch_size=16, hidden=32, lr=1e-3, val_every=10,
                          model=ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=32))


@pytest.mark.parametrize("make,lr,steps", [(text_clip, 1e-3, 40), (vector_clip, 3e-3, 60), (dot_clip, 3e-3, 60)],
                         ids=["text", "vector", "image"])
def test_training_changes_the_model_and_raises_validation_accuracy(make, lr, steps):
    torch.manual_seed(0)
    train, val = judgements(make, 200, seed=1), judgements(make, 80, seed=2, prefix="v")
    trainer = RewardModelTrainer(dataclasses.replace(SMALL, lr=lr))
    trainer.build(train)
    initial = [p.detach().clone() for p in trainer.model.members.parameters()]
    before = evaluate(trainer.model, val, SMALL.noise)
    for _ in range(steps):
        metrics = trainer.train_step(train, val)
    after = evaluate(trainer.model, val, SMALL.noise)
    changed = [not torch.equal(a, b) for a, b in zip(initial, trainer.model.members.parameters())]
    assert all(changed)
    assert after["accuracy"] >= 0.85 and after["accuracy"] > before["accuracy"] + 0.1, (before, after)
    assert after["loss"] < before["loss"]
    for m in range(SMALL.members):                       # per-member metrics are reported at validation
        assert 0.0 <= metrics[f"val_accuracy/{m}"] <= 1.0 or steps % SMALL.val_every
    assert trainer.last_validation["val_accuracy"] >= 0.8


def test_gradient_accumulation_takes_the_same_step():
    data = judgements(vector_clip, 40, seed=4)
    grads, losses = [], []
    for batch_size, grad_accum in ((8, 1), (2, 4)):
        trainer = RewardModelTrainer(dataclasses.replace(SMALL, batch_size=batch_size, grad_accum=grad_accum))
        losses.append(trainer.train_step(data, [])["loss"])          # same seed: the same 8 judgements drawn
        grads.append(torch.cat([p.grad.flatten() for p in trainer.model.members.parameters()]))
    # the gradients the optimizer stepped with (Adam would blow float noise of near-zero entries up to lr)
    assert losses[0] == pytest.approx(losses[1], rel=1e-6)
    assert torch.allclose(grads[0], grads[1], rtol=1e-4, atol=1e-6) and grads[0].abs().sum() > 0


def _overlapping_judgements(games: int = 60, pairs: int = 400, seed: int = 5) -> list:
    """Judgements of random pairs over the clips of ``games`` games (two clips per game): games recur in many pairs."""
    rng = np.random.default_rng(seed)
    clips = [vector_clip(rng, f"game{g}:{start}") for g in range(games) for start in (0, 5)]
    out = []
    for _ in range(pairs):
        i, j = rng.choice(len(clips), size=2, replace=False)
        out.append(Judgement(clips[i], clips[j], label_by_return(clips[i], clips[j]), labeller="synthetic"))
    return out


def _episodes(judgements) -> set:
    return {clip.source_episode_id for j in judgements for clip in (j.left, j.right)}


def test_validation_is_held_out_by_episode_and_straddling_pairs_are_counted():
    data = _overlapping_judgements()
    split = split_held_out(data, 0.2)
    assert split.val and split.train and not _episodes(split.train) & _episodes(split.val)  # never trained on
    assert len(split.train) + len(split.val) + split.straddling == len(data) and split.straddling > 0
    assert split_validation(data, 0.2) == (split.train, split.val)  # deterministic, by the episode ids
    other = split_held_out(data, 0.2, seed=1)
    assert not _episodes(other.train) & _episodes(other.val) and other.val != split.val
    # a split by pair (a built dataset's validation split) shares games with training: those pairs are dropped
    by_pair_val, by_pair_train = data[:80], data[80:]
    kept = held_out(by_pair_train, by_pair_val)
    assert kept.overlapping == len(by_pair_val) - len(kept.val) > 0
    assert not _episodes(kept.val) & _episodes(by_pair_train)


def test_train_reward_reports_the_held_out_split(tmp_path):
    split = split_held_out(_overlapping_judgements(games=40, pairs=300, seed=8), 0.3)
    leaked = split.train[:7]  # validation pairs that share games with training (as a split by pair makes)
    config = dataclasses.replace(SMALL, out=str(tmp_path / "run"), steps=4, log_every=2, checkpoint_every=10)
    result = train_reward(config, split.train, split.val + leaked, progress=False)
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["validation_split"] == "by episode" and metrics["val_overlapping_dropped"] == 7
    assert metrics["val_labels"] == result.metrics["val_labels"] == len(split.val)


def test_train_reward_writes_checkpoint_and_metrics(tmp_path):
    train, val = judgements(vector_clip, 60, seed=6), judgements(vector_clip, 30, seed=7, prefix="v")
    config = dataclasses.replace(SMALL, out=str(tmp_path / "run"), steps=30, log_every=10, checkpoint_every=10,
                                 lr=3e-3)
    result = train_reward(config, train, val, progress=False)
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics == result.metrics and metrics["val_labels"] == 30 and metrics["train_labels"] == 60
    assert 0.5 < metrics["val_accuracy"] <= 1.0 and {"val_accuracy/0", "val_loss/1"} <= set(metrics)
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [10, 20, 30]
    loaded = RewardModel.load(tmp_path / "run" / "checkpoint")
    assert loaded.state["step"] == 30
    clips = [val[0].left, val[0].right]
    assert np.allclose(loaded.member_returns(clips), result.model.member_returns(clips))
    with pytest.raises(ValueError, match="trainable labels"):
        train_reward(config, train, [], progress=False)


def test_cli_train_reward_is_its_own_parser(tmp_path, monkeypatch):
    from trainers.cli import main as cli
    from trainers.cli import preferences as reward_cli

    args = cli.build_parser().parse_args(["train", "reward", "--dataset", "/data/prefs", "--out", str(tmp_path),
                                          "--members", "2", "--model.n_layer", "1", "--batch_norm", "true"])
    assert args.func is reward_cli.cmd_train_reward
    seen = {}

    def fake_train(config, progress):
        seen["config"] = config
        raise SystemExit(0)

    monkeypatch.setattr("trainers.algorithms.reward.trainer.train_reward", fake_train)  # imported when the command runs
    with pytest.raises(SystemExit):
        args.func(args)
    config = seen["config"]
    assert (config.dataset, config.members, config.model.n_layer, config.batch_norm) == ("/data/prefs", 2, 1, True)
    assert config.noise == 0.1 and config.out == str(tmp_path)
    # nested options start from the reward model's own defaults (its small transformer), not ModelConfig()'s
    assert (config.model.n_embd, config.model.n_positions) == (RewardModelConfig().model.n_embd,
                                                               RewardModelConfig().model.n_positions)


def test_cli_trains_from_a_dataset_through_read_judgements(tmp_path, monkeypatch, capsys):
    """``rlds-lang train reward`` end to end; the dataset reader is a stand-in with the signature of
    ``loggers.preferences_dataset.read_judgements(dataset, split)`` (the built-dataset round trip is prefs' test)."""
    import sys
    import types

    from trainers.cli.main import main

    data = {"train": judgements(vector_clip, 50, seed=11), "validation": judgements(vector_clip, 20, seed=12, prefix="v")}
    calls = []

    def read_judgements(dataset, split):
        calls.append((dataset, split))
        return iter(data[split])

    monkeypatch.setitem(sys.modules, "loggers.preferences_dataset", types.SimpleNamespace(read_judgements=read_judgements))
    out = tmp_path / "run"
    main(["train", "reward", "--dataset", "/built/prefs", "--out", str(out), "--steps", "20", "--members", "2",
          "--val_split", "validation", "--lr", "0.003", "--no-progress"])
    assert calls == [("/built/prefs", "train"), ("/built/prefs", "validation")]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["train_labels"] == 50 and metrics["val_labels"] == 20 and 0.0 <= metrics["val_accuracy"] <= 1.0
    assert "validation accuracy" in capsys.readouterr().out
    assert RewardModel.load(out / "checkpoint").state["step"] == 20
    # without --val_split, 20% of the training split's episodes are held out
    from trainers.algorithms.reward.trainer import read_dataset

    split = read_dataset(RewardModelConfig(dataset="/built/prefs"))
    assert len(split.train) + len(split.val) + split.straddling == 50 and split.val
    assert calls[-1] == ("/built/prefs", "train")


def test_epochs_count_passes_over_the_training_database_and_reach_the_predictor(tmp_path):
    from trainers.algorithms.reward.predictor import CheckpointRewardPredictor

    data = judgements(vector_clip, 16, seed=9)
    trainer = RewardModelTrainer(dataclasses.replace(SMALL, batch_size=8))
    metrics = [trainer.train_step(data) for _ in range(3)]
    assert [m["epochs"] for m in metrics] == [0.5, 1.0, 1.5]  # 8 judgements drawn per step from 16
    trainer.train_step(data + judgements(vector_clip, 16, seed=10, prefix="more"))  # the database grew to 32
    assert trainer.epochs == 1.75
    trainer.save(tmp_path / "checkpoint")
    predictor = CheckpointRewardPredictor(tmp_path / "checkpoint")
    assert (predictor.training_steps, predictor.training_epochs) == (4, 1)


def test_every_member_trains_on_its_own_bootstrap_of_the_labels(monkeypatch):
    """Member m's batches come from its Poisson(1) bootstrap: a judgement whose count is 0 for m is never in
    m's batches, and draws follow the counts -- uniform draws, or one bootstrap for all, would not."""
    data = judgements(vector_clip, 60, seed=11)
    trainer = RewardModelTrainer(dataclasses.replace(SMALL, members=3, batch_size=16))
    counts = np.array([trainer.bootstrap_weights(j) for j in data])  # [judgements, members]
    assert (counts == 0).any(axis=0).all() and not (counts[:, 0] == counts[:, 1]).all()  # members differ
    seen = {m: [] for m in range(3)}
    original = RewardModelTrainer.member_loss

    def spy(self, member, batch, reduction="mean"):
        seen[member].extend(data.index(j) for j in batch)
        return original(self, member, batch, reduction)

    monkeypatch.setattr(RewardModelTrainer, "member_loss", spy)
    for _ in range(40):
        trainer.train_step(data)
    for m in range(3):
        drawn = np.bincount(seen[m], minlength=len(data))
        assert drawn[counts[:, m] == 0].sum() == 0, f"member {m} trained on labels outside its bootstrap"
        expected = counts[:, m] / counts[:, m].sum() * drawn.sum()
        assert np.corrcoef(drawn, expected)[0, 1] > 0.8  # drawn in proportion to the counts


def test_a_resumed_run_equals_a_straight_one_and_logs_through_the_run_log(tmp_path, monkeypatch):
    monkeypatch.setenv(CURVES_ENV, "1")  # the suite turns the curves off (conftest.py); this test draws them
    train, val = judgements(vector_clip, 120, seed=11), judgements(vector_clip, 40, seed=12, prefix="v")
    config = dataclasses.replace(SMALL, steps=12, log_every=2, checkpoint_every=4, val_every=3,
                                 out=str(tmp_path / "straight"))
    straight = train_reward(config, train, val, progress=False)
    cut = dataclasses.replace(config, steps=8, out=str(tmp_path / "resumed"))
    train_reward(cut, train, val, progress=False)       # stops at step 8, its last checkpoint
    resumed = train_reward(dataclasses.replace(cut, steps=12), train, val, progress=False)
    for (name, a), b in zip(straight.model.members.state_dict().items(), resumed.model.members.state_dict().values()):
        assert torch.equal(a, b), name
    rows = [json.loads(line) for line in (tmp_path / "straight" / "metrics.jsonl").read_text().splitlines()]
    again = [json.loads(line) for line in (tmp_path / "resumed" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [2, 4, 6, 8, 10, 12] == [r["step"] for r in again]
    assert rows == again                                 # the same metrics, validation and L2 included
    assert (tmp_path / "straight" / "training_curves.png").stat().st_size > 1000
    fresh = train_reward(dataclasses.replace(config, out=str(tmp_path / "fresh"), resume=False), train, val,
                         progress=False)
    assert all(torch.equal(a, b) for a, b in zip(fresh.model.members.state_dict().values(),
                                                  straight.model.members.state_dict().values()))
