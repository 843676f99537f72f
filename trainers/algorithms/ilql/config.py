"""The configs of ILQL and of its Monte-Carlo-returns variant (``ValueLearningConfig``, ``ILQLConfig``,
``MCConfig``) and LMRL-Gym's settings of both, apart from their models (``trainers.algorithms.ilql.ilql``,
``trainers.algorithms.ilql.mc``) so that ``rlds-lang train ilql --help`` needs no PyTorch.

Example::

    from trainers.algorithms.ilql.config import LMRL_GYM_ILQL, ILQLConfig

    config = ILQLConfig(**LMRL_GYM_ILQL, dataset="/tmp/tfds/wordle_synthetic/branch/1.1.0")
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rlds_lang.paths import default_run
from trainers.core.config import TrainConfig
from trainers.core.model_config import DECODE_WITH


@dataclasses.dataclass
class ValueLearningConfig(TrainConfig):
    """What ILQL and its Monte-Carlo-returns variant (``trainers.algorithms.ilql.mc``) share on top of ``TrainConfig``: the value
    heads' losses, the BC/AWAC term and the decoding ``beta`` (defaults: the ILQL authors' Wordle configuration)."""

    #: discount per action token (of ILQL's TD targets; of the returns-to-go MC regresses onto).
    gamma: float = 0.99
    #: expectile of V's regression (0.5 = mean; towards 1 = max over dataset actions).
    tau: float = 0.7
    #: weight of the Q loss of both Q heads.
    q_weight: float = 1.0
    #: weight of V's expectile loss.
    v_weight: float = 1.0
    #: weight of the CQL term (cross-entropy of Q over the vocabulary against the dataset token).
    cql_weight: float = 1e-4
    #: temperature of the CQL term: its cross-entropy is of ``Q / cql_temperature`` (the authors' ``cql_temp``, 1.0).
    cql_temperature: float = 1.0
    #: weight of the BC / AWAC term that trains the LM head (the behaviour policy sampled at inference).
    awac_weight: float = 1.0
    #: AWAC temperature: the BC term is weighted by ``exp(awac_beta * (Q - V))``; 0 = plain BC.
    awac_beta: float = 0.0
    #: inference default: ``beta`` of the perturbed logits ``logits + beta * (Q - V)`` (recorded in the checkpoint).
    beta: float = 16.0
    #: inference default: the cap on ``beta * (Q - V)`` (``trainers.core.decoding.perturbed_logits``; recorded in the
    #: checkpoint). 0.0: the ILQL code's Wordle setting (``adv_clip: 0.0`` in config/wordle/eval_policy.yaml:57 and
    #: train_iql.yaml:63), which only lowers tokens of negative advantage. None (no cap) in every other setting of the
    #: references: the ILQL code's VisDial and Reddit ones (``adv_clip: null``, config/vis_dial/eval_policy.yaml:66,
    #: config/toxicity/eval_policy.yaml:83; ``rlds-lang train ilql ... --adv_clip none``) and LMRL-Gym's Wordle
    #: (``pi_beta_logits + beta * q_logits``, LLM_RL/algorithms/value_rl_base/gpt2/generation.py:116-117;
    #: ``LMRL_GYM_ILQL``, ``LMRL_GYM_MC``).
    adv_clip: float | None = 0.0
    #: put the value heads on a second transformer of the same size (``trainers.core.model.PolicyValueLM``; the
    #: authors' ``seperate_policy: true``) instead of on the policy's: the value losses then do not shape the
    #: policy's features, nor BC the values', at about twice the compute per step. Off: one shared trunk.
    #: With ``awac_weight=0`` the policy is not trained at all and not run in training: with ``model.checkpoint``
    #: set to a BC run's ``lm/`` it stays that BC policy, which the values perturb (LMRL-Gym's MC and ILQL agents).
    separate_value_trunk: bool = False
    #: start Q and V as this constant (output weights zero, bias this value; ``ValueHeads.start_at``), so the
    #: advantage starts at 0; LMRL-Gym's Wordle heads start at -4.4. None: PyTorch's default random init.
    head_init_value: float | None = None
    #: which Q heads the agents decode with (``ValueHeads.acting_q``, recorded in the checkpoint's config):
    #: ``"target"`` (the lagged copies; our default, with which the committed results were made) or ``"live"``
    #: (the trained heads, LMRL-Gym's agents' ``GPT2ValueRLInference`` of the trained parameters).
    decode_with: str = "target"

    def __post_init__(self) -> None:
        """Rejects a ``decode_with`` that is not one of ``DECODE_WITH``, naming the field."""
        if self.decode_with not in DECODE_WITH:
            raise ValueError(f"{type(self).__name__}.decode_with: {self.decode_with!r}, expected one of {DECODE_WITH}")


#: ``ILQLConfig.target_network``'s choices.
TARGET_NETWORKS = ("heads", "trunk")


@dataclasses.dataclass
class ILQLConfig(ValueLearningConfig):
    """ILQL hyperparameters: ``ValueLearningConfig`` plus the target network and its Polyak rate."""

    #: output folder.
    out: str = default_run("ilql")
    #: Polyak rate of the target network (Q heads, and trunk with ``target_network="trunk"``) after every
    #: optimizer step (0.005: the ILQL authors' and LMRL-Gym's).
    alpha: float = 0.005
    #: what the target network is: ``"heads"``, target Q heads on the live trunk (our default, with which the
    #: committed results were made), or ``"trunk"``, a Polyak copy of the value trunk under the target Q heads
    #: (LMRL-Gym's ILQL; with ``separate_value_trunk``, the ILQL authors' whole target value transformer).
    #: ``"trunk"`` decodes with ``decode_with="live"`` only: agents do not run the target trunk.
    target_network: str = "heads"

    def __post_init__(self) -> None:
        """Also rejects an unknown ``target_network``, and a target trunk with target-head decoding."""
        super().__post_init__()
        if self.target_network not in TARGET_NETWORKS:
            raise ValueError(f"ILQLConfig.target_network: {self.target_network!r}, expected one of {TARGET_NETWORKS}")
        if self.target_network == "trunk" and self.decode_with != "live":
            raise ValueError("ILQLConfig: target_network='trunk' needs decode_with='live' (the agents run the live "
                             "trunk only, so target heads would read hidden states of a trunk they were not trained on)")


#: LMRL-Gym's optimisation of its value-based Wordle rows (``llm_rl_scripts/wordle/{ilql,mc}/train_*_gpt2.py``):
#: AdamW with betas (0.9, 0.95) at a constant rate (no warm-up), no weight decay and no gradient clipping.
LMRL_GYM_OPTIMIZER: dict[str, Any] = {"warmup_steps": 0, "grad_clip": 0.0, "weight_decay": 0.0,
                                      "adam_beta1": 0.9, "adam_beta2": 0.95}


#: ``ILQLConfig`` settings of LMRL-Gym's ILQL row (``llm_rl_scripts/wordle/ilql/train_ilql_gpt2.py``): its
#: optimizer at lr 3e-5, a Polyak target of the value trunk (alpha 0.005, the default), decoding with the live
#: heads and without a cap on the advantage (``adv_clip`` None), CQL weight 0.01 and heads starting at -4.4. Its value trunk is apart from the fixed BC policy it
#: perturbs (``separate_value_trunk`` with ``awac_weight=0``; ``trainers.experiments.lmrl_gym`` adds those).
#: Its squared losses are half of ours (``q_loss`` and ``expectile_loss`` here have no factor 1/2), so the same
#: ``cql_weight`` gives CQL half the relative weight it has there (0.02 would match it; the script's 0.01 is kept).
LMRL_GYM_ILQL: dict[str, Any] = {**LMRL_GYM_OPTIMIZER, "lr": 3e-5, "target_network": "trunk", "decode_with": "live",
                                 "cql_weight": 0.01, "head_init_value": -4.4, "adv_clip": None}


@dataclasses.dataclass
class MCConfig(ValueLearningConfig):
    """MC-returns hyperparameters: ILQL's shared ones (``ValueLearningConfig``); no target lag."""

    #: output folder.
    out: str = default_run("mc")


#: ``MCConfig`` settings of LMRL-Gym's MC-returns row (``llm_rl_scripts/wordle/mc/train_mc_returns_gpt2.py``): its
#: optimizer (``LMRL_GYM_OPTIMIZER``) at lr 1e-5, decoding with the live heads without
#: a cap on the advantage (``adv_clip`` None: LMRL-Gym's generation adds ``beta * Q`` unclipped), CQL weight 0.01 and
#: heads starting at -4.4.
LMRL_GYM_MC: dict[str, Any] = {**LMRL_GYM_OPTIMIZER, "lr": 1e-5, "decode_with": "live", "cql_weight": 0.01,
                               "head_init_value": -4.4, "adv_clip": None}
