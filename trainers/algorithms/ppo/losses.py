"""The pieces of PPO for language models (Ziegler et al. 2019, "Fine-Tuning Language Models from Human
Preferences", the lm-human-preferences recipe) as small pure functions on tensors.

Everything works on ``[batch, response_length]`` tensors aligned on the *response token*: position ``t``
holds the log-probability of response token ``t``, the value of the state before it, its reward, and a
``mask`` of which positions are real response tokens (up to and including the truncate token). The
trainer (``trainers.algorithms.ppo.config``) builds them from the model's outputs; each function here is one detail of the
recipe and has its own unit test (``tests/test_ppo_losses.py``).

Example::

    import torch
    from trainers.algorithms.ppo.losses import gae

    rewards = torch.tensor([[0.0, 1.0]]); values = torch.zeros(1, 2); mask = torch.ones(1, 2, dtype=torch.bool)
    advantages, returns = gae(rewards, values, mask, gamma=1.0, lam=0.95)   # [[0.95, 1.0]]
"""

from __future__ import annotations

import torch

from trainers.core.objective import masked_mean

#: what masked-out logits are set to: finite, so ``p * log p`` stays 0 (not nan) in the entropy.
MASKED_LOGIT = -1e9


def masked_var(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Biased variance of ``values`` over the positions where ``mask`` is true (as ``tf.nn.moments``).

    >>> masked_var(torch.tensor([1.0, 3.0, 100.0]), torch.tensor([True, True, False]))
    tensor(1.)
    """
    mean = masked_mean(values, mask)
    return masked_mean((values - mean).square(), mask)


def whiten(values: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True) -> torch.Tensor:
    """``(values - mean) / sqrt(var + 1e-8)`` over the masked positions (others are returned as 0).

    With ``shift_mean=False`` the mean is added back afterwards: the values are rescaled to unit standard
    deviation but keep their mean. The recipe whitens rewards that way (``whiten_rewards``: the sign of the
    score survives) and advantages with ``shift_mean=True`` (mean 0). This is lm-human-preferences'
    ``utils.whiten`` (``tf.nn.moments``' population variance, 1e-8 inside the rsqrt) restricted to the kept
    tokens; note that "advantages whitened with the mean shifted back", as the recipe is sometimes paraphrased,
    is the reverse of the published code, whose advantages end with mean 0 (``tests/test_ppo_whitening.py``).

    >>> x = torch.tensor([2.0, 4.0]); m = torch.tensor([True, True])
    >>> whiten(x, m).tolist(), whiten(x, m, shift_mean=False).tolist()
    ([-1.0, 1.0], [2.0, 4.0])
    """
    mean, var = masked_mean(values, mask), masked_var(values, mask)
    out = (values - mean) * torch.rsqrt(var + 1e-8)
    if not shift_mean:
        out = out + mean
    return torch.where(mask, out, torch.zeros_like(out))


def response_logits(logits: torch.Tensor, temperature: float, allowed: torch.Tensor | None = None) -> torch.Tensor:
    """The logits the response tokens were sampled from: divided by ``temperature``, constrained by ``allowed``.

    The recipe samples at temperature 0.7 and divides by the *same* temperature whenever log-probs are
    recomputed (for the loss, the reference and the KL); forgetting it makes the rollout's log-probs and the
    loss's disagree, so the first PPO ratio is not 1. ``allowed`` (``[..., vocab]`` bool, e.g. the Wordle
    guess-list constraint) sets the other tokens to ``MASKED_LOGIT``.
    """
    out = logits.float() / temperature
    if allowed is not None:
        out = out.masked_fill(~allowed, MASKED_LOGIT)
    return out


def token_logprobs(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """``log softmax(logits)[token]`` at each position: ``[batch, time]`` from ``[batch, time, vocab]``.

    >>> round(float(token_logprobs(torch.zeros(1, 1, 4), torch.tensor([[2]]))[0, 0]), 4)   # log 1/4
    -1.3863
    """
    return torch.log_softmax(logits, -1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of ``softmax(logits)`` at each position (``[batch, time]``).

    >>> round(float(entropy_from_logits(torch.zeros(1, 1, 4))[0, 0]), 4)   # log 4
    1.3863
    """
    logp = torch.log_softmax(logits, -1)
    return -(logp.exp() * logp).sum(-1)


def truncate_responses(responses: torch.Tensor, truncate_token: int, truncate_after: int,
                       pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The recipe's response post-processing: cut each row after its first ``truncate_token`` at an index
    ``>= truncate_after`` and replace every later token by ``pad_id``.

    Returns ``(truncated, mask, has_token)``: the post-processed responses, the positions kept (up to and
    including the truncate token; the whole row when there is none) and whether the row has one. Rows
    without it get the fixed penalty score (``penalize_untruncated``).

    >>> out, mask, has = truncate_responses(torch.tensor([[5, 9, 7, 9, 7]]), 9, 2, 0)
    >>> out.tolist(), mask.int().tolist(), has.tolist()
    ([[5, 9, 7, 9, 0]], [[1, 1, 1, 1, 0]], [True])
    """
    length = responses.shape[1]
    index = torch.arange(length, device=responses.device).expand_as(responses)
    hits = (responses == truncate_token) & (index >= truncate_after)
    has_token = hits.any(1)
    first = torch.where(hits, index, torch.full_like(index, length)).min(1).values
    mask = index <= first.unsqueeze(1)
    return responses.masked_fill(~mask, pad_id), mask, has_token


def penalize_untruncated(scores: torch.Tensor, has_token: torch.Tensor, penalty: float) -> torch.Tensor:
    """The score of each response, replaced by ``penalty`` (the recipe's -1) where it has no truncate token.

    >>> penalize_untruncated(torch.tensor([0.5, 0.5]), torch.tensor([True, False]), -1.0).tolist()
    [0.5, -1.0]
    """
    return torch.where(has_token, scores, torch.full_like(scores, penalty))


def kl_penalized_rewards(scores: torch.Tensor, logprobs: torch.Tensor, ref_logprobs: torch.Tensor,
                         mask: torch.Tensor, kl_coef: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token rewards ``-kl_coef * (log pi - log pi_ref)`` with the score added on each row's last kept token.

    Returns ``(rewards, non_score_rewards)``, both zero outside ``mask``.

    >>> r, _ = kl_penalized_rewards(torch.tensor([2.0]), torch.tensor([[0.0, -1.0, 0.0]]), torch.tensor([[-1.0, -1.0, 0.0]]),
    ...                             torch.tensor([[True, True, False]]), 0.5)
    >>> r.tolist()
    [[-0.5, 2.0, 0.0]]
    """
    non_score = torch.where(mask, -kl_coef * (logprobs - ref_logprobs), torch.zeros_like(logprobs))
    last = mask.long().cumsum(1).argmax(1)  # index of the last true position of each row
    rewards = non_score.clone()
    rewards[torch.arange(len(scores), device=scores.device), last] += scores
    return rewards, non_score


def gae(rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float,
        lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over each row's kept tokens (the value after the last one is 0).

    Returns ``(advantages, returns)`` with ``returns = advantages + values``; both 0 outside ``mask``.

    >>> a, ret = gae(torch.tensor([[0.0, 1.0]]), torch.tensor([[0.5, 0.5]]), torch.tensor([[True, True]]), 1.0, 0.5)
    >>> a.tolist(), ret.tolist()
    ([[0.25, 0.5]], [[0.75, 1.0]])
    """
    maskf = mask.to(values.dtype)
    values, rewards = values * maskf, rewards * maskf
    advantages = torch.zeros_like(values)
    running = torch.zeros_like(values[:, 0])
    for t in reversed(range(values.shape[1])):
        next_value = values[:, t + 1] if t + 1 < values.shape[1] else torch.zeros_like(running)
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        running = (delta + gamma * lam * running) * maskf[:, t]
        advantages[:, t] = running
    return advantages, (advantages + values) * maskf


def policy_loss(logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
                clip: float) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """PPO's clipped surrogate ``mean(max(-A r, -A clip(r, 1-c, 1+c)))`` over the kept tokens.

    Metrics: ``clipfrac`` (share of tokens where the clipped term is the larger) and ``approxkl``
    ``= 0.5 * mean((log pi - log pi_old)^2)``, the recipe's estimate.
    """
    ratio = torch.exp(logprobs - old_logprobs)
    loss1 = -advantages * ratio
    loss2 = -advantages * ratio.clamp(1.0 - clip, 1.0 + clip)
    loss = masked_mean(torch.maximum(loss1, loss2), mask)
    with torch.no_grad():
        metrics = {"policy/clipfrac": masked_mean((loss2 > loss1).float(), mask),
                   "policy/approxkl": 0.5 * masked_mean((logprobs - old_logprobs).square(), mask)}
    return loss, metrics


def value_loss(values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor,
               clip: float) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The recipe's clipped value loss ``0.5 * mean(max((v - R)^2, (clip(v, v_old +- c) - R)^2))``.

    Metrics: ``val/clipfrac`` and ``val/error`` (mean squared error of the unclipped prediction).
    """
    clipped = old_values + (values - old_values).clamp(-clip, clip)
    loss1, loss2 = (values - returns).square(), (clipped - returns).square()
    loss = 0.5 * masked_mean(torch.maximum(loss1, loss2), mask)
    with torch.no_grad():
        metrics = {"val/clipfrac": masked_mean((loss2 > loss1).float(), mask), "val/error": masked_mean(loss1, mask)}
    return loss, metrics


def normalization_gain_bias(scores: torch.Tensor, target_mean: float = 0.0, target_std: float = 1.0) -> tuple[float, float]:
    """``(gain, bias)`` such that ``gain * scores + bias`` has mean ``target_mean`` and std ``target_std``.

    The recipe normalises the reward model before and after its training on samples of the policy, so
    that the rewards PPO sees start at mean 0, std 1.

    >>> normalization_gain_bias(torch.tensor([1.0, 3.0]))
    (1.0, -2.0)
    """
    mean, std = float(scores.mean()), float(scores.std(unbiased=False))
    gain = target_std / max(std, 1e-8)
    return gain, target_mean - gain * mean


def minibatch_order(batch: int, seed: int, update: int, epoch: int) -> torch.Tensor:
    """The shuffle of PPO epoch ``epoch`` of update ``update``: a permutation of ``range(batch)``.

    A pure function of ``(seed, update, epoch)`` -- not of the process' rank or global RNG -- so every
    rank of a ``torchrun`` job shuffles its rollouts the same way, and a resumed run shuffles as the
    uninterrupted one; a fresh permutation every epoch, as in the recipe.
    """
    generator = torch.Generator().manual_seed((seed * 1_000_003 + update) * 1_009 + epoch)
    return torch.randperm(batch, generator=generator, device="cpu")


__all__ = ["MASKED_LOGIT", "masked_var", "whiten", "response_logits", "token_logprobs", "entropy_from_logits", "truncate_responses", "penalize_untruncated", "kl_penalized_rewards", "gae", "policy_loss", "value_loss", "normalization_gain_bias", "minibatch_order"]
