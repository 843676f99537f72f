"""Utterance-level ILQL's pieces as small pure functions on ``[batch, time]`` tensors aligned on the input tokens.

An utterance (one action ``a_k`` of the episode, its tokens and its ``[EOA]``) is one step of this MDP: its value
``Q(s_k, a_k)`` is read at its ``[EOA]`` token, after the whole utterance; the state's value ``V(s_k)`` at the token
just before its first token (the ``[EOO]`` that ends the observation). The episode's reward ``r_k`` and done flag
sit on that ``[EOA]`` (``transforms.token_mdp``). So:

* ``utterance_positions``: where each utterance ends (its ``[EOA]``) and where its state is read;
* Q at an end regresses onto ``r_k + gamma * (1 - done_k) * V(s_{k+1})``, ``V`` at the next state
  (``trainers.algorithms.ilql.losses.transitions``, the bootstrapping rule of every trainer here: the ``[EOO]``
  that ends the next observation, also after an episode that ran out of time; the ILQL code's utterance-level
  indices, ``u_state_idxs`` in src/data/rl_data.py, end with that state too); an utterance whose next state was
  cut away has no target and is left out;
* V at a state position regresses by expectile onto the target Q of that utterance's end.

Example::

    import torch
    from trainers.algorithms.utterance_ilql.losses import utterance_positions

    batch = {"action_mask": torch.tensor([[0, 0, 1, 1, 0, 1, 1]]), "turn_end": torch.tensor([[0, 0, 0, 1, 0, 0, 1]]),
             "attention_mask": torch.ones(1, 7)}
    utterance_positions(batch)   # ends at 3 and 6, states read at 1 and 4
"""

from __future__ import annotations

import torch

from trainers.algorithms.ilql.losses import Transitions, next_action_values


def utterance_positions(batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ends, states)``, both ``[batch, time]`` bool: each utterance's ``[EOA]`` inside the sequence, and the
    position before each utterance's first token (where its state's value is read).

    >>> batch = {"action_mask": torch.tensor([[0, 0, 1, 1, 0, 1, 1]]), "turn_end": torch.tensor([[0, 0, 0, 1, 0, 0, 1]]),
    ...          "attention_mask": torch.ones(1, 7)}
    >>> [m.nonzero()[:, 1].tolist() for m in utterance_positions(batch)]
    [[3, 6], [1, 4]]
    """
    action = batch["action_mask"].bool() & batch["attention_mask"].bool()
    ends = batch["turn_end"].bool() & action
    before = torch.cat([torch.zeros_like(action[:, :1]), action[:, :-1]], dim=1)
    first = action & ~before
    states = torch.cat([first[:, 1:], torch.zeros_like(first[:, :1])], dim=1)
    return ends, states


def utterance_q_targets(steps: Transitions, v: torch.Tensor, ends: torch.Tensor,
                        gamma: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(targets, valid)``: at each utterance end, ``r + gamma * (1 - done) * V(next state)`` (detached; ``steps``
    aligned on the tokens, ``transitions(..., outputs=False)``), and whether it has one (terminal, or its next state
    inside the sequence).

    >>> steps = Transitions(torch.tensor([[0.0, -1.0, 0.0, 0.0]]), torch.tensor([[False, False, False, True]]),
    ...                     torch.tensor([[0, 2, 2, 3]]), torch.tensor([[True, True, True, True]]))
    >>> ends = torch.tensor([[False, True, False, True]])
    >>> t, ok = utterance_q_targets(steps, torch.tensor([[5.0, 0.0, 2.0, 0.0]]), ends, 0.5)
    >>> t[ends].tolist(), ok[ends].tolist()
    ([0.0, 0.0], [True, True])
    """
    return steps.targets(steps.next_values(v.detach()), gamma), steps.valid(ends)


def utterance_v_targets(target_q: torch.Tensor, ends: torch.Tensor,
                        states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(targets, valid)``: at each state position, the target Q at the end of the utterance said there, and
    whether that utterance ends inside the sequence.

    >>> ends = torch.tensor([[False, True, False, False]]); states = torch.tensor([[True, False, True, False]])
    >>> t, ok = utterance_v_targets(torch.tensor([[0.0, -3.0, 0.0, 0.0]]), ends, states)
    >>> t[states].tolist(), ok[states].tolist()
    ([-3.0, 0.0], [True, False])
    """
    at_end, has_end = next_action_values(target_q.detach(), ends)
    return at_end, states & has_end


__all__ = ["utterance_positions", "utterance_q_targets", "utterance_v_targets"]
