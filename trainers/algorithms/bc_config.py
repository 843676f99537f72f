"""Behaviour cloning (BC) and filtered BC (%BC): the config (``BCConfig``), apart from the model
(``trainers.algorithms.bc``) so that ``rlds-lang train bc --help`` needs no PyTorch.

Example::

    from trainers.algorithms.bc_config import BCConfig

    config = BCConfig(dataset="/tmp/tfds/wordle_synthetic/branch/1.1.0", top_p=0.1)
"""

from __future__ import annotations

import dataclasses

from rlds_lang.paths import default_run
from trainers.core.config import TrainConfig


@dataclasses.dataclass
class BCConfig(TrainConfig):
    """BC / %BC hyperparameters: all of ``TrainConfig`` (``top_p`` turns BC into %BC)."""

    #: output folder.
    out: str = default_run("bc")


__all__ = ["BCConfig"]
