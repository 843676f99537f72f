"""ψ-learning's defining loss on a hand-made batch: Huber towards r / r_scale + log pi_beta(a|s) + gamma *
logsumexp of the next state's target Q, and ψ prefers a rare rewarded action that BC does not."""

from __future__ import annotations

import doctest

import pytest
import torch
import torch.nn.functional as F

from tests.baseline_helpers import TOKENIZER, first_letter_odds, tiny_model, train_on_rare_action
from tests.test_ilql_targets import hand_batch, set_output
from trainers.algorithms.psi import losses as psi_losses
from trainers.algorithms.psi.config import PsiConfig

VOCAB = TOKENIZER.vocab_size


def model(**overrides):
    return tiny_model("psi", **overrides)


def test_docstring_examples_run():
    assert doctest.testmod(psi_losses, raise_on_error=False).failed == 0


def test_defaults_are_the_authors_psi_settings():
    c = PsiConfig()
    assert (c.r_scale, c.tau, c.cql_weight, c.gamma, c.alpha, c.beta) == (0.1, 0.5, 0.0, 0.99, 0.005, 8.0)
    assert (c.awac_weight, c.separate_value_trunk, c.adv_clip) == (0.0, True, None)  # a fixed pi_beta; no clip
    with pytest.raises(ValueError, match="PsiConfig.r_scale"):
        PsiConfig(r_scale=0.0)


def test_huber_loss_towards_the_soft_target_by_hand():
    """Q1 = 1, Q2 = 2; target heads give vectors whose element-wise min has logsumexp L; the policy's
    log-probabilities come from running its (fixed) policy. Targets: r / 0.5 + log pi(a_t) + 0.5 * L where a next
    state follows, also at row 0's cut (0 bootstrap after a terminal only)."""
    psi = model(gamma=0.5, r_scale=0.5, v_weight=0.0, awac_weight=0.0)
    tq1 = torch.linspace(-1.0, 1.0, VOCAB)
    tq2 = torch.linspace(2.0, -2.0, VOCAB)
    for head, value in ((psi.heads.q1, 1.0), (psi.heads.q2, 2.0), (psi.heads.target_q1, tq1),
                        (psi.heads.target_q2, tq2)):
        set_output(head, value)
    soft_next = float(torch.logsumexp(torch.minimum(tq1, tq2), 0))
    batch = hand_batch()
    output = psi(batch)
    with torch.no_grad():
        log_pi = torch.log_softmax(psi.lm.policy(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
                                   .logits[:, :-1], -1)
    targets = []
    # (row, position after the shift, reward, bootstrap?) for every action position
    for row, positions in ((0, (0, 1, 3, 4)), (1, (0, 1, 3, 4, 5))):
        for t in positions:
            reward = float(batch["rewards"][row, t + 1])
            has_next = not bool(batch["dones"][row, t + 1])  # row 0's cut bootstraps its last state too
            token = int(batch["input_ids"][row, t + 1])
            targets.append(reward / 0.5 + float(log_pi[row, t, token]) + (0.5 * soft_next if has_next else 0.0))
    targets = torch.tensor(targets)
    expected = sum(float(F.huber_loss(torch.full_like(targets, q), targets)) for q in (1.0, 2.0))
    assert float(output.metrics["q_loss"]) == pytest.approx(expected, rel=1e-5)
    assert float(output.loss) == pytest.approx(expected, rel=1e-5)


def test_psi_prefers_a_rare_rewarded_action(tmp_path):
    """A faster Polyak rate (0.1, instead of 0.005) lets the targets follow within a short test. The logsumexp
    runs over every token, and the Q of tokens the data never takes at a state is never regressed: from random
    weights they sit near 0 and swamp the -10 of ``ba``'s reward (without the conservative term this agent picks
    ``ab`` with probability about 1e-11 here). A small conservative term (0.1, CQL's weight) pushes them down. No BC
    checkpoint here: pi_beta is trained by BC in the same step (``awac_weight=1``, the option beside the authors'
    fixed BC model)."""
    loaded = train_on_rare_action("psi", tmp_path, steps=300, alpha=0.1, cql_weight=0.1,
                                  awac_weight=1.0, separate_value_trunk=False)  # pi_beta by BC in the same step
    assert loaded.algorithm == "psi"
    assert first_letter_odds(loaded, 0.0) < 0.4, "the LM head alone imitates the data (mostly 'ba')"
    assert first_letter_odds(loaded, loaded.config.beta) > 0.7, "beta * (Q - V) should turn the policy to 'ab'"


def test_pi_beta_is_a_fixed_model_run_without_gradient():
    """The authors' pi_beta is a fixed BC model run under no_grad: a training step leaves the policy's weights
    untouched and the loss has no path into them (the same step's BC, ``awac_weight=1``, would change them)."""
    psi = model()
    policy = [p.detach().clone() for p in psi.lm.policy.parameters()]
    output = psi(hand_batch())
    output.loss.backward()
    assert all(p.grad is None for p in psi.lm.policy.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in psi.lm.value.parameters())
    torch.optim.SGD([p for p in psi.parameters() if p.requires_grad], lr=1.0).step()
    assert all(torch.equal(a, b) for a, b in zip(policy, psi.lm.policy.parameters()))
