"""The value heads of the trainers: the ILQL paper's MLP head, twin Q heads with Polyak-averaged target copies
(``TwinQHeads``, shared by the token-level and the utterance-level agents) and ILQL's per-token heads
(``ValueHeads``). ``trainers.core.model`` re-exports them beside the transformers they sit on.

Example::

    from trainers.core.heads import ValueHeads

    heads = ValueHeads(hidden_size=64, vocab_size=40)
    heads.update_targets(0.005)
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from trainers.core.model_config import DECODE_WITH


def mlp_head(hidden_size: int, out_size: int) -> nn.Sequential:
    """The ILQL paper's head: ``Linear(h, 2h) -> ReLU -> Linear(2h, out)``.

    >>> mlp_head(4, 3)(torch.zeros(2, 4)).shape
    torch.Size([2, 3])
    """
    return nn.Sequential(nn.Linear(hidden_size, 2 * hidden_size), nn.ReLU(), nn.Linear(2 * hidden_size, out_size))


@torch.no_grad()
def polyak_update(target: nn.Module, online: nn.Module, alpha: float) -> None:
    """Moves ``target``'s parameters towards ``online``'s: ``target <- (1 - alpha) * target + alpha * online``.

    >>> a, b = torch.nn.Linear(1, 1, bias=False), torch.nn.Linear(1, 1, bias=False)
    >>> _ = torch.nn.init.zeros_(a.weight), torch.nn.init.ones_(b.weight)
    >>> polyak_update(a, b, 0.25); a.weight.tolist()
    [[0.25]]
    """
    for t, o in zip(target.parameters(), online.parameters(), strict=True):
        t.lerp_(o, alpha)


class TwinQHeads(nn.Module):
    """Twin ``Q`` heads (``q1``, ``q2``: ``mlp_head``) and their target copies (``target_q1``, ``target_q2``), which
    only move by Polyak averaging: what the value agents (ILQL's ``ValueHeads``, the utterance-level agents'
    ``trainers.algorithms.utterance_ilql.model.UtteranceHeads``) share. With ``scalar`` (one output) the minima come
    without their last axis.

    >>> heads = TwinQHeads(hidden_size=4, out_size=3)
    >>> heads.target_q(torch.zeros(2, 4)).shape, TwinQHeads(4, 1, scalar=True).target_q(torch.zeros(2, 4)).shape
    (torch.Size([2, 3]), torch.Size([2]))
    """

    def __init__(self, hidden_size: int, out_size: int, scalar: bool = False):
        super().__init__()
        self.scalar = scalar
        self.q1 = mlp_head(hidden_size, out_size)
        self.q2 = mlp_head(hidden_size, out_size)
        self.target_q1 = copy.deepcopy(self.q1).requires_grad_(False)
        self.target_q2 = copy.deepcopy(self.q2).requires_grad_(False)

    def _min(self, first: nn.Module, second: nn.Module, hidden: torch.Tensor) -> torch.Tensor:
        q = torch.minimum(first(hidden), second(hidden))
        return q.squeeze(-1) if self.scalar else q

    @torch.no_grad()
    def target_q(self, hidden: torch.Tensor) -> torch.Tensor:
        """``min(target Q1, target Q2)`` at every position, without gradient."""
        return self._min(self.target_q1, self.target_q2, hidden)

    @torch.no_grad()
    def live_q(self, hidden: torch.Tensor) -> torch.Tensor:
        """``min(Q1, Q2)`` of the trained heads at every position, without gradient."""
        return self._min(self.q1, self.q2, hidden)

    def update_targets(self, alpha: float) -> None:
        """Moves both target heads towards the trained ones by ``alpha`` (``polyak_update``; 1 copies them)."""
        polyak_update(self.target_q1, self.q1, alpha)
        polyak_update(self.target_q2, self.q2, alpha)


class ValueHeads(TwinQHeads):
    """ILQL's heads on the transformer's last hidden states: twin ``Q`` heads over the vocabulary, a ``V``
    head, and target copies of the ``Q`` heads that only move by Polyak averaging (``trainers.algorithms.ilql.ilql``).

    ``decode_with`` says which pair ``acting_q`` (the decoding rule's ``Q``) takes the minimum of: ``"target"``
    (the lagged copies) or ``"live"`` (the trained heads, as LMRL-Gym's agents decode).

    >>> heads = ValueHeads(hidden_size=8, vocab_size=5)
    >>> q1, q2, v = heads(torch.zeros(2, 3, 8))
    >>> q1.shape, v.shape
    (torch.Size([2, 3, 5]), torch.Size([2, 3]))
    """

    def __init__(self, hidden_size: int, vocab_size: int, decode_with: str = "target"):
        if decode_with not in DECODE_WITH:
            raise ValueError(f"ValueHeads: decode_with={decode_with!r}, expected one of {DECODE_WITH}")
        super().__init__(hidden_size, vocab_size)
        self.decode_with = decode_with
        self.v = mlp_head(hidden_size, 1)

    @torch.no_grad()
    def start_at(self, value: float) -> "ValueHeads":
        """Zeroes every head's output weights and sets its bias to ``value`` (the target heads too), so that Q
        and V start as the constant ``value`` everywhere and the advantage ``Q - V`` as 0 (LMRL-Gym starts its
        Wordle heads at -4.4, about its data's mean return). Returns ``self``.

        >>> heads = ValueHeads(hidden_size=4, vocab_size=3).start_at(-4.0)
        >>> [round(float(x), 1) for x in heads.target_q(torch.randn(1, 4))[0]]
        [-4.0, -4.0, -4.0]
        """
        for head in (self.q1, self.q2, self.v, self.target_q1, self.target_q2):
            head[-1].weight.zero_()
            head[-1].bias.fill_(value)
        return self

    def forward(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(Q1, Q2, V)`` at every position: ``[batch, time, vocab]`` twice and ``[batch, time]``."""
        return self.q1(hidden), self.q2(hidden), self.v(hidden).squeeze(-1)

    @torch.no_grad()
    def acting_q(self, hidden: torch.Tensor) -> torch.Tensor:
        """The ``Q`` the decoding rule perturbs the logits with: ``min(Q1, Q2)`` of the heads ``decode_with``
        names, without gradient: ``[batch, time, vocab]``.

        >>> heads = ValueHeads(hidden_size=4, vocab_size=3, decode_with="live").start_at(-4.0)
        >>> _ = heads.q1[-1].bias.data.fill_(-1.0), heads.q2[-1].bias.data.fill_(-2.0)
        >>> heads.acting_q(torch.zeros(1, 4)).tolist(), heads.target_q(torch.zeros(1, 4)).tolist()
        ([[-2.0, -2.0, -2.0]], [[-4.0, -4.0, -4.0]])
        """
        return self.live_q(hidden) if self.decode_with == "live" else self.target_q(hidden)


__all__ = ["mlp_head", "polyak_update", "TwinQHeads", "DECODE_WITH", "ValueHeads"]
