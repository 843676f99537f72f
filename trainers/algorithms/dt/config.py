"""The Decision Transformer's hyperparameters, each default with where it comes from.

The ILQL authors' Decision Transformer baseline (``src/models/dt_model.py`` and ``config/vis_dial/train_dt.yaml``
of Sea-Snell/Implicit-Language-Q-Learning; ``shared/REFERENCE_TASKS.md``, "Baselines in the ILQL code"): a
BC language model with a prefix that is a linear embedding (``Linear(1, n_embd)``) of the episode's total return,
trained by maximum likelihood of the action tokens; at play time the prefix embeds a constant target return.

Example (the CLI: ``rlds-lang train dt --dataset DIR --steps 500``; play with ``--agent dt=DIR,target_return=-3``)::

    from trainers.algorithms.dt.config import DTConfig
    from trainers.algorithms.registry import train

    result = train("dt", DTConfig(dataset="/tmp/tfds/wordle_synthetic/lmrl_gym/1.1.0", steps=200, out="runs/dt"))
"""

from __future__ import annotations

import dataclasses
import math

from rlds_lang.paths import default_run
from trainers.core.config import TrainConfig


@dataclasses.dataclass
class DTConfig(TrainConfig):
    """Decision Transformer hyperparameters: ``TrainConfig``'s (the BC trainer's) plus the return asked for at play.

    Training has nothing of its own beyond BC's: the return embedded is the episode's total (undiscounted)
    environment return, as the authors' ``DT.get_loss`` sums the rewards. The learning rate stays
    ``TrainConfig``'s (the authors fine-tune a pretrained GPT-2; ours trains a small model from random weights).
    """

    #: output folder.
    out: str = default_run("dt")
    #: the return the agent is conditioned on when it plays (recorded in the checkpoint; ``load_policy``'s
    #: ``target_return`` and ``--agent NAME=DIR,target_return=R`` override it). -5.7: the authors' Visual Dialogue
    #: target (``cond_r: -5.7``, config/vis_dial/train_dt.yaml:58; swept from -11 to 0 in
    #: scripts/eval/vis_dial/batch_eval_policy.sh). They have no Wordle DT: on Wordle (returns -6 to 0) and Reddit give
    #: one in the range of the data's returns (``docs/baselines.md`` sweeps -6 to -2).
    target_return: float = -5.7

    def __post_init__(self) -> None:
        """Rejects a target return that is not a finite number, naming the field."""
        if not math.isfinite(self.target_return):
            raise ValueError(f"DTConfig.target_return: must be finite, got {self.target_return}")


__all__ = ["DTConfig"]
