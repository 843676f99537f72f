"""Choosing a checkpoint by held-out loss (LMRL-Gym's ``save_best``).

LMRL-Gym's BC trainers evaluate their loss on held-out data during training and keep the checkpoint with the
lowest (``save_best``), not the last. A run of ours keeps a checkpoint every ``TrainConfig.keep_every`` steps
(``trainers.core.checkpoint.snapshots``); ``select_by_held_out_loss`` computes each one's loss on the same
held-out episodes (the run's own objective, token-weighted, in evaluation mode, the data in its stored order)
and names the lowest. The latest checkpoint is among the candidates, so the choice can also be "the last".

Example::

    from trainers.algorithms.registry import load_agent_model
    selection = select_by_held_out_loss("runs/results/lmrl_gym/BC", load_agent_model, episodes=2000)
    selection.best.path, selection.table()
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import torch

from trainers.core.checkpoint import checkpoint_dir, checkpoint_step, snapshots
from trainers.core.device import Placement, module_device

if TYPE_CHECKING:  # pragma: no cover - type hints only
    import tensorflow as tf

    from trainers.core.checkpoint import LoadedModel


@dataclasses.dataclass(frozen=True)
class HeldOutSource:
    """Held-out episodes of an ArrayRecord build: a ``tfds.data_source`` and the positions of the episodes kept."""

    source: Any
    positions: tuple[int, ...]


def held_out_episodes(config, split: str, episodes: int) -> tf.data.Dataset | HeldOutSource:
    """The first ``episodes`` episodes of ``split`` of a run's dataset (``config``: its training config), kept by
    the run's own filters (``top_p``, ``min_return``) so that a filtered-BC run is scored on what it imitates.
    Read as the run reads its training data (``trainers.core.data.chosen_reader``): a ``tf.data`` dataset, or for
    an ArrayRecord build a ``HeldOutSource`` (no TensorFlow), which hold the same episodes."""
    from trainers.core.data import chosen_reader, require_tensorflow

    if chosen_reader(config) == "data_source":
        import numpy as np

        from transforms.array_record import episode_return, open_source, select_episodes

        source = open_source(config.dataset, split, config.config, config.data_dir)
        first = source.__getitems__(list(range(min(episodes, len(source)))))
        returns = np.array([episode_return(episode) for episode in first], np.float64)
        return HeldOutSource(source, tuple(select_episodes(len(first), returns, config.top_p,
                                                           getattr(config, "min_return", None)).tolist()))
    require_tensorflow(config)
    from transforms.loading import load
    from transforms.selection import filter_min_return, filter_top_p

    data = load(config.dataset, split=split, config=config.config, data_dir=config.data_dir).take(episodes)
    if config.top_p is not None:
        data = filter_top_p(data, config.top_p)
    if getattr(config, "min_return", None) is not None:
        data = filter_min_return(data, config.min_return)
    return data


def held_out_batches(model: LoadedModel, episodes: tf.data.Dataset | HeldOutSource,
                     batch_size: int = 64) -> Iterator[dict[str, Any]]:
    """Torch batches of ``episodes`` as the token MDP of ``model``'s config, each episode once, in order, cut to
    their longest sequence."""
    from transforms.token_layout import TokenMDPConfig
    from transforms.torch_bridge import to_torch, trim_padding

    config = model.config
    mdp = TokenMDPConfig(max_length=config.max_length, token_reward=config.token_reward,
                         gamma=getattr(config, "gamma", 1.0))
    if isinstance(episodes, HeldOutSource):
        from transforms.data_source import ordered_batches

        yield from ordered_batches(episodes.source, model.tokenizer, mdp, batch_size, episodes.positions,
                                   then=trim_padding)
        return
    from transforms.token_mdp import token_batches

    for batch in token_batches(episodes, model.tokenizer, mdp, batch_size).as_numpy_iterator():
        yield trim_padding(to_torch(batch))


def held_out_loss(model: LoadedModel, episodes: tf.data.Dataset | HeldOutSource, batch_size: int = 64) -> float:
    """The token-weighted mean of ``model``'s training loss over ``episodes`` (each episode once, in order, as
    the token MDP of its config); raises ``ValueError`` when they hold no action token."""
    total, count = 0.0, 0
    model.model.eval()
    place = Placement(module_device(model.model))
    with torch.no_grad():
        for batch in held_out_batches(model, episodes, batch_size):
            out = model.model(place.move(batch))
            total += float(out.loss) * int(out.count)
            count += int(out.count)
    if count == 0:
        raise ValueError("held_out_loss: the held-out episodes hold no action token")
    return total / count


@dataclasses.dataclass(frozen=True)
class CheckpointLoss:
    """One candidate checkpoint and its held-out loss."""

    step: int
    path: Path
    loss: float


@dataclasses.dataclass(frozen=True)
class Selection:
    """The candidates of one run, by step, with the one of lowest held-out loss."""

    candidates: tuple[CheckpointLoss, ...]
    split: str
    episodes: int

    @property
    def best(self) -> CheckpointLoss:
        """The candidate with the lowest held-out loss (the earliest of equals)."""
        return min(self.candidates, key=lambda c: (c.loss, c.step))

    @property
    def last(self) -> CheckpointLoss:
        """The latest candidate (the run's own checkpoint)."""
        return max(self.candidates, key=lambda c: c.step)

    def table(self) -> str:
        """A Markdown table of every candidate's held-out loss, the chosen one marked."""
        best = self.best
        rows = [f"| {c.step} | {c.loss:.4f} | {'chosen' if c == best else ''} |" for c in self.candidates]
        return "| step | held-out loss | |\n| --- | --- | --- |\n" + "\n".join(rows)

    def to_dict(self) -> dict:
        """A JSON form (paths as given)."""
        return {"split": self.split, "episodes": self.episodes,
                "candidates": [{"step": c.step, "path": str(c.path), "loss": c.loss} for c in self.candidates]}

    @classmethod
    def from_dict(cls, data: dict) -> "Selection":
        """The selection ``to_dict`` gave ``data`` for; a clear error naming the missing field otherwise."""
        try:
            return cls(tuple(CheckpointLoss(int(c["step"]), Path(c["path"]), float(c["loss"]))
                             for c in data["candidates"]), data["split"], int(data["episodes"]))
        except KeyError as error:
            raise ValueError(f"Selection.from_dict: no field {error} in {str(data)[:200]}") from None


def select_by_held_out_loss(run: str | os.PathLike, load: Callable[[Path], LoadedModel], split: str = "eval",
                            episodes: int = 2000, batch_size: int = 64) -> Selection:
    """Scores every kept checkpoint of the training folder ``run`` and its latest one on the same ``episodes``
    held-out episodes of ``split`` (``held_out_loss``); ``load`` rebuilds a checkpoint folder
    (``trainers.algorithms.registry.load_agent_model``). A clear error when ``run`` has no checkpoint."""
    latest = checkpoint_dir(run)
    if not latest.is_dir():
        raise FileNotFoundError(f"{run}: no checkpoint folder to choose from ({latest})")
    folders = dict(snapshots(run))
    folders.setdefault(checkpoint_step(latest), latest)
    data, candidates = None, []
    for step, folder in sorted(folders.items()):
        model = load(folder)
        if data is None:
            data = held_out_episodes(model.config, split, episodes)
        candidates.append(CheckpointLoss(step, folder, held_out_loss(model, data, batch_size)))
    return Selection(tuple(candidates), split, episodes)


__all__ = ["HeldOutSource", "held_out_episodes", "held_out_batches", "held_out_loss", "CheckpointLoss", "Selection", "select_by_held_out_loss"]
