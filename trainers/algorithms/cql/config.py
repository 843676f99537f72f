"""Token-level CQL's hyperparameters, each default with where it comes from.

The ILQL authors' CQL baseline (``config/vis_dial/train_cql.yaml`` and ``model/cql_model.yaml`` of
Sea-Snell/Implicit-Language-Q-Learning; ``shared/REFERENCE_TASKS.md``, "Baselines in the ILQL code") is their
per-token ILQL model with the Q target replaced by the max over next-token target Q, V regressed with ``tau=0.5``
onto the target Q of the dataset token, and the conservative term weighted 0.1. It has no Wordle configuration;
its VisDial one is taken for every task.

Example (the CLI: ``rlds-lang train cql --dataset DIR --steps 500``)::

    from trainers.algorithms.cql.config import CQLConfig
    from trainers.algorithms.registry import train

    result = train("cql", CQLConfig(dataset="/tmp/tfds/wordle_synthetic/lmrl_gym/1.1.0", steps=200, out="runs/cql"))
"""

from __future__ import annotations

import dataclasses

from rlds_lang.paths import default_run
from trainers.algorithms.ilql.config import ILQLConfig


@dataclasses.dataclass
class CQLConfig(ILQLConfig):
    """CQL hyperparameters: ILQL's fields (``trainers.algorithms.ilql.ilql.ILQLConfig``) with CQL's defaults.

    Kept from ILQL's, and the same in the authors' CQL configuration: ``gamma=0.99``, ``alpha=0.005`` (Polyak
    rate of the target Q heads), twin Q heads, ``awac_weight=1`` with ``awac_beta=0`` (the LM head is plain BC:
    their ``beta: 0.0`` makes the AWAC weights ``exp(0) = 1``), ``q_weight=1``, ``v_weight=1``,
    ``cql_temperature=1`` (their ``cql_temp``). The learning rate stays ``TrainConfig``'s (theirs, 1e-4, is for
    fine-tuning a pretrained GPT-2; ours trains a small model from random weights, as ILQL's does here).
    """

    #: output folder.
    out: str = default_run("cql")
    #: V's expectile: 0.5, a plain mean over the dataset's actions (the authors' ``CQLModel`` fixes ``tau=0.5``).
    tau: float = 0.5
    #: weight of the conservative term (0.1: the authors' ``cql_loss_weight`` on VisDial; ILQL's is 1e-4).
    cql_weight: float = 0.1
    #: decoding ``beta`` of ``logits + beta * (Q - V)``: 8, the ``adv_weight`` of the authors' evaluator of the CQL
    #: run (``config/vis_dial/train_cql.yaml``).
    beta: float = 8.0
    #: no cap on ``beta * (Q - V)`` at play: the same evaluator's ``adv_clip: null``
    #: (config/vis_dial/train_cql.yaml:78); ILQL's default 0.0 is its Wordle setting's, which has no CQL run.
    adv_clip: float | None = None


__all__ = ["CQLConfig"]
