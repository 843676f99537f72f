"""The pieces of per-token ILQL (Snell et al. 2022, arXiv 2206.11871) as small pure functions on tensors.

Token-level MDP, as in the paper: the state before an agent token is everything before it, the action is
that token; environment tokens (observations) are deterministic transitions between agent tokens. So
for the action tokens of a sequence, in order, the "next state" of action token ``t`` is the state before
the next action token of the same sequence, and its value is ``V`` there (zero when ``t`` ends a terminal
episode or is the last action token of the sequence).

Everything here works on ``[batch, time]`` tensors aligned on the *action token* (position ``t`` holds
``Q(s_t, a_t)``, ``V(s_t)``, the reward of ``a_t`` and whether ``a_t`` ended the episode), with a mask of
which positions are action tokens. ``trainers.algorithms.ilql.ilql`` does the shifting from the transformer's outputs.

Example::

    import torch
    from trainers.algorithms.ilql.losses import expectile_loss, td_targets

    v = torch.tensor([[0.0, 1.0]]); q = torch.tensor([[1.0, 0.0]])
    expectile_loss(q - v, tau=0.7, mask=torch.ones(1, 2, dtype=torch.bool))   # (0.7*1 + 0.3*1) / 2 = 0.5
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from trainers.core.objective import masked_mean


def expectile_loss(diff: torch.Tensor, tau: float, mask: torch.Tensor) -> torch.Tensor:
    """IQL's asymmetric squared loss of ``diff = target - prediction``: ``|tau - 1[diff < 0]| * diff**2``.

    With ``tau > 0.5`` under-estimates cost more than over-estimates, so ``V`` regresses towards an upper
    expectile of ``Q`` over the dataset's actions (``tau = 0.5`` gives half the mean squared error).

    >>> expectile_loss(torch.tensor([2.0, -2.0]), 0.9, torch.tensor([True, True]))
    tensor(2.)
    """
    weight = torch.where(diff < 0, 1.0 - tau, tau)
    return masked_mean(weight * diff.square(), mask)


def next_action_values(values: torch.Tensor, action_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For each position, ``values`` at the next action position after it, and whether there is one.

    Args:
      values: ``[batch, time]`` (e.g. ``V(s_t)`` at every position).
      action_mask: ``[batch, time]`` bool, true on action tokens.

    Returns:
      ``(next_values, has_next)``, both ``[batch, time]``; ``next_values`` is 0 where ``has_next`` is false.

    >>> v = torch.tensor([[10.0, 11.0, 12.0, 13.0]])
    >>> nxt, ok = next_action_values(v, torch.tensor([[True, False, True, True]]))
    >>> nxt.tolist(), ok.tolist()
    ([[12.0, 12.0, 13.0, 0.0]], [[True, True, True, False]])
    """
    batch, time = action_mask.shape
    positions = torch.arange(time, device=values.device).expand(batch, time)
    sentinel = torch.full_like(positions, time)
    at_action = torch.where(action_mask, positions, sentinel)
    # index of the first action strictly after t: reverse cumulative minimum, shifted by one
    following = torch.cat([at_action[:, 1:], sentinel[:, :1]], dim=1)
    next_index = following.flip(1).cummin(1).values.flip(1)
    has_next = next_index < time
    gathered = values.gather(1, next_index.clamp(max=time - 1))
    return torch.where(has_next, gathered, torch.zeros_like(gathered)), has_next


def td_targets(rewards: torch.Tensor, next_values: torch.Tensor, dones: torch.Tensor, gamma: float) -> torch.Tensor:
    """One-step TD targets ``r_t + gamma * (1 - done_t) * V(s_{t+1})``, detached (no gradient to ``V``).

    >>> td_targets(torch.tensor([1.0, 1.0]), torch.tensor([2.0, 2.0]), torch.tensor([False, True]), 0.5)
    tensor([2., 1.])
    """
    keep = 1.0 - dones.to(rewards.dtype)
    return (rewards + gamma * keep * next_values).detach()


def q_loss(q_taken: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean squared TD error of ``Q(s_t, a_t)`` against its (detached) targets on action positions.

    >>> q_loss(torch.tensor([1.0, 3.0]), torch.tensor([2.0, 0.0]), torch.tensor([True, False]))
    tensor(1.)
    """
    return masked_mean((q_taken - targets).square(), mask)


def cql_loss(q_all: torch.Tensor, actions: torch.Tensor, mask: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """The CQL term of ILQL: cross-entropy of ``Q(s_t, .) / temperature`` as logits over the vocabulary against
    the dataset's token ``a_t``; it pushes down Q of tokens the data never took at that state.

    Args:
      q_all: ``[batch, time, vocab]``; actions: ``[batch, time]`` token ids; mask: action positions.
      temperature: divides Q before the softmax (the ILQL authors' ``cql_temp``, 1.0 in their configs).

    >>> q = torch.tensor([[[0.0, 0.0]]])
    >>> round(float(cql_loss(q, torch.tensor([[1]]), torch.tensor([[True]]))), 4)   # log 2
    0.6931
    """
    if not temperature > 0:
        raise ValueError(f"cql_loss: temperature must be > 0, got {temperature}")
    ce = F.cross_entropy((q_all / temperature).flatten(0, 1), actions.flatten(), reduction="none").view_as(actions)
    return masked_mean(ce, mask)


def bc_loss(logits: torch.Tensor, actions: torch.Tensor, mask: torch.Tensor,
            weights: torch.Tensor | None = None) -> torch.Tensor:
    """(Weighted) negative log-likelihood of the dataset's action tokens under the policy ``logits``:
    behaviour cloning with ``weights=None``, the AWAC term with ``weights = exp(beta * advantage)``.

    >>> logits = torch.tensor([[[0.0, 0.0]]])
    >>> round(float(bc_loss(logits, torch.tensor([[0]]), torch.tensor([[True]]))), 4)
    0.6931
    """
    nll = F.cross_entropy(logits.flatten(0, 1), actions.flatten(), reduction="none").view_as(actions)
    if weights is not None:
        nll = nll * weights.detach()
    return masked_mean(nll, mask)


@torch.no_grad()
def polyak_update(target: torch.nn.Module, online: torch.nn.Module, alpha: float) -> None:
    """Moves ``target``'s parameters towards ``online``'s: ``target <- (1 - alpha) * target + alpha * online``.

    >>> a, b = torch.nn.Linear(1, 1, bias=False), torch.nn.Linear(1, 1, bias=False)
    >>> _ = torch.nn.init.zeros_(a.weight), torch.nn.init.ones_(b.weight)
    >>> polyak_update(a, b, 0.25); a.weight.tolist()
    [[0.25]]
    """
    for t, o in zip(target.parameters(), online.parameters(), strict=True):
        t.lerp_(o, alpha)


__all__ = ["expectile_loss", "next_action_values", "td_targets", "q_loss", "cql_loss", "bc_loss", "polyak_update"]
