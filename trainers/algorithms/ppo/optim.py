"""PPO's optimisation schedule: Adam with TensorFlow's epsilon placement, linear annealing, the KL controllers.

- ``TFAdam``: Adam as ``tf.train.AdamOptimizer`` computes it (the lm-human-preferences recipe ran on TF 1):
  ``theta -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)``. PyTorch's ``Adam`` adds ``eps`` to the
  *bias-corrected* ``sqrt(v / (1 - b2^t))`` instead, which equals TF's with ``eps / sqrt(1 - b2^t)``: the two
  differ while ``sqrt(v)`` is comparable to ``eps`` (small gradients, the first steps), and agree once
  gradients are large. Huang et al. 2023 ("The N Implementation Details of RLHF with PPO") list it as a detail.
- ``linear_annealing(total)``: the learning-rate factor ``1 - update / total``, reaching 0 at the last update.
- ``AdaptiveKLController``: the proportional controller of Ziegler et al. 2019:
  ``error = clip(KL / target - 1, -0.2, 0.2)``, ``beta *= 1 + error * n / horizon`` after each batch of ``n``
  episodes; ``FixedKLController`` keeps ``beta``.

Example::

    from trainers.algorithms.ppo.optim import AdaptiveKLController

    kl = AdaptiveKLController(0.15, target=6.0, horizon=10_000)
    kl.update(12.0, n_steps=512)      # KL above target: beta grows by 0.2 * 512 / 10,000
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable

import numpy as np
import torch


class TFAdam(torch.optim.Optimizer):
    """Adam with TensorFlow's epsilon placement (see the module docstring); no weight decay, no amsgrad."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8):
        if lr < 0 or eps < 0 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"TFAdam: invalid lr={lr}, betas={betas} or eps={eps}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps})

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One Adam step over every parameter with a gradient."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t = state["step"]
                state["exp_avg"].lerp_(p.grad, 1 - beta1)
                state["exp_avg_sq"].mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                lr_t = group["lr"] * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
                p.addcdiv_(state["exp_avg"], state["exp_avg_sq"].sqrt().add_(group["eps"]), value=-lr_t)
        return loss


def make_optimizer(params: Iterable[torch.nn.Parameter], lr: float, eps: float, tf_style: bool) -> torch.optim.Optimizer:
    """``TFAdam`` (``tf_style``) or PyTorch's ``Adam`` with the same learning rate and epsilon."""
    params = list(params)
    return TFAdam(params, lr=lr, eps=eps) if tf_style else torch.optim.Adam(params, lr=lr, eps=eps)


def linear_annealing(total_updates: int) -> Callable[[int], float]:
    """A ``LambdaLR`` factor ``1 - update / total_updates``: the full rate at update 0, 0 after the last.

    >>> f = linear_annealing(4); [f(u) for u in range(5)]
    [1.0, 0.75, 0.5, 0.25, 0.0]
    """
    if total_updates < 1:
        raise ValueError(f"linear_annealing: total_updates must be >= 1, got {total_updates}")
    return lambda update: max(0.0, 1.0 - update / total_updates)


class FixedKLController:
    """A constant KL coefficient ``value``."""

    def __init__(self, value: float):
        self.value = float(value)

    def update(self, kl: float, n_steps: int) -> None:
        """Nothing changes."""

    def state_dict(self) -> dict[str, float]:
        """What resuming needs."""
        return {"value": self.value}

    def load_state_dict(self, state: dict[str, float]) -> None:
        """Restores ``state_dict``."""
        self.value = float(state["value"])


class AdaptiveKLController(FixedKLController):
    """Ziegler et al.'s proportional controller that steers the measured KL towards ``target``.

    >>> c = AdaptiveKLController(0.15, target=6.0, horizon=10_000); c.update(12.0, 1_000); round(c.value, 6)
    0.153
    """

    def __init__(self, value: float, target: float, horizon: int):
        super().__init__(value)
        if target <= 0 or horizon <= 0:
            raise ValueError(f"AdaptiveKLController: target and horizon must be > 0, got {target}, {horizon}")
        self.target, self.horizon = float(target), int(horizon)

    def update(self, kl: float, n_steps: int) -> None:
        """Moves ``value`` after a batch of ``n_steps`` episodes whose mean KL was ``kl``."""
        error = float(np.clip(kl / self.target - 1.0, -0.2, 0.2))
        self.value *= 1.0 + error * n_steps / self.horizon


__all__ = ["TFAdam", "make_optimizer", "linear_annealing", "FixedKLController", "AdaptiveKLController"]
