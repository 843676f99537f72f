"""The pieces of per-token ILQL (Snell et al. 2022, arXiv 2206.11871) as small pure functions on tensors.

Token-level MDP, as in the paper: the state before an agent token is everything before it, the action is
that token; environment tokens (observations) are deterministic transitions between agent tokens. So the
"next state" of action token ``t`` is the state the agent acts from next: the state before the next action
token (``decision_points``: after an utterance's ``[EOA]``, the ``[EOO]`` that ends the next observation). One
rule for every bootstrapping trainer (``transitions``), the ILQL code's (``DataPoint.from_obs`` and ``to_tensors``
in src/data/rl_data.py, whose ``terminals`` flag only a terminal episode's last state, and ``get_q_loss`` in
src/models/iql_model.py:355-362, which bootstraps ``V`` of every other next state): the target bootstraps that
state's value unless ``t`` ended a terminal episode. An episode that ran out of time (``is_last`` without
``is_terminal``) bootstraps the state after its last observation; a sequence cut at ``max_length`` bootstraps the
last state it keeps, and an action whose next state was cut away leaves the value losses (the ILQL code drops it
from its action indices, ``a[:len(s) - 1]`` in ``to_tensors``, src/data/rl_data.py:56).

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

import dataclasses

import torch
import torch.nn.functional as F

from trainers.core.model import polyak_update
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


def decision_points(input_ids: torch.Tensor, action_mask: torch.Tensor, attention_mask: torch.Tensor, eoo_id: int,
                    eoa_id: int) -> torch.Tensor:
    """``[batch, time]`` bool: the positions whose hidden state is a state the agent acts from, i.e. whose next
    token is (or, past a cut or an episode's end, would be) an action token: every ``[EOO]`` (an observation's end;
    an action follows it, or the episode ended there) and every action token but ``[EOA]`` (its utterance goes on).

    >>> ids = torch.tensor([[1, 9, 3, 7, 8, 4, 9, 3, 2]])  # [BOS] o [EOO] a a [EOA] o [EOO] [EOS]
    >>> action = torch.tensor([[0, 0, 0, 1, 1, 1, 0, 0, 0]]).bool()
    >>> decision_points(ids, action, torch.ones(1, 9), eoo_id=3, eoa_id=4).nonzero()[:, 1].tolist()
    [2, 3, 4, 7]
    """
    real = attention_mask.bool()
    utterance_goes_on = action_mask.bool() & (input_ids != eoa_id)
    return real & ((input_ids == eoo_id) | utterance_goes_on)


@dataclasses.dataclass(frozen=True)
class Transitions:
    """The one-step transitions of a batch's action tokens: what every bootstrapping trainer's TD target is made of,
    so that one rule (``transitions``) holds for all of them. Aligned on the outputs at positions ``0..T-2``
    (position ``t`` is about token ``t + 1``, ``trainers.core.model.action_targets``), or, for the utterance-level
    agents, on the tokens themselves (position ``t`` is token ``t``, an utterance's ``[EOA]``).

    ``next_state[t]`` is the input position whose hidden state is the next state (index a ``[batch, T]`` tensor of
    values at every position with it: ``next_values``); ``has_next`` says whether that state is inside the sequence.
    """

    #: the reward of the token.
    rewards: torch.Tensor
    #: bool: the token ended a terminal episode (nothing is bootstrapped after it).
    dones: torch.Tensor
    #: long: the position of the next state (clamped into the sequence where there is none).
    next_state: torch.Tensor
    #: bool: the next state is inside the (possibly cut) sequence.
    has_next: torch.Tensor

    def next_values(self, values: torch.Tensor) -> torch.Tensor:
        """``values`` (``[batch, T]``, one per input position) at each transition's next state, 0 where it has none."""
        gathered = values.gather(1, self.next_state)
        return torch.where(self.has_next, gathered, torch.zeros_like(gathered))

    def targets(self, next_values: torch.Tensor, gamma: float, rewards: torch.Tensor | None = None) -> torch.Tensor:
        """``r_t + gamma * (1 - done_t) * next_values`` (``td_targets``), detached; ``rewards`` replaces the batch's
        (psi's scaled reward plus log-probability)."""
        return td_targets(self.rewards if rewards is None else rewards, next_values, self.dones, gamma)

    def valid(self, mask: torch.Tensor) -> torch.Tensor:
        """The positions of ``mask`` that have a target: terminal, or with their next state in the sequence."""
        return mask & (self.dones | self.has_next)


def transitions(batch: dict[str, torch.Tensor], eoo_id: int, eoa_id: int, outputs: bool = True) -> Transitions:
    """The ``Transitions`` of a token batch (``transforms.token_mdp``'s fields): each action token's next state is the
    first ``decision_points`` position at or after it (so a token inside an utterance moves to the state after it,
    an utterance's ``[EOA]`` to the ``[EOO]`` that ends the next observation). ``outputs``: aligned on the outputs
    at ``0..T-2`` (the token-level trainers); else on the tokens (the utterance-level ones).

    >>> ids = torch.tensor([[1, 9, 3, 7, 4, 9, 3, 2]])  # [BOS] o [EOO] a [EOA] o [EOO] [EOS], ran out of time
    >>> batch = {"input_ids": ids, "action_mask": torch.tensor([[0, 0, 0, 1, 1, 0, 0, 0]]),
    ...          "attention_mask": torch.ones(1, 8), "rewards": torch.zeros(1, 8), "dones": torch.zeros(1, 8)}
    >>> steps = transitions(batch, eoo_id=3, eoa_id=4)
    >>> steps.next_state[0, 2:4].tolist(), steps.has_next[0, 2:4].tolist()   # 'a' -> its own state; [EOA] -> [EOO]
    ([3, 6], [True, True])
    """
    decision = decision_points(batch["input_ids"], batch["action_mask"], batch["attention_mask"], eoo_id, eoa_id)
    batch_size, time = decision.shape
    positions = torch.arange(time, device=decision.device).expand(batch_size, time)
    at = torch.where(decision, positions, torch.full_like(positions, time))
    first_at_or_after = at.flip(1).cummin(1).values.flip(1)
    rewards, dones = batch["rewards"].float(), batch["dones"].bool()
    if outputs:  # the output at t is about the token at t + 1
        first_at_or_after, rewards, dones = first_at_or_after[:, 1:], rewards[:, 1:], dones[:, 1:]
    has_next = first_at_or_after < time
    return Transitions(rewards, dones, first_at_or_after.clamp(max=time - 1), has_next)


__all__ = ["expectile_loss", "next_action_values", "td_targets", "q_loss", "cql_loss", "bc_loss", "polyak_update",
           "decision_points", "Transitions", "transitions"]
