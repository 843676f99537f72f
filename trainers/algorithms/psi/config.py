"""ψ-learning's hyperparameters, each default with where it comes from.

The ILQL authors' ψ-learning baseline (``config/vis_dial/train_psi.yaml`` and ``model/psi_model.yaml`` of
Sea-Snell/Implicit-Language-Q-Learning; ``shared/REFERENCE_TASKS.md``, "Baselines in the ILQL code") is their
per-token ILQL model with a Huber TD loss towards ``r / r_scale + log pi_beta(a|s) + gamma * logsumexp
Q_target(s', .)``, ``r_scale=0.1``, V regressed with ``tau=0.5`` (inherited from their CQL model) and no
conservative term. It has no Wordle configuration; its VisDial one is taken for every task.

Example (the CLI: ``rlds-lang train psi --dataset DIR --steps 500``)::

    from trainers.algorithms.psi.config import PsiConfig
    from trainers.algorithms.registry import train

    result = train("psi", PsiConfig(dataset="/tmp/tfds/wordle_synthetic/lmrl_gym/1.1.0", steps=200, out="runs/psi"))
"""

from __future__ import annotations

import dataclasses

from rlds_lang.paths import default_run
from trainers.algorithms.ilql.config import ILQLConfig


@dataclasses.dataclass
class PsiConfig(ILQLConfig):
    """ψ-learning hyperparameters: ILQL's fields (``trainers.algorithms.ilql.ilql.ILQLConfig``) plus ``r_scale``.

    Kept from ILQL's, and the same in the authors' ψ configuration: ``gamma=0.99``, ``alpha=0.005``, twin Q
    heads, ``awac_beta=0``, ``q_weight=1``, ``v_weight=1``. The learning rate stays ``TrainConfig``'s (theirs, 1e-5,
    is for fine-tuning a pretrained GPT-2).

    ``pi_beta``, whose log-probability enters the target, is the authors' fixed BC model: their ψ runs the policy
    under ``no_grad`` (``detach_full_policy=True``, src/models/bcq_model.py:65), so their token loss never trains it,
    on a transformer of its own (``seperate_policy: true``, config/vis_dial/train_psi.yaml), loaded from a checkpoint
    (``load.checkpoint_path``, ``strict_load: false``). Here: ``separate_value_trunk=True`` with ``awac_weight=0``,
    and ``model.checkpoint`` a BC run's ``lm/`` (both transformers start from it; without one ``pi_beta`` stays the
    random initial LM, which only tests want). ``awac_weight > 0`` trains ``pi_beta`` by BC in the same step instead
    (an option; not the authors').
    """

    #: output folder.
    out: str = default_run("psi")
    #: ``pi_beta`` is fixed (the authors': see the class docstring); > 0 trains it by BC in the same step.
    awac_weight: float = 0.0
    #: ``pi_beta`` on a transformer of its own, apart from the values' (the authors' ``seperate_policy: true``).
    separate_value_trunk: bool = True
    #: the reward is divided by this before it meets the log-probabilities (0.1: the authors' ``r_scale``).
    r_scale: float = 0.1
    #: V's expectile: 0.5 (the authors' ψ model inherits ``tau=0.5`` from their CQL model).
    tau: float = 0.5
    #: no conservative term (the authors' ``cql_loss_weight: 0.0`` for ψ). The target's logsumexp runs over every
    #: token, and nothing regresses the Q of tokens the data never takes at a state: from random weights they can
    #: swamp the bootstrapped value (tests/test_psi.py shows it on a one-step task); a small weight (0.1) holds
    #: them down.
    cql_weight: float = 0.0
    #: decoding ``beta`` of ``logits + beta * (Q - V)``: 8, the ``adv_weight`` of the authors' evaluator of the ψ
    #: run (``config/vis_dial/train_psi.yaml``).
    beta: float = 8.0
    #: no cap on ``beta * (Q - V)`` at play: the same evaluator's ``adv_clip: null``
    #: (config/vis_dial/train_psi.yaml:78); ILQL's default 0.0 is its Wordle setting's, which has no ψ run.
    adv_clip: float | None = None

    def __post_init__(self) -> None:
        """Also rejects a non-positive ``r_scale``, naming the field."""
        super().__post_init__()
        if not self.r_scale > 0:
            raise ValueError(f"PsiConfig.r_scale: must be > 0, got {self.r_scale}")


__all__ = ["PsiConfig"]
