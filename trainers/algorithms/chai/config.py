"""CHAI's hyperparameters, each default with where it comes from.

The ILQL authors' CHAI baseline (``config/vis_dial/train_chai.yaml``, ``model/chai_model.yaml`` and
``src/models/chai_model.py`` of Sea-Snell/Implicit-Language-Q-Learning; ``shared/REFERENCE_TASKS.md``, "Baselines
in the ILQL code"): utterance-level double Q over a frozen language model whose state is the running mean of its
hidden states, the target the max over 5 utterances sampled at the next state, and a conservative term of weight 0.1.

Example (the CLI: ``rlds-lang train chai --dataset DIR --model.checkpoint runs/bc/checkpoint/lm --steps 500``)::

    from trainers.algorithms.chai.config import ChaiConfig
    from trainers.algorithms.registry import train

    result = train("chai", ChaiConfig(dataset="/tmp/tfds/wordle_synthetic/lmrl_gym/1.1.0", steps=200, out="runs/chai"))
"""

from __future__ import annotations

import dataclasses

from rlds_lang.paths import default_run
from trainers.algorithms.utterance_ilql.config import UtteranceAgentConfig


@dataclasses.dataclass
class ChaiConfig(UtteranceAgentConfig):
    """CHAI hyperparameters: ``UtteranceAgentConfig``'s (``gamma=0.99``, ``alpha=0.005``) plus the target's samples.
    The language model is frozen: give a BC run's ``lm/`` as ``model.checkpoint`` (without one it stays at its
    random start, which only tests want)."""

    #: output folder.
    out: str = default_run("chai")
    #: utterances sampled from the frozen LM at each state; the target takes the max of their target Q at the next
    #: state, the conservative term the logsumexp over them (and as many random embeddings) at the utterance's own
    #: (5: the authors' ``train.loss.n_generations``, config/vis_dial/train_chai.yaml).
    target_samples: int = 5
    #: candidates the agent samples per turn, saying the one of highest target Q (5: the authors' evaluator's
    #: ``generation_kwargs.num_generations``, config/vis_dial/train_chai.yaml).
    samples: int = 5
    #: weight of the conservative term (0.1: the authors' ``train.loss.cql_loss_weight``, config/vis_dial/
    #: train_chai.yaml; ``trainers.algorithms.chai.model.conservative_term``). 0 leaves it out.
    cql_weight: float = 0.1
    #: longest utterance sampled for the target, in tokens (16: our choice, the agents' default for free text; the
    #: authors' training samples up to the sequence's length, ``max_generation_len: null``, and their evaluator 40).
    max_utterance_tokens: int = 16

    def __post_init__(self) -> None:
        """Also rejects fewer than one target sample or utterance token, naming the field."""
        super().__post_init__()
        for name in ("target_samples", "max_utterance_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"ChaiConfig.{name}: must be >= 1, got {getattr(self, name)}")


__all__ = ["ChaiConfig"]
