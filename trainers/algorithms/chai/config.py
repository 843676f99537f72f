"""CHAI's hyperparameters, each default with where it comes from.

The ILQL authors' CHAI baseline (``config/vis_dial/train_chai.yaml``, ``model/chai_model.yaml`` and
``src/models/chai_model.py`` of Sea-Snell/Implicit-Language-Q-Learning; ``shared/REFERENCE_TASKS.md``, "Baselines
in the ILQL code"): utterance-level double Q over a frozen language model, the target the max over 5 utterances
sampled at the next state.

Example (the CLI: ``rlds-lang train chai --dataset DIR --model.checkpoint runs/bc/checkpoint/lm --steps 500``)::

    from trainers.algorithms.chai.config import ChaiConfig
    from trainers.algorithms.registry import train

    result = train("chai", ChaiConfig(dataset="/tmp/tfds/wordle_synthetic/lmrl_gym/1.1.0", steps=200, out="runs/chai"))
"""

from __future__ import annotations

import dataclasses

from trainers.core.config import TrainConfig


@dataclasses.dataclass
class ChaiConfig(TrainConfig):
    """CHAI hyperparameters on top of ``TrainConfig``. The language model is frozen: give a BC run's ``lm/`` as
    ``model.checkpoint`` (without one it stays at its random start, which only tests want). ``gamma=0.99`` and
    ``alpha=0.005`` are ILQL's (``trainers.algorithms.ilql.ilql``) and the authors'."""

    #: output folder.
    out: str = "runs/chai"
    #: discount per utterance.
    gamma: float = 0.99
    #: Polyak rate of the target Q heads after every optimizer step.
    alpha: float = 0.005
    #: utterances sampled from the frozen LM at each next state; the target takes the max of their target Q (5:
    #: the authors').
    target_samples: int = 5
    #: candidates the agent samples per turn, saying the highest-Q one (5: our choice, the same as the target's,
    #: so the agent acts by the rule its values were trained for).
    samples: int = 5
    #: longest utterance sampled for the target, in tokens (16: our choice, the agents' default for free text).
    max_utterance_tokens: int = 16

    def __post_init__(self) -> None:
        """Rejects fewer than one sample, naming the field."""
        for name in ("target_samples", "samples", "max_utterance_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"ChaiConfig.{name}: must be >= 1, got {getattr(self, name)}")


__all__ = ["ChaiConfig"]
