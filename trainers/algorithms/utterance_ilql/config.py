"""Utterance-level ILQL's hyperparameters, each default with where it comes from.

The ILQL authors' utterance-level baseline (``config/vis_dial/train_utterance_iql.yaml``, ``model/
per_utterance_iql.yaml`` and ``src/models/utterance_iql_model.py`` of Sea-Snell/Implicit-Language-Q-Learning;
``shared/REFERENCE_TASKS.md``, "Baselines in the ILQL code"): one Q and one V per utterance, V's expectile
``tau=0.9``, and an agent that samples 4 utterances from the BC policy and says the one with the highest Q.

Example (the CLI: ``rlds-lang train utterance_ilql --dataset DIR --steps 500``)::

    from trainers.algorithms.utterance_ilql.config import UtteranceILQLConfig
    from trainers.algorithms.registry import train

    config = UtteranceILQLConfig(dataset="/tmp/tfds/wordle_synthetic/lmrl_gym/1.1.0", steps=200, out="runs/uilql")
    result = train("utterance_ilql", config)
"""

from __future__ import annotations

import dataclasses

from rlds_lang.paths import default_run
from trainers.core.config import TrainConfig


@dataclasses.dataclass
class UtteranceAgentConfig(TrainConfig):
    """What the utterance-level agents (``utterance_ilql``, ``trainers.algorithms.chai``) share on top of
    ``TrainConfig``: the discount per utterance, the Polyak rate of their target Q heads and how many candidates
    their agent samples. ``gamma=0.99`` and ``alpha=0.005`` are ILQL's (``trainers.algorithms.ilql.ilql``) and the
    authors'."""

    #: discount per utterance.
    gamma: float = 0.99
    #: Polyak rate of the target Q heads after every optimizer step.
    alpha: float = 0.005
    #: candidates the agent samples from its LM per turn, saying the one with the highest Q.
    samples: int = 4

    def __post_init__(self) -> None:
        """Rejects fewer than one candidate, naming the field."""
        if self.samples < 1:
            raise ValueError(f"{type(self).__name__}.samples: must be >= 1, got {self.samples}")


@dataclasses.dataclass
class UtteranceILQLConfig(UtteranceAgentConfig):
    """Utterance-level ILQL hyperparameters: ``UtteranceAgentConfig``'s plus V's expectile, the loss weights and where
    the policy is.

    Twin Q heads whose ``min`` is the target are ILQL's and the authors' (``double_q: true``); ``samples`` stays 4,
    the authors'. The policy is the authors': a BC model on a transformer of its own, loaded from a checkpoint and
    not trained (``seperate_policy: true``, ``load.checkpoint_path`` a converted BC model, ``train.loss.awac_weight:
    0.0``; config/vis_dial/train_utterance_iql.yaml). Give ``model.checkpoint`` a BC run's ``lm/`` (both transformers
    start from it; without one the policy stays the random initial LM, which only tests want). Differences: their
    target heads read a target copy of the whole value transformer (``seperate_target: true``), ours the live one,
    as ILQL's default target network (``trainers.algorithms.ilql.ilql``); the learning rate stays
    ``TrainConfig``'s (the authors fine-tune a pretrained GPT-2; ours trains a small model).
    """

    #: output folder.
    out: str = default_run("utterance_ilql")
    #: V's expectile over the dataset's utterances at a state (0.9: the authors' utterance-level setting).
    tau: float = 0.9
    #: weight of the Q heads' TD loss.
    q_weight: float = 1.0
    #: weight of V's expectile loss.
    v_weight: float = 1.0
    #: weight of the BC term that trains the policy the agent samples its candidates from: 0, the authors' (their
    #: policy is a fixed BC model); > 0 trains it in the same step (with ``separate_value_trunk=False``, on the
    #: transformer the heads read).
    awac_weight: float = 0.0
    #: the heads on a transformer of their own, apart from the policy's (the authors' ``seperate_policy: true``).
    separate_value_trunk: bool = True

    def __post_init__(self) -> None:
        """Also rejects a ``tau`` outside (0, 1), naming the field."""
        super().__post_init__()
        if not 0 < self.tau < 1:
            raise ValueError(f"UtteranceILQLConfig.tau: must be in (0, 1), got {self.tau}")


__all__ = ["UtteranceAgentConfig", "UtteranceILQLConfig"]
