"""Token-level conservative Q-learning (CQL; Kumar, Zhou, Tucker, Levine 2020, arXiv 2006.04779), one of the ILQL
paper's baselines: ILQL's model (``trainers.algorithms.ilql.ilql.ILQLModel``: an LM head, twin Q heads over the
vocabulary, a V head and target Q heads moved by Polyak averaging) with the TD target of Q-learning. One step
minimises

    q_weight    * sum_i (Q_i(s_t, a_t) - [r_t + gamma * (1 - done_t) * max_a Q^target(s_{t+1}, a)])^2
  + cql_weight  * sum_i CE(Q_i(s_t, .) / cql_temperature, a_t)                           (conservative term)
  + v_weight    * (Q^target(s_t, a_t) - V(s_t))^2 / 2                                     (tau = 0.5)
  + awac_weight * -log pi(a_t | s_t)                                                       (BC)

over the dataset's action tokens (``Q^target = min(target Q1, target Q2)``); the max is over the whole vocabulary
(``trainers.algorithms.cql.losses.max_q_targets``). Without the conservative term the max chases the Q of tokens
the data never shows; with it those are pushed below the data's. Agents act as ILQL's do: the BC logits perturbed
by ``beta * (min_i Q_i - V)`` (``trainers.core.decoding``), so checkpoints play through the registry's
``load_policy``. Defaults and their sources: ``trainers.algorithms.cql.config``.
"""

from __future__ import annotations

import torch

from trainers.algorithms.cql.losses import max_q_targets
from trainers.algorithms.ilql.ilql import ILQLModel
from trainers.algorithms.ilql.losses import Transitions


class CQLModel(ILQLModel):
    """ILQL's model and loss terms with CQL's target for Q: the max over the next state's target Q."""

    def regression_targets(self, batch: dict[str, torch.Tensor], steps: Transitions, v_all: torch.Tensor,
                           target_q: torch.Tensor, *, target_all: torch.Tensor | None = None,
                           logits: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Q regresses onto ``r_t + gamma * (1 - done_t) * max_a Q^target(s_{t+1}, a)``; V onto the target Q of
        the dataset token (with ``tau=0.5`` by default: its mean over the data's actions)."""
        if target_all is None:
            raise ValueError("CQLModel.regression_targets needs target_all, the target Q of every token")
        return max_q_targets(steps, target_all, self.config.gamma), target_q


__all__ = ["CQLModel"]
