"""Detail 7, checked against the published code (openai/lm-human-preferences, ``utils/core.py`` and
``train_policy.py``'s ``loss``)::

    whiten(values, shift_mean=True):  (values - mean) * rsqrt(var + 1e-8)   [tf.nn.moments: biased var]
                                      and, when shift_mean is False, + mean
    loss(rollouts): rewards = whiten(rewards, shift_mean=False)   if whiten_rewards
                    advantages, returns = GAE(rewards, values);  returns = advantages + values
                    advantages = whiten(advantages)               (shift_mean=True: mean 0)

inside each minibatch. So rewards keep their mean (scaled to unit std), advantages are centred (mean 0, unit
std), and the value targets use the advantages *before* whitening.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rlds_lang.char_tokenizer import CharTokenizer
from tests.ppo_helpers import one_thread  # noqa: F401  (autouse fixture)
from trainers.algorithms.ppo.config import PPOConfig
from trainers.algorithms.ppo.losses import gae, whiten
from trainers.algorithms.ppo.networks import PolicyWithValue, frozen_reference
from trainers.core.model import ModelConfig, build_language_model


def published_whiten(values: np.ndarray, shift_mean: bool = True) -> np.ndarray:
    """The recipe's formula over every entry (the population variance of ``tf.nn.moments``)."""
    mean, var = values.mean(), values.var()
    out = (values - mean) / np.sqrt(var + 1e-8)
    return out + mean if not shift_mean else out


@pytest.mark.parametrize("shift_mean", [True, False])
def test_whiten_is_the_published_formula_over_the_kept_tokens(shift_mean):
    rng = np.random.default_rng(0)
    x = rng.normal(2.0, 3.0, size=(4, 5))
    full = whiten(torch.from_numpy(x), torch.ones(4, 5, dtype=torch.bool), shift_mean=shift_mean).numpy()
    np.testing.assert_allclose(full, published_whiten(x, shift_mean), rtol=1e-10)
    mask = torch.from_numpy(rng.random((4, 5)) < 0.6)
    part = whiten(torch.from_numpy(x), mask, shift_mean=shift_mean).numpy()
    kept = mask.numpy()
    np.testing.assert_allclose(part[kept], published_whiten(x[kept], shift_mean), rtol=1e-10)
    assert (part[~kept] == 0).all()
    expected_mean = 0.0 if shift_mean else x[kept].mean()      # shift_mean=False puts the mean back
    assert part[kept].mean() == pytest.approx(expected_mean, abs=1e-9)
    assert part[kept].std() == pytest.approx(1.0, abs=1e-6)


def _batch(n: int = 6, response_length: int = 3):
    """A prepared PPO batch of ``n`` random turns of a tiny policy (rewards with a clearly non-zero mean)."""
    from trainers.algorithms.ppo.rollout import Rollouts
    from trainers.algorithms.ppo.trainer import prepare_batch

    tok = CharTokenizer("abcde")
    torch.manual_seed(0)
    lm = build_language_model(ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=32), tok.vocab_size,
                              pad_id=tok.pad_id)
    model = PolicyWithValue(lm, zero_init_value=False)
    queries = torch.randint(5, tok.vocab_size, (n, 4))
    responses = torch.randint(5, tok.vocab_size, (n, response_length))
    mask = torch.ones(n, response_length, dtype=torch.bool)
    mask[::2, -1] = False
    rollouts = Rollouts(queries, torch.ones_like(queries, dtype=torch.bool), responses, mask,
                        torch.linspace(3.0, 8.0, n), [0.0] * n, "")
    return model, prepare_batch(model, frozen_reference(model.lm), rollouts, 0.7, None, 0.1)


def test_each_minibatch_whitens_rewards_keeping_the_mean_and_centres_the_advantages(monkeypatch):
    import trainers.algorithms.ppo.trainer as ppo_train

    model, batch = _batch()
    seen: list[dict[str, torch.Tensor]] = []

    def spy_gae(rewards, values, mask, gamma, lam):
        advantages, returns = gae(rewards, values, mask, gamma, lam)
        seen.append({"rewards": rewards, "mask": mask, "advantages": advantages, "returns": returns, "values": values})
        return advantages, returns

    def spy_policy_loss(logprobs, old, advantages, mask, cliprange):
        seen[-1].setdefault("whitened", []).append((advantages, mask))
        return original(logprobs, old, advantages, mask, cliprange)

    original = ppo_train.policy_loss
    monkeypatch.setattr(ppo_train, "gae", spy_gae)
    monkeypatch.setattr(ppo_train, "policy_loss", spy_policy_loss)
    config = PPOConfig(ppo_epochs=1, nminibatches=2, grad_accum=1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    ppo_train.ppo_update(model, optimizer, batch, config, update=1)
    assert len(seen) == 2                                              # one whitening per minibatch
    order = ppo_train.minibatch_order(6, config.seed, 1, 0)
    for call, rows in zip(seen, torch.tensor_split(order, 2)):
        mask = call["mask"]
        raw = batch.rewards[rows][mask]
        assert float(raw.mean()) > 0.5                                 # the scores make the mean clearly non-zero
        assert float(call["rewards"][mask].mean()) == pytest.approx(float(raw.mean()), abs=1e-5)  # mean kept
        assert float(call["rewards"][mask].std(unbiased=False)) == pytest.approx(1.0, abs=1e-4)   # unit std
        # value targets from the advantages before whitening
        assert torch.allclose(call["returns"][mask], (call["advantages"] + call["values"])[mask], atol=1e-6)
        advantages, m = call["whitened"][0]
        assert float(advantages[m].mean()) == pytest.approx(0.0, abs=1e-5)                        # centred
        assert float(advantages[m].std(unbiased=False)) == pytest.approx(1.0, abs=1e-4)
        np.testing.assert_allclose(advantages[m].numpy(), published_whiten(call["advantages"][mask].numpy().astype(
            np.float64)), atol=1e-4)


def test_whiten_rewards_off_leaves_the_rewards_alone(monkeypatch):
    import trainers.algorithms.ppo.trainer as ppo_train

    model, batch = _batch()
    seen = []
    monkeypatch.setattr(ppo_train, "gae", lambda r, v, m, g, lam: seen.append(r) or gae(r, v, m, g, lam))
    config = PPOConfig(ppo_epochs=1, nminibatches=1, whiten_rewards=False)
    ppo_train.ppo_update(model, torch.optim.SGD(model.parameters(), lr=0.0), batch, config, update=1)
    order = ppo_train.minibatch_order(6, config.seed, 1, 0)
    assert torch.equal(seen[0], batch.rewards[order])
