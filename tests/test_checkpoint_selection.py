"""Checkpoints kept every ``keep_every`` steps and the choice among them by held-out loss (LMRL-Gym's ``save_best``):
the kept folders are loadable models at their step, without the data stream's position, each candidate's loss is the run's own
objective over the held-out episodes, and the lowest one is chosen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.test_trainers import config
from tests.toy_data import build_dataset, wordle_like
from trainers.algorithms.registry import load_agent_model, train
from trainers.core.checkpoint import DATA_STATE, snapshots
from trainers.evaluation.selection import (
    CheckpointLoss,
    Selection,
    held_out_episodes,
    held_out_loss,
    select_by_held_out_loss,
)
from trainers.experiments.common import Experiment
from trainers.experiments.lmrl_gym.decodings import TrainedRow, save_best_rows
from transforms.token_mdp import TokenMDPConfig, token_batches
from transforms.torch_bridge import to_torch, trim_padding


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("selection")
    dataset = build_dataset(wordle_like(24, seed=5), root / "data")
    out = root / "bc"
    train("bc", config("bc", dataset, out, steps=6, checkpoint_every=2, keep_every=4, lr=1e-2), progress=False)
    return out


def test_kept_checkpoints_are_loadable_models_at_their_step(run):
    kept = snapshots(run)
    assert [step for step, _ in kept] == [4]
    folder = kept[0][1]
    assert not (folder / DATA_STATE).exists()
    model = load_agent_model(folder)
    assert model.step == 4
    latest = load_agent_model(run / "checkpoint")
    assert latest.step == 6
    differs = any(not torch.equal(a, b) for a, b in zip(model.model.state_dict().values(),
                                                         latest.model.state_dict().values()))
    assert differs, "the kept step-4 model should differ from the step-6 one"


def test_keep_every_must_be_a_multiple_of_checkpoint_every(tmp_path):
    with pytest.raises(ValueError, match="keep_every"):
        train("bc", config("bc", "unused", tmp_path, steps=2, checkpoint_every=2, keep_every=3), progress=False)


def test_held_out_loss_is_the_token_weighted_training_objective(run):
    model = load_agent_model(run / "checkpoint")
    episodes = held_out_episodes(model.config, "train", 24)
    mdp = TokenMDPConfig(max_length=model.config.max_length)
    batches = [trim_padding(to_torch(b)) for b in token_batches(episodes, model.tokenizer, mdp, 5).as_numpy_iterator()]
    with torch.no_grad():
        outs = [model.model(b) for b in batches]
    expected = sum(float(o.loss) * int(o.count) for o in outs) / sum(int(o.count) for o in outs)
    assert len(batches) > 1
    assert held_out_loss(model, episodes, batch_size=5) == pytest.approx(expected, rel=1e-6)
    # the batch size changes how the episodes are cut, never the token-weighted mean
    assert held_out_loss(model, episodes, batch_size=24) == pytest.approx(expected, rel=1e-5)


def test_selection_scores_every_kept_checkpoint_and_the_latest(run):
    selection = select_by_held_out_loss(run, load_agent_model, split="train", episodes=24)
    assert [c.step for c in selection.candidates] == [4, 6]
    for candidate in selection.candidates:
        model = load_agent_model(candidate.path)
        assert candidate.loss == pytest.approx(held_out_loss(model, held_out_episodes(model.config, "train", 24)))
    assert selection.best.loss == min(c.loss for c in selection.candidates)
    assert selection.last.step == 6
    assert "chosen" in selection.table()


def test_best_is_the_lowest_loss_not_the_last():
    candidates = (CheckpointLoss(2, Path("a"), 1.5), CheckpointLoss(4, Path("b"), 1.2), CheckpointLoss(6, Path("c"), 1.3))
    selection = Selection(candidates, "eval", 10)
    assert selection.best.step == 4 and selection.last.step == 6
    assert selection.table().splitlines()[3].endswith("chosen |")


def test_selection_needs_a_checkpoint(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        select_by_held_out_loss(tmp_path, load_agent_model)


def test_a_selection_reads_back_from_its_json_form():
    selection = Selection((CheckpointLoss(2, Path("run/a"), 1.5), CheckpointLoss(4, Path("run/b"), 1.25)), "train", 7)
    back = Selection.from_dict(json.loads(json.dumps(selection.to_dict())))
    assert back == selection and back.best.path == Path("run/b")
    with pytest.raises(ValueError, match="no field 'episodes'"):
        Selection.from_dict({k: v for k, v in selection.to_dict().items() if k != "episodes"})


def _no_load(folder):
    raise AssertionError(f"the cached selection should have been reused, not {folder} loaded")


def test_save_best_rows_reuses_the_selection_it_stored_for_the_same_checkpoints(run, tmp_path):
    row = TrainedRow("BC", Experiment("BC", "bc"), run, 6)
    kept = dict(snapshots(run))[4]
    stored = Selection((CheckpointLoss(4, kept, 0.5), CheckpointLoss(6, run / "checkpoint", 0.75)), "eval", 3)
    path = tmp_path / "selection-BC.json"
    path.write_text(json.dumps({"key": {"steps": [4, 6], "episodes": 3}, "selection": stored.to_dict()}))
    chosen, selections = save_best_rows([row], _no_load, tmp_path, episodes=3)
    assert selections == {"BC": stored}
    assert (chosen[0].name, chosen[0].step, chosen[0].checkpoint) == ("BC (save_best)", 4, kept)
    path.write_text(json.dumps({"key": {"steps": [4, 6], "episodes": 3}, "selection": {"split": "eval"}}))
    with pytest.raises(ValueError, match=f"{path.name}: .*no field 'candidates'"):
        save_best_rows([row], _no_load, tmp_path, episodes=3)
