"""A ``RewardPredictor`` (``rlds_lang.preferences.wrapper``) backed by a reward-model checkpoint folder.

``CheckpointRewardPredictor(path)`` loads ``trainers.algorithms.reward.model.RewardModel`` from ``path`` when it exists,
and ``reload()`` loads it again whenever the folder was replaced (``RewardModel.save`` renames a complete
folder over the old one, so a new ``config.json`` file means new weights).

A reload that cannot read the folder (``OSError``: it fell in the instant between the two renames, or the
disk failed) keeps the weights in use, and says so: it is counted in ``failed_reloads``, its error kept in
``last_reload_error`` and logged as a warning, and it is retried at the next call. After
``max_failed_reloads`` failures in a row it raises, because the reward served would otherwise stay stale
for good without anyone knowing (a rename race never lasts that long). A malformed checkpoint raises at once
(``RewardModel.load``'s ``ValueError``). ``training_steps`` is
the checkpoint's ``state["step"]`` (optimizer steps) and ``training_epochs`` its whole epochs over the
preference database (0 before any checkpoint); the wrapper compares the epochs with its
``n_initial_training_epochs`` (or the steps with ``n_initial_training_steps`` when given). ``predict_step(o, a)`` is the ensemble's normalised reward of the one-step clip
``(o, a)``; with ``update_normalisation`` (default) each step also joins the normaliser's window of recent
steps, the paper's normalisation over the recent reward stream.

Example::

    from rlds_lang.preferences.wrapper import PreferenceEnv
    from trainers.algorithms.reward.predictor import CheckpointRewardPredictor

    env = PreferenceEnv(WordleEnv(), predictor=CheckpointRewardPredictor("runs/reward/checkpoint"),
                        n_initial_training_steps=0, collect=False)      # a saved reward model, no training
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Callable

from rlds_lang.preferences.types import Clip
from trainers.algorithms.reward.model import RewardModel

LOG = logging.getLogger(__name__)


class CheckpointRewardPredictor:
    """Per-step rewards from the reward model saved at ``path`` (module docstring)."""

    def __init__(self, path: str | os.PathLike, update_normalisation: bool = True,
                 guard: Callable[[], None] | None = None, max_failed_reloads: int = 3):
        self.path = Path(path)
        self.update_normalisation = update_normalisation
        #: called at every ``reload``; raises to stop the caller (the pipeline's check that its trainer lives).
        self.guard = guard
        self.model: RewardModel | None = None
        self.reloads = 0
        #: reloads that could not read the checkpoint (module docstring), in all and in a row.
        self.failed_reloads = 0
        self.failed_in_a_row = 0
        self.max_failed_reloads = int(max_failed_reloads)
        self.last_reload_error: str = ""
        self._signature: tuple[int, int, int] | None = None
        self.reload()

    @property
    def training_steps(self) -> int:
        """Reward-training optimizer steps behind the weights in use (0 without a checkpoint)."""
        return int(self.model.state.get("step", 0)) if self.model is not None else 0

    @property
    def training_epochs(self) -> int:
        """Whole reward-training epochs over the preference database behind the weights in use (0 without a
        checkpoint; ``RewardModelTrainer.epochs``)."""
        return int(self.model.state.get("epochs", 0.0) + 1e-9) if self.model is not None else 0

    def _current_signature(self) -> tuple[int, int, int] | None:
        try:
            stat = (self.path / "config.json").stat()
        except FileNotFoundError:
            return None
        return stat.st_ino, stat.st_mtime_ns, stat.st_size

    def reload(self) -> bool:
        """Loads the checkpoint if it is new since the last load; ``True`` when new weights are in use."""
        if self.guard is not None:
            self.guard()
        signature = self._current_signature()
        if signature is None or signature == self._signature:
            return False
        try:
            model = RewardModel.load(self.path)
        except OSError as error:  # replaced while being read, or unreadable: keep the weights, say so
            self.failed_reloads += 1
            self.failed_in_a_row += 1
            self.last_reload_error = f"{type(error).__name__}: {error}"
            if self.failed_in_a_row >= self.max_failed_reloads:
                raise RuntimeError(f"{self.path}: the reward-model checkpoint could not be reloaded "
                                   f"{self.failed_in_a_row} times in a row ({self.last_reload_error}); the reward "
                                   f"served would stay stale") from error
            LOG.warning("%s: reload failed (%s); keeping the weights of step %d and retrying (%d in a row)",
                        self.path, self.last_reload_error, self.training_steps, self.failed_in_a_row)
            return False
        self.model, self._signature = model, signature
        self.reloads += 1
        self.failed_in_a_row = 0
        return True

    def predict_step(self, observation: Any, action: Any) -> float:
        """The normalised predicted reward of one step (a ``RuntimeError`` before any checkpoint exists)."""
        if self.model is None:
            raise RuntimeError(f"{self.path}: no reward-model checkpoint yet, so no predicted reward")
        clip = Clip("step:0", "step", 0, 1, [observation], [action], [0.0], [False])
        return float(self.model.predict([clip], self.update_normalisation)[0][0])


__all__ = ["CheckpointRewardPredictor"]
