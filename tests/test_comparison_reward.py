"""Detail 12 of the PPO recipe: the reward model trained on best-of-K comparisons (trainers.algorithms.reward.comparison)."""

import dataclasses

import numpy as np
import pytest
import torch

from rlds_lang.preferences.types import Clip
from trainers.algorithms.reward.comparison import (
    Comparison,
    ComparisonConfig,
    best_of,
    build_comparison_model,
    candidate_scores,
    comparison_accuracy,
    label_groups,
    train_on_comparisons,
)
from trainers.algorithms.reward.losses import comparison_loss
from trainers.algorithms.reward.model import RewardModel, RewardModelConfig
from trainers.core.model import ModelConfig

TINY = RewardModelConfig(members=2, tokenizer="continuation", max_tokens=32,
                         model=ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=48))
WORDS = ["sad", "bad", "dim", "odd", "fun", "joy", "sun", "wow"]  # the last four are "good"


def clip(query: str, response: str, name: str) -> Clip:
    return Clip(f"{name}:0", name, 0, 1, [query], [response], [0.0], [False])


def groups(n: int, seed: int, k: int = 4) -> tuple[list[list[Clip]], list[list[float]]]:
    """Queries with k responses of three words; true score = number of good words (ties happen)."""
    rng = np.random.default_rng(seed)
    all_groups, all_scores = [], []
    for i in range(n):
        responses = [" ".join(rng.choice(WORDS, 3)) for _ in range(k)]
        all_groups.append([clip(f"q{i % 5}", r, f"g{seed}-{i}-{j}") for j, r in enumerate(responses)])
        all_scores.append([sum(w in WORDS[4:] for w in r.split()) for r in responses])
    return all_groups, all_scores


def test_best_of_is_the_single_top_and_ties_are_skipped():
    assert best_of([0.1, 0.7, -0.2, 0.3]) == 1
    assert best_of([0.5, 0.5, 0.0, 0.0]) is None
    assert best_of([0.5, 0.45, 0.0], tolerance=0.1) is None and best_of([0.5, 0.45, 0.0], tolerance=0.01) == 0
    g, s = groups(40, seed=0)
    comparisons, ties = label_groups(g, s)
    assert len(comparisons) + ties == 40 and ties > 0
    assert all(s[g.index(list(c.candidates))][c.best] == max(s[g.index(list(c.candidates))]) for c in comparisons)
    with pytest.raises(ValueError, match="best=4"):
        Comparison(tuple(g[0]), 4)


def test_recipe_model_has_a_linear_head_initialised_as_the_recipe_and_survives_a_reload(tmp_path):
    model = build_comparison_model(clip("q", "a", "x"), TINY, ComparisonConfig())
    head = model.members[0].head
    assert isinstance(head, torch.nn.Linear) and head.bias.abs().max() == 0
    d = head.in_features
    std = torch.cat([m.head.weight.flatten() for m in model.members]).std().item()
    assert 0.5 / np.sqrt(d + 1) < std < 1.5 / np.sqrt(d + 1)
    path = model.save(tmp_path / "checkpoint")
    again = RewardModel.load(path)
    clips = [clip("q1", "fun joy", "a"), clip("q2", "sad bad", "b")]
    np.testing.assert_allclose(again.member_returns(clips), model.member_returns(clips), rtol=1e-6)


def test_one_epoch_sees_each_comparison_once_with_the_lr_annealed_to_zero(monkeypatch):
    g, s = groups(60, seed=1)
    comparisons, _ = label_groups(g, s)
    model = build_comparison_model(comparisons[0].candidates[0], TINY, ComparisonConfig())
    seen = []
    original = candidate_scores

    def spy(model, member, batch):
        seen.append((member, [id(c) for c in batch]))
        return original(model, member, batch)

    monkeypatch.setattr("trainers.algorithms.reward.comparison.candidate_scores", spy)
    metrics = train_on_comparisons(model, comparisons, ComparisonConfig(batch_size=8, lr=1e-3))
    steps = -(-len(comparisons) // 8)
    assert len(metrics) == steps and [m["step"] for m in metrics] == list(range(1, steps + 1))
    for member in (0, 1):
        ids = [i for m, batch in seen if m == member for i in batch]
        assert sorted(ids) == sorted(id(c) for c in comparisons)  # each comparison exactly once per member
    lrs = [m["lr"] for m in metrics]
    assert lrs[0] == pytest.approx(1e-3) and lrs[-1] == pytest.approx(1e-3 / steps)
    assert all(a > b for a, b in zip(lrs, lrs[1:]))
    assert model.state["comparison_steps"] == steps


def test_training_on_best_of_four_learns_the_labeller_and_changes_the_model():
    train, train_scores = groups(400, seed=2)
    test, test_scores = groups(200, seed=3)
    comparisons, _ = label_groups(train, train_scores)
    held_out, _ = label_groups(test, test_scores)
    torch.manual_seed(0)
    model = build_comparison_model(comparisons[0].candidates[0], TINY, ComparisonConfig())
    before = [p.detach().clone() for p in model.members.parameters()]
    accuracy_before = comparison_accuracy(model, held_out)
    metrics = train_on_comparisons(model, comparisons, ComparisonConfig(epochs=3, batch_size=16, lr=3e-3))
    assert any(not torch.equal(a, b) for a, b in zip(before, model.members.parameters()))
    assert np.mean([m["loss"] for m in metrics[-5:]]) < np.mean([m["loss"] for m in metrics[:5]])
    accuracy = comparison_accuracy(model, held_out)
    assert accuracy > 0.6 and accuracy > accuracy_before + 0.2, (accuracy_before, accuracy)  # chance: 0.25


def test_pairwise_is_the_two_candidate_special_case():
    g, s = groups(30, seed=4, k=2)
    comparisons, _ = label_groups(g, s)
    model = build_comparison_model(comparisons[0].candidates[0], TINY, ComparisonConfig(candidates=2))
    scores = candidate_scores(model, 0, comparisons).detach()
    chosen = scores[torch.arange(len(comparisons)), [c.best for c in comparisons]]
    other = scores[torch.arange(len(comparisons)), [1 - c.best for c in comparisons]]
    bradley_terry = -torch.nn.functional.logsigmoid(chosen - other).mean()
    assert float(comparison_loss(scores, torch.tensor([c.best for c in comparisons]))) == pytest.approx(
        float(bradley_terry), rel=1e-5)
    with pytest.raises(ValueError, match="same number of candidates"):
        train_on_comparisons(model, [comparisons[0], Comparison(tuple(g[0]) + (g[1][0],), 0)], ComparisonConfig())


def test_the_trunk_starts_from_the_language_model_when_asked(tmp_path):
    from trainers.algorithms.registry import load_agent_model
    from trainers.experiments.ppo.sentiment_base import BaseLMConfig, pretrain_base

    base = pretrain_base(BaseLMConfig(out=str(tmp_path / "base"), steps=2, max_examples=16,
                                      model=ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=96)))
    lm = load_agent_model(base).lm
    model = build_comparison_model(clip("q", "a", "x"), TINY, ComparisonConfig(init_from=str(base)))
    for member in model.members:
        for name, tensor in lm.transformer.state_dict().items():
            assert torch.equal(member.trunk.state_dict()[name], tensor), name
    assert model.config.model == dataclasses.replace(load_agent_model(base).config.model)
    assert model.config.head == "linear" and model.state["init_from"] == str(base)
