"""Token-level CQL's TD target as a small pure function on tensors.

Conservative Q-learning (Kumar et al. 2020) on the token-level MDP of ``transforms.token_mdp``: Q of the dataset
token regresses onto ``r_t + gamma * (1 - done_t) * max_a Q_target(s_{t+1}, a)``, the max taken over the whole
vocabulary at the state before the next action token of the sequence (0 when there is none), and the conservative
term (``trainers.algorithms.ilql.losses.cql_loss``, the cross-entropy of ``Q / temperature`` against the dataset
token) pushes down the Q of the tokens the data did not take. ILQL's target is ``V(s_{t+1})``, an expectile over
the dataset's actions; CQL's max over every token is what the conservative term has to hold in check.

Tensors are aligned on the action token as in ``trainers.algorithms.ilql.losses``.

Example::

    import torch
    from trainers.algorithms.cql.losses import max_q_targets

    target_q = torch.tensor([[[1.0, 3.0], [2.0, 0.0]]])          # Q_target(s_t, .) at two action positions
    max_q_targets(torch.tensor([[0.0, 1.0]]), target_q, torch.tensor([[False, True]]),
                  torch.tensor([[True, True]]), gamma=0.5)       # [[0 + 0.5 * 2, 1]]
"""

from __future__ import annotations

import torch

from trainers.algorithms.ilql.losses import next_action_values, td_targets


def max_q_targets(rewards: torch.Tensor, target_all: torch.Tensor, dones: torch.Tensor, mask: torch.Tensor,
                  gamma: float) -> torch.Tensor:
    """CQL's targets ``r_t + gamma * (1 - done_t) * max_a Q_target(s_{t+1}, a)``, detached.

    Args:
      rewards, dones: ``[batch, time]``, on the action token.
      target_all: ``[batch, time, vocab]``, the target network's Q of every token at every position.
      mask: ``[batch, time]`` bool, the action positions (``s_{t+1}`` is the state before the next one).

    >>> q = torch.tensor([[[1.0, 3.0], [2.0, 0.0]]])
    >>> max_q_targets(torch.tensor([[0.0, 1.0]]), q, torch.tensor([[False, True]]), torch.tensor([[True, True]]), 0.5)
    tensor([[1., 1.]])
    """
    best_next, _ = next_action_values(target_all.max(dim=-1).values, mask)
    return td_targets(rewards, best_next, dones, gamma)


__all__ = ["max_q_targets"]
