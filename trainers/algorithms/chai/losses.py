"""CHAI's target as small pure functions on tensors.

CHAI (Verma, Fu, Yang, Levine 2022, arXiv 2204.08426) learns utterance-level Q values over a frozen language
model and bootstraps from the best of a few utterances the LM proposes at the next state: Q at an utterance's
``[EOA]`` regresses onto ``r + gamma * (1 - done) * max_k Q_target(s', a'_k)`` over ``K`` utterances ``a'_k``
sampled at the next state ``s'`` (``trainers.algorithms.utterance_ilql.losses`` gives the positions and
``utterance_q_targets`` the TD target once the next state's value is known).

Example::

    import torch
    from trainers.algorithms.chai.losses import best_of_samples

    best_of_samples(torch.tensor([[-1.0, 2.0, 0.5], [0.0, -3.0, -2.0]]))   # [2, 0]
"""

from __future__ import annotations

import torch


def best_of_samples(sampled_q: torch.Tensor) -> torch.Tensor:
    """The next state's value: the max over its ``K`` sampled utterances' target Q (``[states, K]`` -> ``[states]``).

    >>> best_of_samples(torch.tensor([[-1.0, 2.0, 0.5], [0.0, -3.0, -2.0]])).tolist()
    [2.0, 0.0]
    """
    return sampled_q.max(dim=-1).values


def place_at(values: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """A ``where``-shaped float tensor holding ``values`` (one per true entry, in row-major order), 0 elsewhere.

    >>> place_at(torch.tensor([5.0, 6.0]), torch.tensor([[False, True], [True, False]])).tolist()
    [[0.0, 5.0], [6.0, 0.0]]
    """
    out = torch.zeros(where.shape, dtype=values.dtype, device=values.device)
    out[where] = values
    return out


__all__ = ["best_of_samples", "place_at"]
