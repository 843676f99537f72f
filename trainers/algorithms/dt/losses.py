"""The Decision Transformer's return prefix as a small pure function on tensors.

A Decision Transformer (Chen et al. 2021) is behaviour cloning conditioned on the return: a linear embedding of
the episode's return sits ahead of the history, and the LM learns which actions lead to which returns. At play
time the return asked for is a setting of the agent. Here the prefix takes the slot of the ``[BOS]`` token that
starts every episode's token sequence (``transforms.token_mdp``): its embedding is added to ``[BOS]``'s, so no
position shifts and the agents' left padding and key/value caches work unchanged. (A separate prefix position
whose embedding is ``W R + b`` computes the same family of functions, one token longer.)

Example::

    import torch
    from trainers.algorithms.dt.losses import with_return_prefix

    tokens = torch.zeros(1, 3, 2)                                  # embeddings of [BOS] x y
    with_return_prefix(tokens, torch.tensor([[1, 7, 8]]), 1, torch.tensor([[5.0, 6.0]]))
"""

from __future__ import annotations

import torch


def with_return_prefix(token_embeddings: torch.Tensor, input_ids: torch.Tensor, bos_id: int,
                       prefix: torch.Tensor) -> torch.Tensor:
    """``token_embeddings`` (``[batch, time, n_embd]``) with each row's ``prefix`` (``[batch, n_embd]``, the return's
    embedding) added at its ``[BOS]`` position; rows or calls without ``[BOS]`` (a cached continuation) are unchanged.

    >>> out = with_return_prefix(torch.zeros(1, 3, 2), torch.tensor([[1, 7, 8]]), 1, torch.tensor([[5.0, 6.0]]))
    >>> out.tolist()
    [[[5.0, 6.0], [0.0, 0.0], [0.0, 0.0]]]
    """
    at_bos = (input_ids == bos_id).unsqueeze(-1).to(token_embeddings.dtype)
    return token_embeddings + at_bos * prefix.to(token_embeddings.dtype).unsqueeze(1)


__all__ = ["with_return_prefix"]
