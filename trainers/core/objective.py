"""What a trainer's module returns from ``forward(batch)``: the loss, over how many tokens, and metrics.

The training loop (``trainers.core.loop``) weights each micro-batch's mean loss by its share of the optimizer
step's tokens, which makes gradient accumulation and data parallelism exact (``LossOutput.count``).

Example::

    import torch
    from trainers.core.objective import LossOutput

    out = LossOutput(loss=torch.tensor(0.5), count=torch.tensor(12), metrics={"nll": torch.tensor(0.5)})
"""

from __future__ import annotations

import dataclasses

import torch


@dataclasses.dataclass
class LossOutput:
    """A micro-batch's objective.

    Attributes:
      loss: the mean loss over the micro-batch's ``count`` tokens (differentiable).
      count: how many tokens the mean is over (the action tokens the batch predicts).
      metrics: scalar diagnostics, each a mean over the same tokens (logged, not differentiated).
    """

    loss: torch.Tensor
    count: torch.Tensor
    metrics: dict[str, torch.Tensor]


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` over the positions where ``mask`` is true (0 when none is).

    >>> masked_mean(torch.tensor([1.0, 5.0, 3.0]), torch.tensor([True, False, True]))
    tensor(2.)
    """
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp(min=1.0)


__all__ = ["LossOutput", "masked_mean"]
