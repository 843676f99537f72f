"""The pieces of reward learning from preferences (Christiano et al. 2017, arXiv 1706.03741) that are not
networks: the Bradley-Terry loss with the paper's uniform-response noise model, preference accuracy, the
adaptive L2 controller and the running-window reward normaliser.

Bradley-Terry with noise: the labeller prefers the left clip with probability

    P(left > right) = (1 - eps) * sigmoid(R_left - R_right) + eps / 2

(``eps = 0.1``: "we assume there is a 10% chance that the human responds uniformly at random", paper
section 2.2.3), and the loss is the cross-entropy of ``P`` against the target (1 left, 0 right, 0.5 equal).
Unlike a softmax with flattened targets, the noise term bounds ``P`` in ``[eps/2, 1 - eps/2]``, so a
confidently wrong prediction's gradient vanishes instead of staying at 1: the model stops chasing labels
that look like random responses.

Example::

    import torch
    from trainers.algorithms.reward.losses import preference_loss

    loss = preference_loss(torch.tensor([2.0]), torch.tensor([0.0]), torch.tensor([1.0]), noise=0.1)
"""

from __future__ import annotations

import collections
import dataclasses
import math

import numpy as np
import torch
import torch.nn.functional as F

from trainers.core.device import module_device


def log_preference_probabilities(left: torch.Tensor, right: torch.Tensor,
                                 noise: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log P(left > right), log P(right > left))`` under Bradley-Terry with a ``noise`` uniform-response rate.

    Computed as ``logsumexp(log(1 - eps) + logsigmoid(+-d), log(eps / 2))`` so it is stable for any return
    difference ``d`` and exact for ``eps = 0`` (plain Bradley-Terry).

    >>> lp, lq = log_preference_probabilities(torch.tensor([0.0]), torch.tensor([0.0]), 0.1)
    >>> round(lp.exp().item(), 6), round(lq.exp().item(), 6)
    (0.5, 0.5)
    """
    if not 0.0 <= noise < 1.0:
        raise ValueError(f"noise must be in [0, 1), got {noise}")
    diff = left - right
    if noise == 0.0:
        return F.logsigmoid(diff), F.logsigmoid(-diff)
    keep, uniform = math.log1p(-noise), math.log(noise / 2)
    floor = torch.full_like(diff, uniform)
    log_left = torch.logsumexp(torch.stack([keep + F.logsigmoid(diff), floor]), dim=0)
    log_right = torch.logsumexp(torch.stack([keep + F.logsigmoid(-diff), floor]), dim=0)
    return log_left, log_right


def preference_probability(left: torch.Tensor, right: torch.Tensor, noise: float) -> torch.Tensor:
    """``P(left > right) = (1 - noise) * sigmoid(left - right) + noise / 2``.

    >>> round(preference_probability(torch.tensor(100.0), torch.tensor(0.0), 0.1).item(), 6)
    0.95
    """
    return log_preference_probabilities(left, right, noise)[0].exp()


def preference_loss(left: torch.Tensor, right: torch.Tensor, targets: torch.Tensor, noise: float,
                    reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy of the noisy Bradley-Terry ``P(left > right)`` against ``targets`` (1, 0 or 0.5 for equal).

    ``reduction``: ``mean``, ``sum`` or ``none`` (per pair).

    >>> round(preference_loss(torch.tensor([0.0]), torch.tensor([0.0]), torch.tensor([1.0]), 0.1).item(), 4)
    0.6931
    """
    log_left, log_right = log_preference_probabilities(left, right, noise)
    per_pair = -(targets * log_left + (1.0 - targets) * log_right)
    if reduction == "none":
        return per_pair
    if reduction == "sum":
        return per_pair.sum()
    if reduction == "mean":
        return per_pair.mean()
    raise ValueError(f"reduction must be mean, sum or none, got {reduction!r}")


def preference_accuracy(prob_left: np.ndarray, targets: np.ndarray) -> float:
    """Share of strict judgements (target 0 or 1; equal ones are left out) whose side ``prob_left`` picks.

    NaN when there is no strict judgement.

    >>> preference_accuracy(np.array([0.9, 0.2, 0.6, 0.5]), np.array([1.0, 0.0, 0.0, 0.5]))
    0.6666666666666666
    """
    prob_left, targets = np.asarray(prob_left, float), np.asarray(targets, float)
    strict = targets != 0.5
    if not strict.any():
        return float("nan")
    return float(np.mean((prob_left[strict] > 0.5) == (targets[strict] > 0.5)))


@dataclasses.dataclass
class AdaptiveL2:
    """The paper's regulariser schedule: keep ``validation loss / training loss`` inside ``[low, high]``.

    "We use l2 regularization and adjust the regularization coefficient to keep the validation loss between
    1.1 and 1.5 times the training loss" (section 2.2.3). After each validation, ``update`` multiplies the
    coefficient by ``factor`` when the ratio is above ``high`` (overfitting: regularise more) and divides it
    when the ratio is below ``low`` (underfitting: regularise less), within ``[minimum, maximum]``.

    >>> l2 = AdaptiveL2(coefficient=1e-3, factor=2.0)
    >>> l2.update(val_loss=0.9, train_loss=0.5), l2.update(val_loss=0.5, train_loss=0.5)
    (0.002, 0.001)
    """

    coefficient: float = 1e-4
    low: float = 1.1
    high: float = 1.5
    factor: float = 1.5
    minimum: float = 1e-8
    maximum: float = 10.0

    def update(self, val_loss: float, train_loss: float) -> float:
        """Moves the coefficient according to ``val_loss / train_loss`` and returns the new coefficient."""
        if not (math.isfinite(val_loss) and math.isfinite(train_loss)) or train_loss <= 0:
            return self.coefficient
        ratio = val_loss / train_loss
        if ratio > self.high:
            self.coefficient = min(self.coefficient * self.factor, self.maximum)
        elif ratio < self.low:
            self.coefficient = max(self.coefficient / self.factor, self.minimum)
        return self.coefficient


def l2_penalty(module: torch.nn.Module) -> torch.Tensor:
    """Sum of squares of the module's weight matrices and kernels (biases and norm scales are not penalised)."""
    terms = [p.pow(2).sum() for name, p in module.named_parameters() if p.requires_grad and p.dim() > 1]
    return torch.stack(terms).sum() if terms else torch.zeros((), device=module_device(module))


class RewardNormalizer:
    """Normalises predicted per-step rewards to zero mean and unit variance over a window of recent steps.

    The paper normalises each predictor of the ensemble independently and averages the results (section
    2.2.3; "we normalized the rewards produced by r_hat to have zero mean and constant standard deviation",
    section 2.2.1). Here each member is standardised with its own mean and standard deviation over the
    window, the standardised rewards are averaged, and that average is standardised once more, so the
    returned reward has exactly zero mean and unit variance over the window. ``observe`` adds the raw
    rewards of recent (non-padded) steps, ``[steps, members]``; the window keeps the last ``window`` steps.

    >>> norm = RewardNormalizer(window=4)
    >>> norm.observe(np.array([[1.0], [3.0]]))
    >>> norm.normalise(np.array([[1.0], [3.0]])).tolist()
    [-1.0, 1.0]
    """

    def __init__(self, window: int = 10_000):
        if window < 2:
            raise ValueError(f"the normalisation window needs at least 2 steps, got {window}")
        self.window = window
        self._steps: collections.deque[np.ndarray] = collections.deque(maxlen=window)
        # running sums of the window's rows and of their outer products, so that normalising one step costs
        # O(members^2) instead of a pass over the window (the wrapper normalises every environment step);
        # recomputed exactly once per window of appends, so rounding never accumulates
        self._sum: np.ndarray | None = None
        self._outer: np.ndarray | None = None
        self._since_exact = 0

    def observe(self, raw: np.ndarray) -> None:
        """Adds the raw per-member rewards ``[steps, members]`` of recent steps to the window."""
        raw = np.asarray(raw, np.float64)
        if raw.size == 0:
            return
        rows = raw.reshape(len(raw), -1)
        if self._sum is None or self._sum.shape[0] != rows.shape[1]:
            self._steps.clear()
            self._sum, self._outer = np.zeros(rows.shape[1]), np.zeros((rows.shape[1], rows.shape[1]))
        for row in rows:
            if len(self._steps) == self.window:
                old = self._steps[0]
                self._sum -= old
                self._outer -= np.outer(old, old)
            self._steps.append(row)
            self._sum += row
            self._outer += np.outer(row, row)
        self._since_exact += len(rows)
        if self._since_exact >= self.window:
            data = self.state()
            self._sum, self._outer, self._since_exact = data.sum(0), data.T @ data, 0

    def __len__(self) -> int:
        return len(self._steps)

    def state(self) -> np.ndarray:
        """The window as an array ``[steps, members]`` (what a checkpoint saves)."""
        return np.stack(list(self._steps)) if self._steps else np.zeros((0, 0))

    def load_state(self, steps: np.ndarray) -> None:
        """Replaces the window with ``steps`` (``state()``'s output)."""
        self._steps.clear()
        self._sum = self._outer = None
        self._since_exact = 0
        self.observe(steps)

    def _statistics(self) -> tuple[np.ndarray, np.ndarray, float, float]:
        """Each member's window mean and std, then the mean and std of the averaged standardised rewards.

        From the running sums: ``cov = E[x x^T] - mean mean^T`` (population, as ``np.std``); the averaged
        standardised reward ``mean_m((x_m - mean_m) / std_m)`` has window mean 0 and variance ``w^T cov w``
        with ``w_m = 1 / (members * std_m)``.
        """
        n = len(self._steps)
        mean = self._sum / n
        cov = self._outer / n - np.outer(mean, mean)
        std = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        std = np.where(std > 1e-8, std, 1.0)
        w = 1.0 / (len(mean) * std)
        second_std = float(np.sqrt(max(float(w @ cov @ w), 0.0)))
        return mean, std, 0.0, second_std if second_std > 1e-8 else 1.0

    def normalise(self, raw: np.ndarray) -> np.ndarray:
        """The normalised ensemble reward of raw per-member rewards ``[steps, members]`` -> ``[steps]``.

        With fewer than 2 steps in the window the members' raw rewards are only averaged.
        """
        raw = np.asarray(raw, np.float64).reshape(len(raw), -1)
        if len(self._steps) < 2:
            return raw.mean(1)
        mean, std, second_mean, second_std = self._statistics()
        return (((raw - mean) / std).mean(1) - second_mean) / second_std


def comparison_loss(scores: torch.Tensor, best: torch.Tensor) -> torch.Tensor:
    """The recipe's reward-model loss: cross-entropy of the labeller's choice among ``K`` candidates.

    ``scores`` is ``[batch, K]`` (the reward of each candidate response to one query; the recipe's
    ``best_of_4`` has ``K = 4``), ``best`` the index the labeller picked. ``K = 2`` is the pairwise
    (Bradley-Terry) loss ``-log sigmoid(r_chosen - r_rejected)``.

    >>> round(float(comparison_loss(torch.zeros(1, 4), torch.tensor([0]))), 4)   # log 4
    1.3863
    """
    return F.cross_entropy(scores, best)


__all__ = ["log_preference_probabilities", "preference_probability", "preference_loss", "preference_accuracy", "AdaptiveL2", "l2_penalty", "RewardNormalizer", "comparison_loss"]
