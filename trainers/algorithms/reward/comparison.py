"""Detail 12 of the PPO recipe: a reward model trained on comparisons of K candidate responses.

lm-human-preferences (Ziegler et al. 2019) trains its reward model differently from the DRLHP ensemble of
``trainers.algorithms.reward.trainer``: a labeller sees ``K`` (4) responses to one query and picks the best; the
model scores each query + response at its last token and is trained with cross-entropy over the ``K``
scores (``ppo_losses.comparison_loss``; ``K = 2`` is the pairwise Bradley-Terry case without a noise term),
for one epoch over the labels with its learning rate annealed linearly to 0. The model starts from the
pretrained language model (its transformer) with a fresh linear head initialised ``N(0, 1/sqrt(d+1))``.

Here the model is our ``RewardModel`` (so PPO loads it with ``--reward model:<dir>`` like any other): each
candidate is a one-step clip ``(query, response)``, each member a ``TextStepReward`` with the ``linear``
head, its trunk optionally copied from an LM checkpoint (``init_from``). The synthetic labeller is the best
true score (``best_of``); a top tie carries no preference and is skipped (counted), as a person could skip.

Example::

    config = ComparisonConfig(init_from="runs/sentiment/base/checkpoint")
    model = build_comparison_model(comparisons[0].candidates[0], reward_config, config)
    metrics = train_on_comparisons(model, comparisons, config)
    model.save("runs/reward/checkpoint")
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import numpy as np
import torch

from trainers.algorithms.reward.losses import comparison_loss
from trainers.core.device import resolve_device


@dataclasses.dataclass
class ComparisonConfig:
    """Training on best-of-K comparisons (each default with its source)."""

    #: responses per query shown to the labeller (recipe: 4).
    candidates: int = 4
    #: passes over the labels (recipe: 1).
    epochs: int = 1
    #: comparisons per optimizer step (ours: small, for one CPU process).
    batch_size: int = 8
    #: Adam learning rate (recipe: 5e-5 for GPT-2 124M).
    lr: float = 5e-5
    #: anneal the learning rate linearly to 0 over the training steps (recipe: yes).
    anneal_lr: bool = True
    #: an LM checkpoint whose transformer initialises each member's trunk (recipe: the pretrained LM);
    #: None trains from random weights.
    init_from: str | None = None
    #: two true scores closer than this are a tie for the synthetic labeller (ours).
    tie_tolerance: float = 0.0
    #: seed of the batch order.
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class Comparison:
    """``K`` candidate clips answering one query and the index of the labeller's choice."""

    candidates: tuple[Any, ...]
    best: int

    def __post_init__(self) -> None:
        if not 0 <= self.best < len(self.candidates):
            raise ValueError(f"best={self.best} is not an index of the {len(self.candidates)} candidates")


def best_of(scores: Sequence[float], tolerance: float = 0.0) -> int | None:
    """The synthetic labeller: the index of the single highest score, or None when another is within
    ``tolerance`` of it (a tie carries no preference).

    >>> best_of([0.1, 0.7, -0.2, 0.3]), best_of([0.5, 0.5, 0.0, 0.0])
    (1, None)
    """
    values = np.asarray(scores, np.float64)
    top = int(values.argmax())
    if np.sum(values >= values[top] - tolerance) > 1:
        return None
    return top


def label_groups(groups: Sequence[Sequence[Any]], scores: Sequence[Sequence[float]],
                 tolerance: float = 0.0) -> tuple[list[Comparison], int]:
    """Comparisons of every group of candidate clips by ``best_of`` their true scores, and how many ties were
    skipped."""
    comparisons, ties = [], 0
    for group, values in zip(groups, scores, strict=True):
        best = best_of(values, tolerance)
        if best is None:
            ties += 1
        else:
            comparisons.append(Comparison(tuple(group), best))
    return comparisons, ties


def build_comparison_model(example_clip: Any, reward_config: Any, config: ComparisonConfig) -> Any:
    """A fresh ``RewardModel`` for clips like ``example_clip`` with the recipe's linear head, each member's trunk
    copied from ``config.init_from`` when given (the reward config's model and tokenizer are taken from it), on
    ``reward_config``'s device (``trainers.core.device``)."""
    from trainers.algorithms.reward.model import RewardModel, build_members
    from trainers.core.checkpoint import built_from_checkpoint
    from trainers.core.pretrained import task_tokenizer
    from trainers.algorithms.reward.networks import infer_inputs

    inputs = infer_inputs([example_clip])
    if inputs.kind != "text":
        raise ValueError(f"comparison training scores query + response text; the clips hold {inputs.kind} steps")
    lm = tokenizer = None
    if config.init_from:
        from trainers.algorithms.registry import load_agent_model

        loaded = load_agent_model(config.init_from)
        lm, tokenizer = loaded.lm, loaded.tokenizer
        # a checkpoint fine-tuned from a pretrained LM: its trunk's architecture is its own lm/ folder's
        reward_config = dataclasses.replace(reward_config,
                                            model=built_from_checkpoint(loaded.config, config.init_from).model)
    reward_config = dataclasses.replace(reward_config, head="linear")
    tokenizer = tokenizer or task_tokenizer(reward_config)
    members = build_members(inputs, reward_config, tokenizer)
    if lm is not None:
        for member in members:
            member.trunk.load_state_dict(lm.base_model.state_dict())
    return RewardModel(members, inputs, tokenizer, reward_config,
                       state={"trained_on": "comparisons", "init_from": config.init_from}).to(
                           resolve_device(getattr(reward_config, "device", "auto")))


def candidate_scores(model: Any, member: int, comparisons: Sequence[Comparison]) -> torch.Tensor:
    """Member ``member``'s scores ``[comparisons, K]`` of every candidate (with gradient, current mode)."""
    from trainers.algorithms.reward.networks import clip_returns

    clips = [clip for c in comparisons for clip in c.candidates]
    steps, owner = model.encode(clips)
    returns = clip_returns(model.members[member](steps), owner, len(clips))
    return returns.view(len(comparisons), -1)


def comparison_accuracy(model: Any, comparisons: Sequence[Comparison]) -> float:
    """Share of comparisons whose choice has the ensemble's highest mean raw score (chance: 1/K)."""
    if not comparisons:
        return float("nan")
    clips = [clip for c in comparisons for clip in c.candidates]
    returns = model.member_returns(clips).mean(axis=1).reshape(len(comparisons), -1)
    return float(np.mean(returns.argmax(axis=1) == np.array([c.best for c in comparisons])))


def train_on_comparisons(model: Any, comparisons: Sequence[Comparison], config: ComparisonConfig,
                         progress: bool = False) -> list[dict[str, float]]:
    """Trains every member for ``config.epochs`` passes over ``comparisons`` (a fresh seeded order per member
    and epoch, each comparison once per pass) with cross-entropy over the candidates and Adam, the learning
    rate annealed linearly to 0; returns each step's metrics (``loss``, ``accuracy`` and ``lr`` of the step,
    averaged over members)."""
    from tqdm import tqdm

    if not comparisons:
        raise ValueError("no comparisons to train on (every group was a tie?)")
    sizes = {len(c.candidates) for c in comparisons}
    if len(sizes) != 1:
        raise ValueError(f"every comparison needs the same number of candidates, got {sorted(sizes)}")
    per_epoch = math.ceil(len(comparisons) / config.batch_size)
    total = per_epoch * config.epochs
    history: list[dict[str, list[float]]] = [{"loss": [], "accuracy": [], "lr": []} for _ in range(total)]
    model.members.train()
    for m, member in enumerate(model.members):
        optimizer = torch.optim.Adam(member.parameters(), lr=config.lr)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda k: 1.0 - k / total if config.anneal_lr else 1.0)
        rng = np.random.default_rng([config.seed, m])
        bar = tqdm(total=total, desc=f"reward member {m}", disable=not progress)
        step = 0
        for _ in range(config.epochs):
            order = rng.permutation(len(comparisons))
            for start in range(0, len(order), config.batch_size):
                batch = [comparisons[i] for i in order[start:start + config.batch_size]]
                scores = candidate_scores(model, m, batch)
                best = torch.tensor([c.best for c in batch], device=scores.device)
                loss = comparison_loss(scores, best)
                history[step]["lr"].append(optimizer.param_groups[0]["lr"])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                schedule.step()
                history[step]["loss"].append(float(loss.detach()))
                history[step]["accuracy"].append(float((scores.detach().argmax(1) == best).float().mean()))
                step += 1
                bar.update(1)
                bar.set_postfix(loss=f"{float(loss.detach()):.3f}")
        bar.close()
    model.members.eval()
    model.state.update({"comparison_steps": total, "comparisons": len(comparisons)})
    return [{key: float(np.mean(values)) for key, values in row.items()} | {"step": k + 1}
            for k, row in enumerate(history)]


__all__ = ["Comparison", "ComparisonConfig", "best_of", "build_comparison_model", "candidate_scores",
           "comparison_accuracy", "label_groups", "train_on_comparisons"]
