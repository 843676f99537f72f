"""``rlds-lang reddit upvotes``: train the upvote classifier of the Reddit ``upvotes_model`` reward.

As in the paper, the classifier learns ``score > 0`` with binary cross-entropy on the comments of the
``test`` split (train_idxs.json feeds the agents, test_idxs.json the reward model) and is validated on
``eval``; ``--train-split``/``--val-split`` change that. The model (``rlds_lang.reddit.upvote_model``)
is saved to ``--out`` with its validation accuracy and the majority-class accuracy beside it in
``config.json``; the command prints both. Input: the published folder (``--data``) or the dump files of one
build (``--dump``: files, or folders of them; hash splits), read together by ``read_comments`` so a
parent in another file is found and a comment repeated across files is counted once. One torch thread; ``--device`` chooses where it trains (``auto``: CUDA when present).

Example::

    rlds-lang reddit upvotes --data ~/reddit_manual --out ~/reddit_upvote_model --epochs 3
"""

from __future__ import annotations

import collections
import dataclasses
import os
import random
from typing import Sequence

from rlds_lang.reddit.data import RedditComment, find_dumps, read_dumps, read_published
from rlds_lang.reddit.upvote_model import UpvoteClassifier, UpvoteModelConfig


@dataclasses.dataclass
class UpvoteTrainConfig:
    """How the classifier is trained (defaults: ours; the paper's head had no stated schedule we could read)."""

    epochs: int = 3           #: passes over the training split
    batch_size: int = 64      #: comments per optimizer step
    lr: float = 1e-3          #: Adam learning rate
    seed: int = 0             #: initialisation and shuffling seed
    train_split: str = "test" #: the split the paper trained the reward model on
    val_split: str = "eval"   #: the split it validated on
    device: str = "auto"      #: where it trains (``--device``: auto, cpu, cuda or cuda:N; built on the CPU, then moved)


def read_comments(data: str | os.PathLike | None, dumps: Sequence[str | os.PathLike] | None,
                  rejections: collections.Counter) -> list[RedditComment]:
    """The comments to train on: the published folder ``data``, or every dump of ``dumps`` (files, or folders
    whose dump files are taken in name order) read as one build by ``read_dumps`` (cross-file parents and
    duplicates handled; rejections counted in ``rejections``)."""
    if not dumps:
        if data is None:
            raise ValueError("reddit-upvotes: give --data (the published folder) or --dump (dump files)")
        return list(read_published(data, rejections))
    files: list[str] = []
    for path in dumps:
        files.extend(find_dumps(path) if os.path.isdir(path) else [os.fspath(path)])
    if not files:
        raise ValueError(f"reddit-upvotes: no dump file in {[os.fspath(p) for p in dumps]}")
    return list(read_dumps(files, rejections))


def accuracy(model: UpvoteClassifier, comments: Sequence[RedditComment]) -> float:
    """Share of comments whose predicted label (P >= 0.5) equals ``score > 0``."""
    if not comments:
        return float("nan")
    probs = model.probabilities([c.text for c in comments])
    return sum((p >= 0.5) == (c.score > 0) for p, c in zip(probs, comments)) / len(comments)


def upvote_loss(model: UpvoteClassifier, comments: Sequence[RedditComment], loss_fn):
    """``loss_fn`` (binary cross-entropy with logits) of the model's logits against ``score > 0``, on its device."""
    import torch

    target = torch.tensor([float(c.score > 0) for c in comments], device=model.device)
    return loss_fn(model.logits([c.text for c in comments]), target)


def train_upvote_model(comments: Sequence[RedditComment], config: UpvoteTrainConfig,
                       model_config: UpvoteModelConfig | None = None) -> UpvoteClassifier:
    """Trains a classifier on ``config.train_split`` on ``config.device`` (built on the CPU, so a seed gives the same
    initial weights on every device, then moved) and records validation metrics in ``model.info``."""
    import torch

    from trainers.core.device import resolve_device

    device = resolve_device(config.device)
    torch.manual_seed(config.seed)
    train = [c for c in comments if c.split == config.train_split]
    val = [c for c in comments if c.split == config.val_split]
    if not train:
        raise ValueError(f"no comments in the {config.train_split!r} split to train the upvote model on")
    model = UpvoteClassifier(model_config)
    model.module.to(device)
    optimizer = torch.optim.Adam(model.module.parameters(), lr=config.lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    rng = random.Random(config.seed)
    order = list(range(len(train)))
    for _ in range(config.epochs):
        rng.shuffle(order)
        model.module.train()
        for start in range(0, len(order), config.batch_size):
            batch = [train[i] for i in order[start:start + config.batch_size]]
            loss = upvote_loss(model, batch, loss_fn)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    positive = sum(c.score > 0 for c in val) / len(val) if val else float("nan")
    model.info = {"train_split": config.train_split, "val_split": config.val_split, "train_comments": len(train),
                  "val_comments": len(val), "val_accuracy": accuracy(model, val),
                  "val_majority_accuracy": max(positive, 1 - positive), "train_config": dataclasses.asdict(config)}
    return model


__all__ = ["UpvoteTrainConfig", "accuracy", "read_comments", "train_upvote_model", "upvote_loss"]
