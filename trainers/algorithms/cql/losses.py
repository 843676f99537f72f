"""Token-level CQL's TD target as a small pure function on tensors.

Conservative Q-learning (Kumar et al. 2020) on the token-level MDP of ``transforms.token_mdp``: Q of the dataset
token regresses onto ``r_t + gamma * (1 - done_t) * max_a Q_target(s_{t+1}, a)``, the max taken over the whole
vocabulary at the next state (``trainers.algorithms.ilql.losses.transitions``: the state the agent acts from next,
the bootstrapping rule of every trainer here), and the conservative term
(``trainers.algorithms.ilql.losses.cql_loss``, the cross-entropy of ``Q / temperature`` against the dataset token)
pushes down the Q of the tokens the data did not take. ILQL's target is ``V(s_{t+1})``, an expectile over the
dataset's actions; CQL's max over every token is what the conservative term has to hold in check.

The ILQL code's CQL reads the next *action's* target Q (``all_target_qns``, src/models/cql_model.py:68: the target Q
at the action indices shifted by one, zeros after the last), so where a sequence's last action is not terminal (cut,
or an episode that ran out of time) it bootstraps 0 for the batch's longest sequence and the target Q at position 0
for the others (their action indices are padded with 0 in ``RL_Dataset.collate``). Ours bootstraps the state after
it, as the same code's ILQL does (``get_q_loss`` with ``vns``, src/models/iql_model.py:355-362).

Example::

    import torch
    from trainers.algorithms.cql.losses import max_q_targets
    from trainers.algorithms.ilql.losses import Transitions

    steps = Transitions(torch.tensor([[0.0, 1.0]]), torch.tensor([[False, True]]), torch.tensor([[1, 1]]),
                        torch.tensor([[True, False]]))
    target_q = torch.tensor([[[1.0, 3.0], [2.0, 0.0]]])          # Q_target(s, .) at two positions
    max_q_targets(steps, target_q, gamma=0.5)                    # [[0 + 0.5 * 2, 1]]
"""

from __future__ import annotations

import torch

from trainers.algorithms.ilql.losses import Transitions


def max_q_targets(steps: Transitions, target_all: torch.Tensor, gamma: float) -> torch.Tensor:
    """CQL's targets ``r_t + gamma * (1 - done_t) * max_a Q_target(s_{t+1}, a)``, detached.

    Args:
      steps: the batch's transitions (``trainers.algorithms.ilql.losses.transitions``).
      target_all: ``[batch, time, vocab]``, the target network's Q of every token at every position.

    >>> steps = Transitions(torch.tensor([[0.0, 1.0]]), torch.tensor([[False, True]]), torch.tensor([[1, 1]]),
    ...                     torch.tensor([[True, False]]))
    >>> max_q_targets(steps, torch.tensor([[[1.0, 3.0], [2.0, 0.0]]]), 0.5)
    tensor([[1., 1.]])
    """
    return steps.targets(steps.next_values(target_all.max(dim=-1).values), gamma)


__all__ = ["max_q_targets"]
