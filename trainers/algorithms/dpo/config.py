"""Direct Preference Optimization (DPO): the config (``DPOConfig``) and its loss types, apart from the losses and
the model (``trainers.algorithms.dpo.dpo``) so that ``rlds-lang train dpo --help`` needs no PyTorch.

Example::

    from trainers.algorithms.dpo.config import DPOConfig

    config = DPOConfig(dataset="runs/trees", init="runs/bc/checkpoint", loss_type="ipo")
"""

from __future__ import annotations

import dataclasses

from rlds_lang.paths import default_run
from trainers.core.config import TrainConfig


LOSS_TYPES = ("sigmoid", "ipo")


@dataclasses.dataclass
class DPOConfig(TrainConfig):
    """DPO hyperparameters on top of ``TrainConfig`` (``dataset``: response-tree logs or a built tree dataset folder;
    ``batch_size``: pairs per step; ``model`` and ``tokenizer`` are taken from ``init``, or with ``model.pretrained``
    and no ``init`` the run starts from that pretrained LM and its own tokenizer; ``grad_accum``,
    ``top_p``, ``token_reward``, ``config`` and ``data_dir`` are not used and must keep their defaults)."""

    #: output folder.
    out: str = default_run("dpo")
    #: checkpoint folder of the starting policy (e.g. a BC run's ``checkpoint``); required unless
    #: ``model.pretrained`` names the pretrained LM to start from.
    init: str = ""
    #: checkpoint folder of the reference model; None = the starting policy (``init``) itself.
    reference: str | None = None
    #: inverse temperature of the implicit reward ``beta * log(pi / pi_ref)`` (DPO paper: 0.1).
    beta: float = 0.1
    #: ``sigmoid`` (DPO) or ``ipo`` (Azar et al. 2023).
    loss_type: str = "sigmoid"
    #: conservative-DPO label smoothing: the probability that a pair's label is flipped (0 = plain DPO).
    label_smoothing: float = 0.0
    #: weight of the chosen responses' per-token NLL added to the DPO loss (0 = plain DPO; iterative RPO: 1).
    nll_coef: float = 0.0
    #: pair selector: None = the pairs flagged when the trees were recorded; ``positive_negative`` or ``interval``.
    pair_method: str | None = None
    #: lowest possible episode return (Wordle: -6), for re-selected pairs.
    reward_min: float = -6.0
    #: highest possible episode return (Wordle: 0).
    reward_max: float = 0.0
    #: ``positive_negative``'s threshold (None: the mid-point of the reward range).
    pair_threshold: float | None = None
    #: ``positive_negative`` leaves values exactly at the threshold out instead of counting them as positive (the
    #: reference trainer's default, False; ``trainers.algorithms.malt.malt.MALTConfig.strict_threshold``).
    strict_threshold: bool = False
    #: ``interval``'s minimum value gap as a share of the reward range.
    interval_threshold_proportion: float = 0.1
    #: AdamW learning rate (see the module docstring for why it exceeds the DPO paper's).
    lr: float = 1e-4
    #: linear warm-up steps.
    warmup_steps: int = 0
    #: pairs per optimizer step.
    batch_size: int = 16
    #: optimizer steps.
    steps: int = 200


__all__ = ["LOSS_TYPES", "DPOConfig"]
