"""ψ-learning's target and loss as small pure functions on tensors.

ψ-learning (Jaques et al. 2019's KL-control family, as the ILQL authors' baseline trains it) learns a Q that is
soft with respect to the behaviour policy ``pi_beta``: on the token-level MDP (``transforms.token_mdp``) Q of the
dataset token regresses, under the Huber loss, onto

    r_t / r_scale + log pi_beta(a_t | s_t) + gamma * (1 - done_t) * logsumexp_a Q_target(s_{t+1}, a)

where the logsumexp runs over the whole vocabulary at the state before the next action token (0 when there is
none). Dividing the reward by ``r_scale`` (0.1) weighs it against the log-probabilities. Tensors are aligned
on the action token as in ``trainers.algorithms.ilql.losses``.

Example::

    import torch
    from trainers.algorithms.psi.losses import psi_targets

    psi_targets(torch.tensor([[0.0, -1.0]]), torch.log(torch.tensor([[0.5, 0.25]])), torch.zeros(1, 2, 2),
                torch.tensor([[False, True]]), torch.tensor([[True, True]]), gamma=1.0, r_scale=0.1)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from trainers.algorithms.ilql.losses import next_action_values, td_targets
from trainers.core.objective import masked_mean


def psi_targets(rewards: torch.Tensor, log_pi: torch.Tensor, target_all: torch.Tensor, dones: torch.Tensor,
                mask: torch.Tensor, gamma: float, r_scale: float) -> torch.Tensor:
    """ψ-learning's targets ``r_t / r_scale + log pi_beta(a_t | s_t) + gamma * (1 - done_t) * logsumexp
    Q_target(s_{t+1}, .)``, detached.

    Args:
      rewards, dones: ``[batch, time]``, on the action token.
      log_pi: ``[batch, time]``, the behaviour policy's log-probability of the dataset token.
      target_all: ``[batch, time, vocab]``, the target network's Q of every token at every position.
      mask: ``[batch, time]`` bool, the action positions.

    >>> t = psi_targets(torch.tensor([[0.0, -1.0]]), torch.log(torch.tensor([[0.5, 0.25]])), torch.zeros(1, 2, 2),
    ...                 torch.tensor([[False, True]]), torch.tensor([[True, True]]), 1.0, 0.1)
    >>> [round(x, 4) for x in t[0].tolist()]          # [0 + log 0.5 + log(e^0 + e^0), -1/0.1 + log 0.25]
    [0.0, -11.3863]
    """
    if not r_scale > 0:
        raise ValueError(f"psi_targets: r_scale must be > 0, got {r_scale}")
    soft_next, _ = next_action_values(torch.logsumexp(target_all, dim=-1), mask)
    return td_targets(rewards / r_scale + log_pi.detach(), soft_next, dones, gamma)


def huber_q_loss(q_taken: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean Huber loss (threshold 1, PyTorch's default) of ``Q(s_t, a_t)`` against its targets on action positions.

    >>> huber_q_loss(torch.tensor([0.0, 0.0]), torch.tensor([0.5, 3.0]), torch.tensor([True, True]))
    tensor(1.3125)
    """
    return masked_mean(F.huber_loss(q_taken, targets, reduction="none"), mask)


__all__ = ["psi_targets", "huber_q_loss"]
