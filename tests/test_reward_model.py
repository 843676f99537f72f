"""The reward model's parts against hand computations: the noisy Bradley-Terry loss and its gradient, equal
and skip labels, the adaptive L2 controller, the running-window normaliser, ensemble disagreement, padding,
and the checkpoint round trip."""

from __future__ import annotations

import dataclasses
import doctest
import math
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the reward model needs torch (installed by setup.cfg)")

from rlds_lang.preferences.types import Judgement, Label  # noqa: E402
from tests.reward_fixtures import judgements, text_clip, vector_clip  # noqa: E402
from trainers.algorithms.reward import losses as reward_losses  # noqa: E402
from trainers.algorithms.reward import networks as reward_nets
from trainers.algorithms.reward.losses import (  # noqa: E402
    AdaptiveL2,
    RewardNormalizer,
    preference_loss,
)
from trainers.algorithms.reward.model import RewardModel, RewardModelConfig  # noqa: E402
from trainers.algorithms.reward.trainer import (  # noqa: E402
    RewardModelTrainer,
    RewardTrainerFactory,
    trainable,
)
from trainers.core.model import ModelConfig  # noqa: E402

TINY = RewardModelConfig(members=3, batch_size=8, hidden=16, lr=1e-3,
                         model=ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=32))


def built(make=vector_clip, n=24, config=TINY) -> tuple[RewardModelTrainer, list]:
    data = judgements(make, n, seed=3)
    trainer = RewardModelTrainer(config)
    trainer.build(data)
    return trainer, data


def test_docstring_examples_run():
    for module in (reward_losses, reward_nets):
        assert doctest.testmod(module, raise_on_error=False).failed == 0


def test_noise_model_gradient_matches_hand_computation_and_differs_from_plain_bradley_terry():
    eps = 0.1
    left = torch.tensor([2.0, -1.0, 0.5, 3.0], dtype=torch.float64, requires_grad=True)
    right = torch.tensor([0.0, 0.0, 0.5, -2.0], dtype=torch.float64)
    y = torch.tensor([1.0, 1.0, 0.5, 0.0], dtype=torch.float64)
    preference_loss(left, right, y, eps, reduction="sum").backward()
    noisy = left.grad.clone()
    left.grad = None
    preference_loss(left, right, y, 0.0, reduction="sum").backward()
    plain = left.grad.clone()
    for i in range(4):
        d = (left[i] - right[i]).item()
        s = 1 / (1 + math.exp(-d))
        p = (1 - eps) * s + eps / 2
        # dL/dd = -(y / P - (1 - y) / (1 - P)) * dP/dd, with dP/dd = (1 - eps) s (1 - s)
        expected = -(y[i].item() / p - (1 - y[i].item()) / (1 - p)) * (1 - eps) * s * (1 - s)
        assert noisy[i].item() == pytest.approx(expected, rel=1e-9)
        assert plain[i].item() == pytest.approx(s - y[i].item(), rel=1e-9)   # plain BT: sigmoid(d) - y
    assert noisy[2].item() == pytest.approx(0.0, abs=1e-12)                  # equal label at d = 0: no push
    assert not torch.allclose(noisy, plain)
    # a confidently wrong prediction: plain BT keeps pushing (gradient -> 1), the noise model lets go
    wrong = torch.tensor([-12.0], dtype=torch.float64, requires_grad=True)
    preference_loss(wrong, torch.zeros(1, dtype=torch.float64), torch.ones(1, dtype=torch.float64), eps).backward()
    assert abs(wrong.grad.item()) < 1e-3


def test_noise_model_bounds_probability_and_loss():
    p = reward_losses.preference_probability(torch.tensor([-50.0, 0.0, 50.0]), torch.zeros(3), 0.1)
    assert torch.allclose(p, torch.tensor([0.05, 0.5, 0.95]))
    loss = preference_loss(torch.tensor([-50.0]), torch.zeros(1), torch.ones(1), 0.1)
    assert loss.item() == pytest.approx(-math.log(0.05), rel=1e-5)
    with pytest.raises(ValueError, match="noise"):
        preference_loss(torch.zeros(1), torch.zeros(1), torch.ones(1), 1.0)


def test_equal_is_a_half_target_and_skip_is_never_trained_on():
    trainer, data = built()
    left, right = data[0].left, data[0].right
    equal = Judgement(left, right, Label.EQUAL, "synthetic")
    skip = Judgement(left, right, Label.SKIP, "synthetic")
    assert trainable([equal, skip, data[1]]) == [equal, data[1]]
    # the loss of an equal label is the cross-entropy against 0.5 at both orders
    returns = torch.from_numpy(trainer.model.member_returns([left, right]))
    expected = preference_loss(returns[0, 0:1], returns[1, 0:1], torch.tensor([0.5], dtype=returns.dtype), 0.1)
    with torch.no_grad():
        trainer.model.members.eval()
        got = trainer.member_loss(0, [equal])
    assert got.item() == pytest.approx(expected.item(), rel=1e-5)
    # only skips: nothing to train on, nothing changes
    before = [p.clone() for p in trainer.model.members.parameters()]
    assert trainer.train_step([skip, skip], [skip]) == {}
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.model.members.parameters()))
    assert trainer.step == 0


def test_adaptive_l2_controller_keeps_the_ratio_in_band():
    l2 = AdaptiveL2(coefficient=1e-3, low=1.1, high=1.5, factor=2.0, minimum=1e-4, maximum=4e-3)
    assert l2.update(val_loss=2.0, train_loss=1.0) == pytest.approx(2e-3)    # ratio 2.0 > 1.5: more L2
    assert l2.update(val_loss=1.3, train_loss=1.0) == pytest.approx(2e-3)    # in band: unchanged
    assert l2.update(val_loss=1.0, train_loss=1.0) == pytest.approx(1e-3)    # ratio 1.0 < 1.1: less L2
    assert l2.update(val_loss=9.0, train_loss=1.0) == pytest.approx(2e-3)
    assert l2.update(val_loss=9.0, train_loss=1.0) == pytest.approx(4e-3)
    assert l2.update(val_loss=9.0, train_loss=1.0) == pytest.approx(4e-3)    # capped at maximum
    assert l2.update(val_loss=float("nan"), train_loss=1.0) == pytest.approx(4e-3)
    for _ in range(10):
        l2.update(val_loss=0.5, train_loss=1.0)
    assert l2.coefficient == pytest.approx(1e-4)                             # floored at minimum


def test_trainer_moves_each_members_l2_by_its_validation_over_training_loss():
    config = dataclasses.replace(TINY, val_every=1, l2=1e-3, l2_factor=2.0, lr=1e-2)
    trainer, data = built(config=config)
    flip = {Label.LEFT: Label.RIGHT, Label.RIGHT: Label.LEFT, Label.EQUAL: Label.EQUAL}
    # training labels that contradict the validation ones: fitting them raises the validation loss
    train = [dataclasses.replace(j, label=flip[j.label]) for j in data[:6]]
    val = judgements(vector_clip, 30, seed=9, prefix="v")
    for _ in range(30):
        before = [c.coefficient for c in trainer.l2]
        metrics = trainer.train_step(train, val)
        for m in range(config.members):
            ratio = metrics[f"val_loss/{m}"] / metrics[f"train_eval_loss/{m}"]
            expected = before[m] * 2.0 if ratio > 1.5 else before[m] / 2.0 if ratio < 1.1 else before[m]
            expected = min(max(expected, trainer.l2[m].minimum), trainer.l2[m].maximum)
            assert trainer.l2[m].coefficient == pytest.approx(expected)
    # the members fit labels the validation set contradicts: L2 rose above its start for every member
    assert min(c.coefficient for c in trainer.l2) > 1e-3


def test_normaliser_gives_zero_mean_unit_variance_over_its_window():
    rng = np.random.default_rng(0)
    norm = RewardNormalizer(window=50)
    norm.observe(rng.normal(100.0, 7.0, size=(30, 3)))                       # old steps, soon out of the window
    recent = np.stack([rng.normal(2.0, 1.0, 50), rng.normal(-5.0, 10.0, 50), rng.normal(0.0, 0.1, 50)], axis=1)
    norm.observe(recent)
    assert len(norm) == 50
    out = norm.normalise(recent)
    assert out.mean() == pytest.approx(0.0, abs=1e-9) and out.std() == pytest.approx(1.0, rel=1e-9)
    # each member is standardised on its own: rescaling one member's rewards changes nothing
    scaled = recent * np.array([1.0, 10.0, 1.0]) + np.array([0.0, 3.0, 0.0])
    other = RewardNormalizer(window=50)
    other.observe(scaled)
    assert np.allclose(other.normalise(scaled), out)
    restored = RewardNormalizer(window=50)
    restored.load_state(norm.state())
    assert np.allclose(restored.normalise(recent[:5]), norm.normalise(recent[:5]))


def test_normaliser_running_sums_match_a_pass_over_the_window_on_a_long_stream():
    rng = np.random.default_rng(1)
    norm, window = RewardNormalizer(window=20), []
    for t in range(1000):  # one step at a time, drifting far from zero: the wrapper's use
        row = rng.normal(1e3 + t, 1.0 + t % 7, size=3)
        norm.observe(row[None])
        window = (window + [row])[-20:]
    data = np.stack(window)
    mean, std = data.mean(0), data.std(0)
    averaged = ((data - mean) / std).mean(1)
    probe = rng.normal(1e3 + 1000, 3.0, size=(4, 3))
    expected = (((probe - mean) / std).mean(1) - averaged.mean()) / averaged.std()
    assert np.allclose(norm.normalise(probe), expected, rtol=1e-6, atol=1e-6)


def test_predict_normalises_over_recent_clips_and_gives_padding_zero():
    trainer, data = built(make=text_clip)
    model = trainer.model
    clips = [j.left for j in data]
    rewards = model.predict(clips)
    real = np.concatenate([r[~np.asarray(c.padding)] for r, c in zip(rewards, clips)])
    assert real.mean() == pytest.approx(0.0, abs=1e-6) and real.std() == pytest.approx(1.0, rel=1e-5)
    assert all(r[np.asarray(c.padding)].tolist() == [0.0] for r, c in zip(rewards, clips))
    # padded steps' content never matters
    clip = clips[0]
    changed = dataclasses.replace(clip, observations=list(clip.observations[:-1]) + ["🟩🟩🟩🟩🟩"],
                                  actions=list(clip.actions[:-1]) + ["zzzzz"])
    assert np.allclose(model.member_returns([clip]), model.member_returns([changed]))


def test_disagreement_is_the_std_of_member_preferences():
    trainer, data = built()
    pairs = [(j.left, j.right) for j in data[:6]]
    returns = trainer.model.member_returns([c for p in pairs for c in p])
    probs = 1 / (1 + np.exp(-(returns[0::2] - returns[1::2])))
    got = trainer.disagreement(pairs)
    assert got.shape == (6,) and np.allclose(got, probs.std(axis=1)) and (got > 0).all()
    # identical members agree everywhere
    for member in trainer.model.members[1:]:
        member.load_state_dict(trainer.model.members[0].state_dict())
    assert np.allclose(trainer.disagreement(pairs), 0.0)
    assert RewardModelTrainer(TINY).disagreement(pairs).tolist() == [0.0] * 6   # untrained: no opinion


def test_bootstrap_counts_are_per_member_and_stable():
    trainer, data = built(n=200)
    weights = np.stack([trainer.bootstrap_weights(j) for j in data])
    assert weights.shape == (200, 3) and weights.mean() == pytest.approx(1.0, abs=0.2)
    assert not np.array_equal(weights[:, 0], weights[:, 1])                   # each member its own resample
    again = RewardModelTrainer(TINY)
    assert np.array_equal(np.stack([again.bootstrap_weights(j) for j in data]), weights)


@pytest.mark.parametrize("make", [text_clip, vector_clip], ids=["text", "vector"])
def test_checkpoint_round_trip_gives_identical_predictions(tmp_path, make):
    trainer, data = built(make=make)
    trainer.train_step(data, data)
    model = trainer.model
    clips = [j.left for j in data[:5]] + [j.right for j in data[:5]]
    model.predict(clips)                                                       # fills the normaliser's window
    path = trainer.save(tmp_path / "checkpoint")
    assert sorted(p.name for p in path.iterdir()) == sorted(
        ["config.json", "weights.pt", "normalisation.npy", "trainer_state.pt"]  # the trainer's: exact resume
        + (["tokenizer.json"] if make is text_clip else []))
    assert sorted(p.name for p in model.save(tmp_path / "model_only").iterdir()) == sorted(
        ["config.json", "weights.pt", "normalisation.npy"] + (["tokenizer.json"] if make is text_clip else []))
    trainer.train_step(data, data)
    assert trainer.save(tmp_path / "checkpoint") == path                     # rewritten in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint", "model_only"]  # no temporary folder left
    loaded = RewardModel.load(path)
    assert loaded.state["step"] == 2 and loaded.inputs == model.inputs
    for a, b in zip(model.predict(clips, update_normalisation=False), loaded.predict(clips, update_normalisation=False)):
        assert np.array_equal(a, b)
    assert np.array_equal(model.disagreement([(clips[0], clips[1])]), loaded.disagreement([(clips[0], clips[1])]))
    with pytest.raises(FileNotFoundError, match="no config.json"):
        RewardModel.load(tmp_path)


def test_image_observations_use_the_conv_net():
    rng = np.random.default_rng(0)

    def image_clip(rng, clip_id):
        obs = [rng.random((12, 12, 1), dtype=np.float32) for _ in range(3)]
        return vector_clip(rng, clip_id, length=3).__class__(clip_id, "e", 0, 3, obs, [np.array([1.0, 0.0])] * 3,
                                                               [0.0] * 3, [False] * 3)

    data = judgements(image_clip, 6, seed=1)
    trainer = RewardModelTrainer(dataclasses.replace(TINY, batch_norm=True, dropout=0.5))
    metrics = trainer.train_step(data, data)
    assert trainer.model.inputs.kind == "image" and math.isfinite(metrics["loss"])
    assert any(isinstance(m, torch.nn.BatchNorm2d) for m in trainer.model.members[0].modules())
    assert trainer.model.member_returns([data[0].left]).shape == (1, 3)
    del rng


def test_factory_pickles_and_makes_a_fresh_trainer():
    factory = pickle.loads(pickle.dumps(RewardTrainerFactory(TINY)))
    trainer = factory()
    assert isinstance(trainer, RewardModelTrainer) and trainer.config == TINY and trainer.model is None
    with pytest.raises(RuntimeError, match="not been trained"):
        trainer.save("/nonexistent/never-written")
