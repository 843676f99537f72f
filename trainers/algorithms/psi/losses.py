"""ψ-learning's target and loss as small pure functions on tensors.

ψ-learning (Jaques et al. 2019's KL-control family, as the ILQL authors' baseline trains it) learns a Q that is
soft with respect to the behaviour policy ``pi_beta``: on the token-level MDP (``transforms.token_mdp``) Q of the
dataset token regresses, under the Huber loss, onto

    r_t / r_scale + log pi_beta(a_t | s_t) + gamma * (1 - done_t) * logsumexp_a Q_target(s_{t+1}, a)

where the logsumexp runs over the whole vocabulary at the next state (``trainers.algorithms.ilql.losses.transitions``,
the bootstrapping rule of every trainer here; the ILQL code's ψ reads the next action's target Q as its CQL does,
``trainers.algorithms.cql.losses``). Dividing the reward by ``r_scale`` (0.1) weighs it against the
log-probabilities. Tensors are aligned on the action token as in ``trainers.algorithms.ilql.losses``.

Example::

    import torch
    from trainers.algorithms.ilql.losses import Transitions
    from trainers.algorithms.psi.losses import psi_targets

    steps = Transitions(torch.tensor([[0.0, -1.0]]), torch.tensor([[False, True]]), torch.tensor([[1, 1]]),
                        torch.tensor([[True, False]]))
    psi_targets(steps, torch.log(torch.tensor([[0.5, 0.25]])), torch.zeros(1, 2, 2), gamma=1.0, r_scale=0.1)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from trainers.algorithms.ilql.losses import Transitions
from trainers.core.objective import masked_mean


def psi_targets(steps: Transitions, log_pi: torch.Tensor, target_all: torch.Tensor, gamma: float,
                r_scale: float) -> torch.Tensor:
    """ψ-learning's targets ``r_t / r_scale + log pi_beta(a_t | s_t) + gamma * (1 - done_t) * logsumexp
    Q_target(s_{t+1}, .)``, detached.

    Args:
      steps: the batch's transitions (``trainers.algorithms.ilql.losses.transitions``).
      log_pi: ``[batch, time - 1]``, the behaviour policy's log-probability of the dataset token.
      target_all: ``[batch, time, vocab]``, the target network's Q of every token at every position.

    >>> steps = Transitions(torch.tensor([[0.0, -1.0]]), torch.tensor([[False, True]]), torch.tensor([[1, 1]]),
    ...                     torch.tensor([[True, False]]))
    >>> t = psi_targets(steps, torch.log(torch.tensor([[0.5, 0.25]])), torch.zeros(1, 2, 2), 1.0, 0.1)
    >>> [round(x, 4) for x in t[0].tolist()]          # [0 + log 0.5 + log(e^0 + e^0), -1/0.1 + log 0.25]
    [0.0, -11.3863]
    """
    if not r_scale > 0:
        raise ValueError(f"psi_targets: r_scale must be > 0, got {r_scale}")
    soft_next = steps.next_values(torch.logsumexp(target_all, dim=-1))
    return steps.targets(soft_next, gamma, rewards=steps.rewards / r_scale + log_pi.detach())


def huber_q_loss(q_taken: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean Huber loss (threshold 1, PyTorch's default) of ``Q(s_t, a_t)`` against its targets on action positions.

    >>> huber_q_loss(torch.tensor([0.0, 0.0]), torch.tensor([0.5, 3.0]), torch.tensor([True, True]))
    tensor(1.3125)
    """
    return masked_mean(F.huber_loss(q_taken, targets, reduction="none"), mask)


__all__ = ["psi_targets", "huber_q_loss"]
