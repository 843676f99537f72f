"""ψ-learning, one of the ILQL paper's baselines: ILQL's model (``trainers.algorithms.ilql.ilql.ILQLModel``: an LM
head, twin Q heads over the vocabulary, a V head, target Q heads moved by Polyak averaging) with a soft TD target
that reads the behaviour policy. One step minimises

    q_weight    * sum_i Huber(Q_i(s_t, a_t) - [r_t / r_scale + log pi_beta(a_t | s_t)
                                               + gamma * (1 - done_t) * logsumexp_a Q^target(s_{t+1}, a)])
  + v_weight    * (Q^target(s_t, a_t) - V(s_t))^2 / 2                                     (tau = 0.5)
  + awac_weight * -log pi_beta(a_t | s_t)                                                  (BC: pi_beta)

over the dataset's action tokens (``trainers.algorithms.psi.losses``). ``pi_beta`` is, by default, a fixed BC
model run without gradient (``ILQLModel.fixed_policy_logits``; the ILQL code's ``detach_full_policy=True`` in
src/models/bcq_model.py:65): the policy of ``separate_value_trunk`` loaded from ``model.checkpoint`` (a BC run's
``lm/``) and never trained (``awac_weight=0``); with ``awac_weight > 0`` it is trained by BC in the same step instead,
its log-probability detached in the target. Agents act as ILQL's do, the BC logits perturbed by
``beta * (min_i Q_i - V)``. Defaults and their sources: ``trainers.algorithms.psi.config``.
"""

from __future__ import annotations

import torch

from trainers.algorithms.ilql.ilql import ILQLModel
from trainers.algorithms.ilql.losses import Transitions
from trainers.algorithms.psi.losses import huber_q_loss, psi_targets
from trainers.core.model import action_targets


class PsiModel(ILQLModel):
    """ILQL's model with ψ-learning's target (reward scaled, plus ``log pi_beta``, plus the soft max of the next
    state's target Q) and the Huber loss for Q."""

    #: the target reads ``log pi_beta`` of the dataset token.
    reads_policy = True

    def q_regression_loss(self, q_taken: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The Huber loss of one Q head against ψ's targets."""
        return huber_q_loss(q_taken, targets, mask)

    def regression_targets(self, batch: dict[str, torch.Tensor], steps: Transitions, v_all: torch.Tensor,
                           target_q: torch.Tensor, *, target_all: torch.Tensor | None = None,
                           logits: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Q regresses onto ψ's targets (``psi_targets``); V onto the target Q of the dataset token."""
        if target_all is None or logits is None:
            raise ValueError("PsiModel.regression_targets needs target_all and the policy's logits")
        actions, _ = action_targets(batch)
        log_pi = torch.log_softmax(logits.float(), dim=-1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        c = self.config
        return psi_targets(steps, log_pi, target_all, c.gamma, c.r_scale), target_q


__all__ = ["PsiModel"]
