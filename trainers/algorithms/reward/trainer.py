"""Training the reward-model ensemble (``trainers.algorithms.reward.model``) on judgements: the trainer object the
preference pipeline drives, and the ``rlds-lang train reward`` entry point.

One ``train_step(train, val)`` takes one Adam step of every member; ``epochs`` counts the passes over the
training database those steps add up to (``batch_size x grad_accum`` judgements drawn per step over the
database's size), the unit the preference pipeline's switch point and checkpoints count in. Member ``m`` draws its batch from its
own bootstrap of the training labels: every judgement gets a Poisson(1) count per member, fixed by a hash
of the pair and the member (an online bootstrap that stays the same as the label database grows or
wraps), and batches are drawn with probability proportional to the counts ("each [predictor] trained on
|D| triples sampled from D with replacement", paper section 2.2.3). Skipped pairs are never trained on;
equal ones are 0.5 targets. Every ``val_every`` steps the members are evaluated on the validation labels
and on a sample of training labels (eval mode), and each member's L2 coefficient is moved to keep
``val loss / train loss`` in ``[1.1, 1.5]``. Validation labels are held out by episode (``split_held_out``,
``held_out``): a validation clip is never trained on, so the validation loss the L2 controller reads is a
held-out one.

Example::

    from trainers.algorithms.reward.model import RewardModelConfig
    from trainers.algorithms.reward.trainer import RewardModelTrainer

    trainer = RewardModelTrainer(RewardModelConfig(members=3))
    for _ in range(100):
        metrics = trainer.train_step(train_judgements, val_judgements)
    trainer.save("runs/reward/checkpoint")
"""

from __future__ import annotations

import dataclasses
import json
import time
import zlib
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import torch

from trainers.algorithms.reward.losses import (
    AdaptiveL2,
    l2_penalty,
    preference_accuracy,
    preference_loss,
)
from trainers.algorithms.reward.model import (
    TRAINER_STATE,
    RewardModel,
    RewardModelConfig,
    build_members,
    eval_mode,
)
from trainers.algorithms.reward.networks import clip_returns, infer_inputs
from trainers.core.checkpoint import load_state_file
from trainers.core.device import chosen, placement_of
from trainers.core.logs import RunLog


def trainable(judgements: Iterable[Any]) -> list[Any]:
    """The judgements a reward model learns from: every label but ``skip`` (whose target is None)."""
    return [j for j in judgements if j.target is not None]


def _judgement_key(judgement: Any) -> str:
    return f"{judgement.left.clip_id}|{judgement.right.clip_id}|{judgement.labeller}"


@dataclasses.dataclass
class HeldOutSplit:
    """Training and validation judgements with no episode in common, and what was dropped to get there.

    Attributes:
      train, val: the judgements (skips included; ``trainable`` leaves them out later).
      straddling: judgements with one clip on each side, used for neither.
      overlapping: validation judgements dropped because a clip of theirs comes from an episode the training
        judgements hold (a validation split made by pair, e.g. a built dataset's ``validation``).
    """

    train: list[Any]
    val: list[Any]
    straddling: int = 0
    overlapping: int = 0

    def report(self) -> dict[str, Any]:
        """The counts for ``metrics.json``: how the split was made and what it dropped."""
        return {"validation_split": "by episode", "val_straddling_dropped": self.straddling,
                "val_overlapping_dropped": self.overlapping}


def held_out(train: Sequence[Any], val: Sequence[Any]) -> HeldOutSplit:
    """``val`` without the judgements that share an episode with ``train`` (counted in ``overlapping``)."""
    seen = {clip.source_episode_id for j in train for clip in (j.left, j.right)}
    kept = [j for j in val if j.left.source_episode_id not in seen and j.right.source_episode_id not in seen]
    return HeldOutSplit(list(train), kept, overlapping=len(val) - len(kept))


def split_held_out(judgements: Sequence[Any], fraction: float, seed: int = 0) -> HeldOutSplit:
    """Splits ``judgements`` by episode (``rlds_lang.preferences.database.EpisodeSplit``): no validation clip is
    ever trained on; judgements straddling the two sides are dropped and counted."""
    from rlds_lang.preferences.database import EpisodeSplit

    train, val, straddling = EpisodeSplit(fraction, seed).partition(judgements)
    return HeldOutSplit(train, val, straddling=straddling)


def split_validation(judgements: Sequence[Any], fraction: float, seed: int = 0) -> tuple[list[Any], list[Any]]:
    """``(train, validation)`` of ``split_held_out`` (by episode; straddling judgements left out)."""
    split = split_held_out(judgements, fraction, seed)
    return split.train, split.val


class RewardModelTrainer:
    """Trains an ensemble on growing label databases; ``model`` is the ``RewardModel`` being trained.

    The members are built at the first ``train_step`` (the input kind comes from the first clips), so the
    trainer can be made by a factory in another process before any label exists.
    """

    def __init__(self, config: RewardModelConfig, tokenizer=None):
        self.config = config
        #: where the members train (``config.device``, ``config.precision``; ``trainers.core.device``).
        self.placement = placement_of(config)
        self.tokenizer = tokenizer
        self.model: RewardModel | None = None
        self.optimizers: list[torch.optim.Optimizer] = []
        self.l2 = [AdaptiveL2(config.l2, config.l2_low, config.l2_high, config.l2_factor)
                   for _ in range(config.members)]
        self.step = 0
        #: epochs over the training database so far: each step adds the judgements it drew divided by the
        #: size of the database it drew from (the anchor's unit of "training steps": one pass over the data).
        self.epochs = 0.0
        self.last_validation: dict[str, Any] = {}
        self._rng = np.random.default_rng(config.seed)
        self._bootstrap: dict[str, np.ndarray] = {}

    def build(self, judgements: Sequence[Any]) -> RewardModel:
        """Builds the (untrained) members for the kind of clips in ``judgements`` unless built already."""
        from trainers.core.pretrained import task_tokenizer

        if self.model is not None:
            return self.model
        inputs = infer_inputs([judgements[0].left])
        if inputs.kind == "text" and self.tokenizer is None:
            self.tokenizer = task_tokenizer(self.config)  # a pretrained trunk's own, else the config's named one
        members = build_members(inputs, self.config, self.tokenizer if inputs.kind == "text" else None)
        members.to(self.placement.device)
        self.model = RewardModel(members, inputs, self.tokenizer if inputs.kind == "text" else None, self.config)
        self.optimizers = [torch.optim.Adam(member.parameters(), lr=self.config.lr) for member in members]
        return self.model

    def bootstrap_weights(self, judgement: Any) -> np.ndarray:
        """The Poisson(1) count of ``judgement`` in each member's bootstrap, ``[members]`` (fixed by its ids)."""
        key = _judgement_key(judgement)
        if key not in self._bootstrap:
            if len(self._bootstrap) > 200_000:     # a circular database evicts labels; counts are re-derivable
                self._bootstrap.clear()
            seed = zlib.crc32(f"{self.config.seed}:{key}".encode("utf-8"))
            self._bootstrap[key] = np.random.default_rng(seed).poisson(1.0, self.config.members).astype(np.float64)
        return self._bootstrap[key]

    def _sample(self, judgements: Sequence[Any], member: int, size: int) -> list[Any]:
        weights = np.array([self.bootstrap_weights(j)[member] for j in judgements])
        if weights.sum() == 0:
            weights = np.ones(len(judgements))
        picks = self._rng.choice(len(judgements), size=size, replace=True, p=weights / weights.sum())
        return [judgements[i] for i in picks]

    def member_loss(self, member: int, judgements: Sequence[Any], reduction: str = "mean") -> torch.Tensor:
        """The noisy Bradley-Terry loss of one member on ``judgements`` (with gradient, current mode)."""
        clips = [clip for j in judgements for clip in (j.left, j.right)]
        steps, owner = self.model.encode(clips)
        with self.placement.autocast():
            rewards = self.model.members[member](steps)
        returns = clip_returns(rewards.float(), owner, len(clips))
        targets = torch.tensor([j.target for j in judgements], dtype=returns.dtype, device=returns.device)
        return preference_loss(returns[0::2], returns[1::2], targets, self.config.noise, reduction)

    def train_step(self, train_judgements: Sequence[Any], val_judgements: Sequence[Any] = ()) -> dict[str, float]:
        """One optimizer step of every member on its bootstrap of ``train_judgements``; validates every
        ``val_every`` steps (and adjusts the L2 coefficients). Returns the step's metrics (empty when there is
        no trainable label yet)."""
        train = trainable(train_judgements)
        if not train:
            return {}
        self.build(train)
        c = self.config
        metrics: dict[str, float] = {}
        self.model.members.train()
        for m, (member, optimizer) in enumerate(zip(self.model.members, self.optimizers)):
            batch = self._sample(train, m, c.batch_size * c.grad_accum)
            optimizer.zero_grad()
            total = 0.0
            for start in range(0, len(batch), c.batch_size):
                micro = batch[start:start + c.batch_size]
                loss = self.member_loss(m, micro, reduction="sum") / len(batch)
                loss.backward()
                total += loss.item()
            penalty = self.l2[m].coefficient * l2_penalty(member)
            penalty.backward()
            optimizer.step()
            metrics[f"loss/{m}"] = total
            metrics[f"l2/{m}"] = self.l2[m].coefficient
        metrics["loss"] = float(np.mean([metrics[f"loss/{m}"] for m in range(c.members)]))
        self.step += 1
        self.epochs += c.batch_size * c.grad_accum / len(train)
        val = trainable(val_judgements)
        if val and self.step % c.val_every == 0:
            metrics.update(self.validate(train, val))
        metrics["step"] = self.step
        metrics["epochs"] = self.epochs
        return metrics

    def validate(self, train: Sequence[Any], val: Sequence[Any]) -> dict[str, float]:
        """Validation metrics (``evaluate`` on ``val``), the training loss on a sample of ``train``, and the
        adjustment of every member's L2 coefficient from the two losses."""
        size = min(len(train), self.config.train_eval_size)
        sample = [train[i] for i in self._rng.choice(len(train), size=size, replace=False)]
        on_train = evaluate(self.model, sample, self.config.noise)
        on_val = evaluate(self.model, val, self.config.noise)
        for m, controller in enumerate(self.l2):
            controller.update(on_val[f"loss/{m}"], on_train[f"loss/{m}"])
        out = {f"val_{k}": v for k, v in on_val.items()}
        out.update({f"train_eval_{k}": v for k, v in on_train.items()})
        self.last_validation = out
        return out

    def disagreement(self, pairs: Sequence[tuple[Any, Any]]) -> np.ndarray:
        """The ensemble's disagreement per pair (zeros before any training: every pair looks alike)."""
        if self.model is None:
            return np.zeros(len(pairs))
        return self.model.disagreement(pairs)

    def save(self, path: str | Path) -> Path:
        """Writes the reward-model checkpoint folder ``path`` (``RewardModel.save``) with the trainer's state:
        the optimizers, the batch-order generator and torch's RNG (``restore`` continues from it exactly)."""
        if self.model is None:
            raise RuntimeError("nothing to save: the reward model has not been trained on any label yet")
        self.model.state = {"step": self.step, "epochs": self.epochs, "l2": [c.coefficient for c in self.l2],
                            "last_validation": self.last_validation}
        state = {"optimizers": [optimizer.state_dict() for optimizer in self.optimizers],
                 "batch_rng": self._rng.bit_generator.state, "torch_rng": torch.get_rng_state()}
        return self.model.save(path, trainer_state=state)

    def restore(self, path: str | Path) -> bool:
        """Continues from the checkpoint folder ``path`` written by ``save``: the members, their optimizers, the
        L2 coefficients, the step and epoch counts, the batch order and torch's RNG. False (nothing changed) when
        ``path`` holds no trainer state."""
        path = Path(path)
        if not (path / TRAINER_STATE).is_file():
            return False
        if self.config.model.lora_rank:
            raise ValueError(f"{path}: a LoRA run (model.lora_rank={self.config.model.lora_rank}) does not resume: "
                             f"its checkpoint holds the adapters merged into the weights")
        self.model = RewardModel.load(path, self.placement.device)
        self.tokenizer = self.model.tokenizer
        state = load_state_file(path / TRAINER_STATE, weights_only=False)
        self.optimizers = [torch.optim.Adam(member.parameters(), lr=self.config.lr) for member in self.model.members]
        for optimizer, saved in zip(self.optimizers, state["optimizers"]):
            optimizer.load_state_dict(saved)
        for controller, coefficient in zip(self.l2, self.model.state["l2"]):
            controller.coefficient = coefficient
        self.step, self.epochs = int(self.model.state["step"]), float(self.model.state["epochs"])
        self.last_validation = dict(self.model.state.get("last_validation", {}))
        self._rng.bit_generator.state = state["batch_rng"]
        torch.set_rng_state(state["torch_rng"])
        return True


def evaluate(model: RewardModel, judgements: Sequence[Any], noise: float, chunk: int = 256) -> dict[str, float]:
    """Loss (noisy Bradley-Terry) and accuracy (strict labels) of every member and of the ensemble mean.

    Keys: ``loss/m``, ``accuracy/m`` per member, and ``loss``, ``accuracy`` of the mean ``P(left > right)``
    over members; ``pairs`` is the number of judgements evaluated (skips left out).
    """
    judgements = trainable(judgements)
    members = len(model.members)
    returns = []
    with eval_mode(model.members):
        for start in range(0, len(judgements), chunk):
            part = judgements[start:start + chunk]
            returns.append(model.member_returns([clip for j in part for clip in (j.left, j.right)]))
    returns = np.concatenate(returns) if returns else np.zeros((0, members))
    left, right = torch.from_numpy(returns[0::2]), torch.from_numpy(returns[1::2])
    targets = torch.tensor([j.target for j in judgements], dtype=torch.float64, device="cpu")  # beside the returns
    out: dict[str, float] = {"pairs": float(len(judgements))}
    probs = []
    for m in range(members):
        out[f"loss/{m}"] = float(preference_loss(left[:, m], right[:, m], targets, noise)) if len(targets) else float("nan")
        prob = torch.sigmoid(left[:, m] - right[:, m]).numpy()
        out[f"accuracy/{m}"] = preference_accuracy(prob, targets.numpy())
        probs.append((1 - noise) * prob + noise / 2)
    mean = np.mean(probs, axis=0) if probs else np.zeros(0)
    clipped = torch.from_numpy(np.clip(mean, 1e-12, 1 - 1e-12))
    out["loss"] = float(-(targets * clipped.log() + (1 - targets) * (1 - clipped).log()).mean()) if len(targets) else float("nan")
    out["accuracy"] = preference_accuracy(mean, targets.numpy())
    return out


@dataclasses.dataclass
class RewardTrainerFactory:
    """A picklable recipe for a ``RewardModelTrainer`` (the preference pipeline makes it in its process)."""

    config: RewardModelConfig = dataclasses.field(default_factory=RewardModelConfig)

    def __call__(self) -> RewardModelTrainer:
        """A new trainer with this config."""
        return RewardModelTrainer(self.config)


def read_dataset(config: RewardModelConfig) -> HeldOutSplit:
    """The training and held-out validation judgements of a built preferences dataset
    (``loggers.preferences_dataset``): ``val_split`` with the judgements sharing an episode with ``split``
    dropped, or, without ``val_split``, ``split`` divided by episode (``split_held_out``)."""
    from loggers.preferences_dataset import read_judgements

    train = list(read_judgements(config.dataset, config.split))
    if config.val_split is not None:
        return held_out(train, list(read_judgements(config.dataset, config.val_split)))
    return split_held_out(train, config.val_fraction, config.seed)


@dataclasses.dataclass
class RewardTrainingResult:
    """What ``train_reward`` returns: the output folder, the final metrics and the trained model."""

    out: Path
    metrics: dict[str, Any]
    model: RewardModel


def train_reward(config: RewardModelConfig, train: Sequence[Any] | None = None, val: Sequence[Any] | None = None,
                 progress: bool = True) -> RewardTrainingResult:
    """Trains for ``config.steps`` steps; writes ``out/checkpoint``, ``out/metrics.jsonl`` (through
    ``trainers.core.logs.RunLog``, with TensorBoard scalars and ``training_curves.png``) and ``out/metrics.json``. A
    run restarted with the same ``out`` continues from its checkpoint exactly (``config.resume``).

    ``train``/``val``: judgements in memory; when None they are read from ``config.dataset``. Validation is held
    out by episode: validation judgements sharing an episode with a training one are dropped (``held_out``),
    so ``val_accuracy`` is measured on clips never trained on; the controller of the L2 coefficients reads
    the same validation loss. ``metrics.json`` holds the final validation metrics of the ensemble
    (``val_accuracy``, ``val_loss``) and of each member, the label counts, what the split dropped
    (``val_straddling_dropped``, ``val_overlapping_dropped``) and the training time. The members train on the
    config's device (``trainers.core.device``).
    """
    with chosen(config.device, config.precision):
        return _train_reward(config, train, val, progress)


def _train_reward(config: RewardModelConfig, train: Sequence[Any] | None, val: Sequence[Any] | None,
                  progress: bool) -> RewardTrainingResult:
    """``train_reward`` inside its device choice."""
    if train is None:
        if not config.dataset:
            raise ValueError("train_reward: give --dataset (a built preferences folder) or judgements in memory")
        split = read_dataset(config)
    else:
        split = held_out(train, val or [])
    train, val = trainable(split.train), trainable(split.val)
    if not train or not val:
        raise ValueError(f"train_reward needs trainable labels in both sets, got {len(train)} train and "
                         f"{len(val)} validation (skips are not trainable; {split.straddling} straddling and "
                         f"{split.overlapping} overlapping validation judgements were dropped: validation holds out "
                         f"whole episodes)")
    out = Path(config.out)
    trainer = RewardModelTrainer(config)
    if config.resume:
        trainer.restore(out / "checkpoint")
    started = time.perf_counter()
    run = RunLog(out, "reward", config.steps, trainer.step, config.log_every, config.checkpoint_every, progress=False,
                 title=f"reward model: {config.dataset or 'judgements in memory'}", snapshot=True)
    while trainer.step < config.steps:
        metrics = trainer.train_step(train, val)
        step = trainer.step
        run.step_done(step, metrics)
        if progress and (step % config.log_every == 0 or step == config.steps):
            shown = f", val accuracy {trainer.last_validation.get('val_accuracy', float('nan')):.3f}"
            print(f"step {step}/{config.steps}: loss {metrics['loss']:.4f}{shown}", flush=True)
        if run.checkpoint_due(step) and step != config.steps:
            trainer.save(out / "checkpoint")
    run.close()
    final = evaluate(trainer.model, val, config.noise)
    recent = {clip.clip_id: clip for j in list(train)[-config.normalisation_window:] for clip in (j.left, j.right)}
    trainer.model.predict(list(recent.values()))     # the saved normaliser starts from the training clips
    summary = {f"val_{k}": v for k, v in final.items()}
    summary.update(split.report())
    summary.update(train_labels=len(train), val_labels=len(val), steps=config.steps,
                   seconds=time.perf_counter() - started, l2=[c.coefficient for c in trainer.l2])
    trainer.last_validation = summary
    trainer.save(out / "checkpoint")
    (out / "metrics.json").write_text(json.dumps(summary, sort_keys=True, indent=2))
    return RewardTrainingResult(out, summary, trainer.model)


__all__ = ["HeldOutSplit", "RewardModelTrainer", "RewardTrainerFactory", "RewardTrainingResult", "evaluate",
           "held_out", "read_dataset", "split_held_out", "split_validation", "train_reward", "trainable"]
