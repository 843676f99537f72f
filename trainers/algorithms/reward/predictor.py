"""A ``RewardPredictor`` (``rlds_lang.preferences.wrapper``) backed by a reward-model checkpoint folder.

``CheckpointRewardPredictor(path)`` loads ``trainers.algorithms.reward.model.RewardModel`` from ``path`` when it exists,
and ``reload()`` loads it again whenever the folder was replaced (``RewardModel.save`` renames a complete
folder over the old one, so a new ``config.json`` file means new weights; a reload that falls in the
instant between the two renames keeps the weights in use and tries again next time). ``training_steps`` is
the checkpoint's ``state["step"]`` (0 before any checkpoint), which the wrapper compares with its
``n_initial_training_steps``. ``predict_step(o, a)`` is the ensemble's normalised reward of the one-step clip
``(o, a)``; with ``update_normalisation`` (default) each step also joins the normaliser's window of recent
steps, the paper's normalisation over the recent reward stream.

Example::

    from rlds_lang.preferences.wrapper import PreferenceEnv
    from trainers.algorithms.reward.predictor import CheckpointRewardPredictor

    env = PreferenceEnv(WordleEnv(), predictor=CheckpointRewardPredictor("runs/reward/checkpoint"),
                        n_initial_training_steps=0, collect=False)      # a saved reward model, no training
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rlds_lang.preferences.types import Clip
from trainers.algorithms.reward.model import RewardModel


class CheckpointRewardPredictor:
    """Per-step rewards from the reward model saved at ``path`` (module docstring)."""

    def __init__(self, path: str | os.PathLike, update_normalisation: bool = True):
        self.path = Path(path)
        self.update_normalisation = update_normalisation
        self.model: RewardModel | None = None
        self.reloads = 0
        self._signature: tuple[int, int, int] | None = None
        self.reload()

    @property
    def training_steps(self) -> int:
        """Reward-training steps behind the weights in use (0 without a checkpoint)."""
        return int(self.model.state.get("step", 0)) if self.model is not None else 0

    def _current_signature(self) -> tuple[int, int, int] | None:
        try:
            stat = (self.path / "config.json").stat()
        except FileNotFoundError:
            return None
        return stat.st_ino, stat.st_mtime_ns, stat.st_size

    def reload(self) -> bool:
        """Loads the checkpoint if it is new since the last load; ``True`` when new weights are in use."""
        signature = self._current_signature()
        if signature is None or signature == self._signature:
            return False
        try:
            model = RewardModel.load(self.path)
        except (FileNotFoundError, OSError):  # replaced while being read: keep the current weights
            return False
        self.model, self._signature = model, signature
        self.reloads += 1
        return True

    def predict_step(self, observation: Any, action: Any) -> float:
        """The normalised predicted reward of one step (a ``RuntimeError`` before any checkpoint exists)."""
        if self.model is None:
            raise RuntimeError(f"{self.path}: no reward-model checkpoint yet, so no predicted reward")
        clip = Clip("step:0", "step", 0, 1, [observation], [action], [0.0], [False])
        return float(self.model.predict([clip], self.update_normalisation)[0][0])


__all__ = ["CheckpointRewardPredictor"]
