"""The trainers by name: which config dataclass and which module each algorithm uses.

Example::

    from trainers.algorithms import algorithm_by_name

    spec = algorithm_by_name("ilql")
    config = spec.config_class(dataset="/tmp/ds", steps=10)
"""

from __future__ import annotations

import dataclasses
from typing import Any

from trainers.bc import BCConfig, BCModel
from trainers.config import config_from_dict
from trainers.dpo import DPOConfig, DPOModel
from trainers.ilql import ILQLConfig, ILQLModel
from trainers.mc import MCConfig, MCModel
from trainers.ppo import PPOConfig, PPOModel


@dataclasses.dataclass(frozen=True)
class AlgorithmSpec:
    """An algorithm: its name, its config dataclass and its ``nn.Module`` (whose ``forward`` is the loss)."""

    name: str
    config_class: type
    model_class: type
    description: str

    def config_from_dict(self, data: dict[str, Any]) -> Any:
        """The algorithm's config from its JSON form (as stored in checkpoints)."""
        return config_from_dict(self.config_class, data)


ALGORITHMS: dict[str, AlgorithmSpec] = {
    "bc": AlgorithmSpec("bc", BCConfig, BCModel, "behaviour cloning on action tokens (--top_p for %BC)"),
    "ilql": AlgorithmSpec("ilql", ILQLConfig, ILQLModel, "per-token implicit language Q-learning"),
    "dpo": AlgorithmSpec("dpo", DPOConfig, DPOModel, "DPO on the preference pairs of response trees (--init CKPT)"),
    # online: trained by trainers.ppo.train_ppo (its own `train ppo` parser), listed so checkpoints load
    "ppo": AlgorithmSpec("ppo", PPOConfig, PPOModel, "online PPO in an environment (lm-human-preferences recipe)"),
    "mc": AlgorithmSpec("mc", MCConfig, MCModel, "ILQL's heads regressed onto Monte-Carlo returns (no TD)"),
}


def algorithm_by_name(name: str) -> AlgorithmSpec:
    """The registered algorithm ``name``; the error lists the known ones."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(f"unknown algorithm {name!r}; known: {sorted(ALGORITHMS)}") from None


__all__ = ["AlgorithmSpec", "ALGORITHMS", "algorithm_by_name"]
