"""One test per detail of the lm-human-preferences recipe (numbered in the comments below), each failing if the detail breaks."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from rlds_lang.char_tokenizer import CharTokenizer
from tests.ppo_helpers import one_thread  # noqa: F401  (autouse fixture)
from trainers.algorithms.ppo.config import PPOConfig
from trainers.algorithms.ppo.losses import (
    gae,
    kl_penalized_rewards,
    minibatch_order,
    normalization_gain_bias,
    penalize_untruncated,
    policy_loss,
    response_logits,
    token_logprobs,
    truncate_responses,
    value_loss,
    whiten,
)
from trainers.algorithms.ppo.networks import (
    PolicyWithValue,
    frozen_reference,
    generate,
    ids_text,
    score_responses,
)
from trainers.algorithms.ppo.optim import AdaptiveKLController, TFAdam, linear_annealing
from trainers.algorithms.ppo.rewards import Turn, returns_to_go
from trainers.algorithms.reward.losses import comparison_loss
from trainers.algorithms.reward.networks import reward_head_init_
from trainers.core.config import field_docs
from trainers.core.model import ModelConfig, build_language_model
from trainers.core.padding import left_pad


@pytest.fixture(scope="module")
def tok() -> CharTokenizer:
    return CharTokenizer("abcde")


def tiny_lm(tok: CharTokenizer, dropout: float = 0.0, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return build_language_model(ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=32, dropout=dropout),
                                tok.vocab_size, pad_id=tok.pad_id)


def test_recipe_defaults_are_the_config_defaults_and_every_field_is_documented():
    c = PPOConfig()
    assert (c.kl_coef, c.adaptive_kl, c.kl_target, c.kl_horizon) == (0.15, True, 6.0, 10_000)
    assert (c.gamma, c.lam, c.cliprange, c.cliprange_value, c.vf_coef) == (1.0, 0.95, 0.2, 0.2, 0.1)
    assert (c.lr, c.adam_eps, c.tf_adam, c.anneal_lr, c.ppo_epochs, c.nminibatches) == (1e-5, 1e-5, True, True, 4, 1)
    assert (c.temperature, c.truncation_penalty, c.query_length, c.whiten_rewards, c.zero_init_value) == \
        (0.7, -1.0, 64, True, True)
    docs = field_docs(PPOConfig)
    missing = [f for f in PPOConfig.__dataclass_fields__ if not docs.get(f)]
    assert not missing, f"undocumented PPOConfig fields: {missing}"


# 1. reward model and value head read query + response concatenated
def test_value_head_reads_query_and_response_concatenated(tok):
    model = PolicyWithValue(tiny_lm(tok), zero_init_value=False)
    response = torch.tensor([[tok.encode("a")[0], tok.eoa_id]])
    values = []
    for query in ("ab", "cd"):
        ids, mask = left_pad([[tok.bos_id, *tok.encode(query), tok.eoo_id]], 6, tok.pad_id)
        out = score_responses(model, ids, mask, response, temperature=1.0)
        _, every = model(torch.cat([ids, response], 1), torch.cat([mask, torch.ones_like(response)], 1))
        assert torch.allclose(out.values, every[:, 5:7])  # the state before each response token
        values.append(out.values)
    assert not torch.allclose(values[0], values[1])  # the query changes the value of the same response
    turn = Turn(("", "🟩"), ("ab",), "ba")
    assert turn.text() == turn.query_text + "ba" and "ab" in turn.query_text


# 2. left padding with a pad token, positions counted from the first real token
def test_left_padded_generation_and_scores_equal_unpadded(tok):
    lm = tiny_lm(tok)
    query = [tok.bos_id, *tok.encode("abc"), tok.eoo_id]
    uniforms = torch.rand(1, 6, generator=torch.Generator().manual_seed(3))
    bare, bare_mask = left_pad([query], len(query), tok.pad_id)
    padded, padded_mask = left_pad([query], 12, tok.pad_id)
    assert padded[0, :7].tolist() == [tok.pad_id] * 7 and padded_mask[0, :7].sum() == 0
    a = generate(lm, bare, bare_mask, 6, 0.7, uniforms)
    b = generate(lm, padded, padded_mask, 6, 0.7, uniforms)
    assert torch.equal(a, b)
    sa = score_responses(lm, bare, bare_mask, a, 0.7).logprobs
    sb = score_responses(lm, padded, padded_mask, b, 0.7).logprobs
    assert torch.allclose(sa, sb, atol=1e-5)
    assert left_pad([list(range(1, 9))], 4, 0)[0].tolist() == [[5, 6, 7, 8]]  # long queries keep their end


# 3. fixed-length pure sampling at a temperature; log-probs recomputed at the same temperature
def test_sampling_is_fixed_length_and_logprobs_use_the_temperature(tok):
    lm = tiny_lm(tok)
    ids, mask = left_pad([[tok.bos_id, tok.eoo_id]] * 400, 4, tok.pad_id)
    responses = generate(lm, ids, mask, 3, 0.5, torch.rand(400, 3, generator=torch.Generator().manual_seed(0)))
    assert responses.shape == (400, 3)
    logits = lm(input_ids=torch.tensor([[tok.bos_id, tok.eoo_id]])).logits[0, -1]  # the query without its padding
    tempered = torch.softmax(logits / 0.5, -1)
    freq = torch.bincount(responses[:, 0], minlength=tok.vocab_size).float() / 400
    assert (freq - tempered).abs().max() < 0.08  # samples follow softmax(logits / T)
    lp = score_responses(lm, ids[:1], mask[:1], responses[:1], 0.5).logprobs[0, 0]
    assert torch.isclose(lp, tempered[responses[0, 0]].log(), atol=1e-5)
    untempered = torch.log_softmax(logits, -1)[responses[0, 0]]
    assert not torch.isclose(lp, untempered, atol=1e-3)
    assert torch.allclose(token_logprobs(response_logits(logits[None, None], 0.5), responses[:1, :1]), lp.view(1, 1))


# 4. truncation after the truncate token past a minimum length; pad after it; -1 without it
def test_truncation_pads_after_the_token_and_penalizes_rows_without_it(tok):
    e = tok.eoa_id
    responses = torch.tensor([[7, e, 8, e, 9], [7, 8, 9, 7, 8], [e, 7, 8, 9, 7]])
    out, mask, has = truncate_responses(responses, e, truncate_after=2, pad_id=tok.pad_id)
    assert out.tolist() == [[7, e, 8, e, 0], [7, 8, 9, 7, 8], [e, 7, 8, 9, 7]]
    assert mask.sum(1).tolist() == [4, 5, 5] and has.tolist() == [True, False, False]
    scores = penalize_untruncated(torch.tensor([0.3, 0.3, 0.3]), has, -1.0)
    assert scores.tolist() == pytest.approx([0.3, -1.0, -1.0])
    assert ids_text(tok, [*tok.encode("ab"), e, *tok.encode("cd")]) == "ab"  # the scorer reads the truncated text


# 5. score on the last token; reward head N(0, 1/sqrt(d+1)); gain/bias normalisation
def test_reward_head_init_and_normalisation():
    torch.manual_seed(0)
    head = reward_head_init_(nn.Linear(1023, 64))
    assert abs(float(head.weight.detach().std()) - 1 / math.sqrt(1024)) < 0.002 and float(head.bias.detach().abs().max()) == 0
    scores = torch.randn(256) * 3 + 5
    gain, bias = normalization_gain_bias(scores)
    normed = gain * scores + bias
    assert abs(float(normed.mean())) < 1e-5 and abs(float(normed.std(unbiased=False)) - 1) < 1e-5


# 6. zero-init value head; per-token KL penalty with the score on the last kept token; adaptive beta
def test_zero_value_head_and_per_token_kl_rewards(tok):
    model = PolicyWithValue(tiny_lm(tok))
    ids, mask = left_pad([[tok.bos_id, tok.eoo_id]], 4, tok.pad_id)
    assert float(score_responses(model, ids, mask, torch.tensor([[7, 8]]), 1.0).values.detach().abs().max()) == 0.0
    logprobs, ref = torch.tensor([[-1.0, -2.0, -3.0]]), torch.tensor([[-1.5, -1.0, -3.0]])
    rewards, non_score = kl_penalized_rewards(torch.tensor([4.0]), logprobs, ref, torch.tensor([[True, True, False]]), 0.1)
    assert rewards[0].tolist() == pytest.approx([-0.05, 0.1 + 4.0, 0.0])
    assert non_score[0].tolist() == pytest.approx([-0.05, 0.1, 0.0])


def test_adaptive_kl_controller_is_the_proportional_rule():
    c = AdaptiveKLController(0.15, target=6.0, horizon=10_000)
    c.update(9.0, n_steps=512)  # error 0.5 clipped to 0.2
    assert c.value == pytest.approx(0.15 * (1 + 0.2 * 512 / 10_000))
    c.update(5.4, n_steps=1000)  # error -0.1
    assert c.value == pytest.approx(0.15 * (1 + 0.2 * 512 / 10_000) * (1 - 0.1 * 1000 / 10_000))


# 7. GAE gamma 1, lambda 0.95; whitening rewards (mean kept) and advantages (mean 0)
def test_gae_matches_the_definition():
    torch.manual_seed(0)
    rewards, values = torch.randn(3, 5), torch.randn(3, 5)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], dtype=torch.bool)
    gamma, lam = 1.0, 0.95
    advantages, returns = gae(rewards, values, mask, gamma, lam)
    for row in range(3):
        n = int(mask[row].sum())
        v = torch.cat([values[row, :n], torch.zeros(1)])
        deltas = [rewards[row, t] + gamma * v[t + 1] - v[t] for t in range(n)]
        for t in range(n):
            expected = sum((gamma * lam) ** k * deltas[t + k] for k in range(n - t))
            assert float(advantages[row, t]) == pytest.approx(float(expected), abs=1e-5)
        assert float(advantages[row, n:].abs().sum()) == 0
    assert torch.allclose(returns[mask], (advantages + values)[mask])


def test_whitening_keeps_the_reward_mean_and_centres_advantages():
    x = torch.tensor([[1.0, 2.0, 6.0, 99.0]])
    mask = torch.tensor([[True, True, True, False]])
    kept = whiten(x, mask, shift_mean=False)[mask]
    centred = whiten(x, mask)[mask]
    assert float(kept.mean()) == pytest.approx(3.0) and float(kept.std(unbiased=False)) == pytest.approx(1.0, abs=1e-4)
    assert float(centred.mean()) == pytest.approx(0.0, abs=1e-6)
    assert float(centred.std(unbiased=False)) == pytest.approx(1.0, abs=1e-4)


# 8. clipped surrogate and clipped value loss (0.2), approx KL, clip fractions
def test_clipped_surrogate_stops_the_gradient_outside_the_clip():
    mask = torch.ones(1, 2, dtype=torch.bool)
    old = torch.zeros(1, 2)
    logprobs = torch.tensor([[math.log(1.5), math.log(1.1)]], requires_grad=True)
    loss, metrics = policy_loss(logprobs, old, torch.ones(1, 2), mask, clip=0.2)
    loss.backward()
    assert logprobs.grad[0, 0] == 0 and logprobs.grad[0, 1] != 0  # ratio 1.5 > 1.2: clipped
    assert float(metrics["policy/clipfrac"]) == 0.5
    assert float(metrics["policy/approxkl"]) == pytest.approx(0.5 * (math.log(1.5) ** 2 + math.log(1.1) ** 2) / 2)


def test_clipped_value_loss_takes_the_larger_error():
    mask = torch.ones(1, 2, dtype=torch.bool)
    values = torch.tensor([[1.0, 0.1]], requires_grad=True)
    loss, metrics = value_loss(values, torch.zeros(1, 2), torch.tensor([[2.0, 0.0]]), mask, clip=0.2)
    # row 0: unclipped (1-2)^2 = 1, clipped (0.2-2)^2 = 3.24 -> 3.24; row 1: 0.01 vs 0.01 -> 0.01
    assert float(loss.detach()) == pytest.approx(0.5 * (3.24 + 0.01) / 2)
    assert float(metrics["val/clipfrac"]) == 0.5


# 9. a fresh shuffle per epoch, the same on every rank (no dependence on the global RNG)
def test_minibatch_order_is_fresh_per_epoch_and_rank_independent():
    torch.manual_seed(1)
    first = minibatch_order(32, seed=0, update=3, epoch=0)
    torch.manual_seed(2)  # another rank's global RNG state
    assert torch.equal(first, minibatch_order(32, seed=0, update=3, epoch=0))
    assert sorted(first.tolist()) == list(range(32))
    assert not torch.equal(first, minibatch_order(32, seed=0, update=3, epoch=1))


# 10. linear annealing to 0; Adam with TensorFlow's epsilon placement
def test_linear_annealing_reaches_zero():
    f = linear_annealing(10)
    assert f(0) == 1.0 and f(5) == 0.5 and f(10) == 0.0


def _one_step(optimizer_class, grad: float, steps: int = 1, **kwargs) -> float:
    p = nn.Parameter(torch.zeros(1))
    opt = optimizer_class([p], lr=1.0, eps=1e-5, **kwargs)
    for _ in range(steps):
        p.grad = torch.full((1,), grad)
        opt.step()
    return float(p.detach())


def test_tf_adam_differs_from_torch_adam_only_where_epsilon_matters():
    # small gradient (comparable to eps): TF adds eps to the un-corrected sqrt(v), i.e. eps / sqrt(1 - b2^t) after
    # correction -- ~31.6x PyTorch's eps at step 1 -- so it moves far less
    tf_small, torch_small = _one_step(TFAdam, 1e-5), _one_step(torch.optim.Adam, 1e-5)
    assert torch_small == pytest.approx(-0.5, rel=1e-3)
    assert tf_small == pytest.approx(-1e-5 / (1e-5 + 1e-5 / math.sqrt(1 - 0.999)), rel=1e-3)
    # large gradients: the same step
    assert _one_step(TFAdam, 1e3, steps=3) == pytest.approx(_one_step(torch.optim.Adam, 1e3, steps=3), rel=1e-5)


# 11. dropout off in policy and reference
def test_dropout_is_off_in_policy_and_reference(tok):
    lm = tiny_lm(tok, dropout=0.3)
    model = PolicyWithValue(lm).train()
    reference = frozen_reference(model.lm)
    assert all(m.p == 0 for m in [*model.modules(), *reference.modules()] if isinstance(m, nn.Dropout))
    ids, mask = left_pad([[tok.bos_id, tok.eoo_id, 7, 8]], 6, tok.pad_id)
    assert torch.equal(model(ids, mask)[0], model(ids, mask)[0])
    assert not any(p.requires_grad for p in reference.parameters()) and not reference.training


# 12. reward-model loss over 4 candidates; pairwise as the special case
def test_comparison_loss_over_four_and_pairwise():
    scores = torch.tensor([[0.5, 2.0, -1.0, 0.0]], requires_grad=True)
    loss = comparison_loss(scores, torch.tensor([1]))
    assert float(loss.detach()) == pytest.approx(-float(torch.log_softmax(scores.detach(), -1)[0, 1]))
    loss.backward()
    assert scores.grad[0, 1] < 0 and all(scores.grad[0, k] > 0 for k in (0, 2, 3))  # raises the chosen one
    pair = torch.tensor([[1.3, 0.2]])
    assert float(comparison_loss(pair, torch.tensor([0]))) == pytest.approx(-math.log(torch.sigmoid(torch.tensor(1.1)).item()))


def test_turn_scores_are_returns_to_go():
    assert returns_to_go([-1.0, -1.0, -1.0, 0.0]) == [-3.0, -2.0, -1.0, 0.0]


def test_the_ppo_modules_doctests_pass():
    import doctest

    import trainers.algorithms.ppo.losses
    import trainers.algorithms.ppo.optim
    import trainers.algorithms.ppo.rewards

    for module in (trainers.algorithms.ppo.losses, trainers.algorithms.ppo.optim, trainers.algorithms.ppo.rewards):
        result = doctest.testmod(module, raise_on_error=False)
        assert result.attempted > 0 and result.failed == 0, module.__name__
