"""The task models beside the agents follow a device as the trainers do: the VisDial guesser, the Reddit upvote
classifier and the LMRL-Gym linear reference make their tensors on their device (checked on ``meta``, which, as
CUDA does, refuses to mix with a CPU tensor, and with ``tests.device_helpers.forgotten_device``), train on their
config's ``device`` and take ``--device`` on their commands."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode

from rlds_lang.reddit.data import RedditComment
from rlds_lang.reddit.upvote_model import UpvoteClassifier, UpvoteModelConfig
from tests.device_helpers import forgotten_device, tensors_off
from trainers.core import device as devices
from trainers.core.device import DeviceError, module_device
from trainers.tasks.reddit_upvotes import UpvoteTrainConfig, train_upvote_model, upvote_loss
from trainers.tasks.visdial_guesser import Guesser, GuesserConfig, train_guesser

META = torch.device("meta")
TEXTS = ["a red dog on a sofa", "is it big yes", "two cats"]


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture
def on_meta(monkeypatch):
    """``--device`` values resolve to ``meta`` in the trainers (``resolve_device`` is imported when they run)."""
    monkeypatch.setattr(devices, "resolve_device", lambda spec="auto": META)


def _comments(n: int, split: str = "test") -> list[RedditComment]:
    return [RedditComment(index=i, comment_id=f"c{i}", parent_id="t3_p", subreddit="s", text=f"comment {i} words",
                          score=i % 3 - 1, parent_text="post", split=split, source=f"dump:{i}") for i in range(n)]


class _FirstStep(Exception):
    """Stops a training run after its first loss."""


def test_the_guesser_predicts_and_computes_its_loss_on_its_module_s_device():
    guesser = Guesser(GuesserConfig(buckets=64, dim=8, hidden=8), feature_dim=4)
    guesser.module.to(META)
    with forgotten_device():
        features = guesser.forward(TEXTS)
        loss = guesser.loss(TEXTS, np.zeros((len(TEXTS), 4), np.float32))
    assert features.device == META and features.shape == (3, 4)
    assert loss.device == META and loss.shape == ()
    loss.backward()
    assert tensors_off(guesser.module, META) == []


def test_the_guesser_trains_on_its_config_s_device(on_meta, monkeypatch, tmp_path):
    from rlds_lang.visdial.fixtures import write_fixture

    write_fixture(str(tmp_path), {"train": 2, "val": 1}, dim=8, seed=0)
    seen = []
    real_loss = Guesser.loss

    def first_loss(self, texts, targets):
        loss = real_loss(self, texts, targets)
        seen.append((loss.device, module_device(self.module)))
        raise _FirstStep

    monkeypatch.setattr(Guesser, "loss", first_loss)
    with pytest.raises(_FirstStep):
        train_guesser(str(tmp_path), GuesserConfig(buckets=32, dim=4, hidden=4, epochs=1, batch_size=4))
    assert seen == [(META, META)]


def test_the_upvote_classifier_computes_on_its_module_s_device():
    model = UpvoteClassifier(UpvoteModelConfig(buckets=64, dim=8))
    model.module.to(META)
    ids, offsets = model.batch(TEXTS)
    assert model.device == META and ids.device == META and offsets.device == META
    with forgotten_device():
        loss = upvote_loss(model, _comments(4), torch.nn.BCEWithLogitsLoss())
    assert model.logits(TEXTS).shape == (3,) and loss.device == META
    loss.backward()


def test_the_upvote_classifier_trains_on_its_config_s_device(on_meta):
    with forgotten_device():
        model = train_upvote_model(_comments(6), UpvoteTrainConfig(epochs=1, batch_size=4),
                                   UpvoteModelConfig(buckets=64, dim=8))
    assert model.device == META and tensors_off(model.module, META) == []
    assert model.info["train_comments"] == 6 and model.info["train_config"]["device"] == "auto"


def test_the_task_models_refuse_an_absent_device_before_any_work(no_cuda):
    with pytest.raises(DeviceError, match="--device cuda: this machine has no CUDA device"):
        train_upvote_model(_comments(4), UpvoteTrainConfig(device="cuda"))
    with pytest.raises(DeviceError, match="--device cuda:1: this machine has no CUDA device"):
        train_guesser("/nonexistent", GuesserConfig(device="cuda:1"))


@pytest.mark.parametrize("command", [["visdial", "guesser", "--manual-dir", "M"], ["reddit", "upvotes", "--data", "D"]])
def test_the_task_model_commands_take_device_and_stop_on_an_absent_one(command, no_cuda, tmp_path, capsys):
    from trainers.cli.main import main

    with pytest.raises(SystemExit) as stopped:
        main([*command, "--out", str(tmp_path / "out"), "--device", "cuda"])
    assert stopped.value.code == 2 and not (tmp_path / "out").exists()
    assert "--device cuda: this machine has no CUDA device" in capsys.readouterr().err


class _MixedDevices(TorchFunctionMode):
    """Raises for a torch operation given tensors on two devices (CPU scalars aside, which torch allows anywhere):
    meta lets some of them pass (a matrix product, an index), CUDA would not compute them on the GPU."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [t for t in torch.utils._pytree.tree_leaves((args, kwargs))
                   if isinstance(t, torch.Tensor) and not (t.device.type == "cpu" and t.dim() == 0)]
        kinds = {t.device.type for t in tensors}
        if len(kinds) > 1:
            raise AssertionError(f"{func} mixes tensors on {sorted(kinds)}")
        return func(*args, **kwargs)


def test_the_linear_reference_makes_its_tensors_on_its_device():
    from trainers.experiments.lmrl_gym.linear import linear_reference

    with forgotten_device(), _MixedDevices():  # one step, no measurement: meta tensors have no values to read
        report = linear_reference(train_games=4, held_out_games=2, steps=1, batch=8, device=META)
    assert report.steps == [] and report.states > 0


def test_the_task_model_commands_train_on_their_device_option(monkeypatch, tmp_path):
    """``--device`` reaches the config each command trains with (``auto`` inside it would be the command's choice
    too, but a config of its own is what a later call of the training function reads)."""
    from trainers.cli import tasks
    from trainers.cli.main import main

    configs = []

    def captured(*args):
        configs.append(args[1])
        raise _FirstStep

    monkeypatch.setattr(tasks, "train_guesser", captured)
    monkeypatch.setattr(tasks, "train_upvote_model", captured)
    monkeypatch.setattr(tasks, "read_comments", lambda *args: _comments(2))
    for command in (["visdial", "guesser", "--manual-dir", "M"], ["reddit", "upvotes", "--data", "D"]):
        with pytest.raises(_FirstStep):
            main([*command, "--out", str(tmp_path / "out"), "--device", "cpu"])
    assert [config.device for config in configs] == ["cpu", "cpu"]
