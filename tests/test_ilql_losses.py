"""ILQL's loss pieces against small examples computed by hand, and the beta-perturbed sampling rule."""

from __future__ import annotations

import doctest

import pytest

torch = pytest.importorskip("torch", reason="the trainers need torch (installed by setup.cfg)")

from trainers.algorithms.ilql import losses as L  # noqa: E402
from trainers.core.decoding import perturbed_logits  # noqa: E402


def test_docstring_examples_run():
    assert doctest.testmod(L, raise_on_error=False).failed == 0


def test_expectile_loss_by_hand():
    diff = torch.tensor([[1.0, -2.0, 3.0]])
    mask = torch.tensor([[True, True, False]])
    # tau=0.8: 0.8 * 1**2 + 0.2 * (-2)**2 = 0.8 + 0.8 over 2 valid positions
    assert torch.isclose(L.expectile_loss(diff, 0.8, mask), torch.tensor(0.8))
    # tau=0.5 is half the mean squared error
    assert torch.isclose(L.expectile_loss(diff, 0.5, mask), torch.tensor((1.0 + 4.0) / 2 * 0.5))
    # the minimiser of the expectile loss over a constant prediction is the tau-expectile (> mean for tau>0.5)
    target = torch.tensor([0.0, 0.0, 0.0, 4.0])
    v = torch.zeros((), requires_grad=True)
    opt = torch.optim.SGD([v], lr=0.1)
    for _ in range(500):
        opt.zero_grad()
        L.expectile_loss(target - v, 0.9, torch.ones(4, dtype=torch.bool)).backward()
        opt.step()
    # tau-expectile e solves 0.9 * (4 - e) = 0.1 * 3 * e  ->  e = 3.6 / 1.2 = 3.0
    assert abs(v.item() - 3.0) < 1e-3


def test_td_target_masks_terminals_and_sequence_ends():
    # tokens: a0 a1 | env | a2 (terminal).  V at each position:
    values = torch.tensor([[1.0, 2.0, 9.0, 3.0]])
    action_mask = torch.tensor([[True, True, False, True]])
    rewards = torch.tensor([[0.0, -1.0, 0.0, 5.0]])
    dones = torch.tensor([[False, False, False, True]])
    nxt, has_next = L.next_action_values(values, action_mask)
    # a0 -> V before a1 (2.0); a1 -> skips the env token -> V before a2 (3.0); a2 -> none
    assert nxt[0, [0, 1, 3]].tolist() == [2.0, 3.0, 0.0]
    assert has_next[0, [0, 1, 3]].tolist() == [True, True, False]
    targets = L.td_targets(rewards, nxt, dones, gamma=0.5)
    assert targets[0, [0, 1, 3]].tolist() == [0.0 + 0.5 * 2.0, -1.0 + 0.5 * 3.0, 5.0]
    # a terminal flag zeroes the bootstrap even when a later action exists
    assert L.td_targets(torch.tensor([1.0]), torch.tensor([7.0]), torch.tensor([True]), 0.99).tolist() == [1.0]
    assert not L.td_targets(rewards, nxt.requires_grad_(), dones, 0.5).requires_grad


def test_q_loss_and_cql_term_by_hand():
    q_taken = torch.tensor([[2.0, 0.0]])
    assert torch.isclose(L.q_loss(q_taken, torch.tensor([[1.0, 3.0]]), torch.tensor([[True, True]])),
                         torch.tensor((1.0 + 9.0) / 2))
    q_all = torch.tensor([[[1.0, 2.0, 3.0]]])
    # cross-entropy against token 2: logsumexp(1,2,3) - 3
    expected = torch.logsumexp(torch.tensor([1.0, 2.0, 3.0]), 0) - 3.0
    assert torch.isclose(L.cql_loss(q_all, torch.tensor([[2]]), torch.tensor([[True]])), expected)
    # masked positions contribute nothing
    q2 = torch.cat([q_all, torch.tensor([[[100.0, -100.0, 0.0]]])], 1)
    assert torch.isclose(L.cql_loss(q2, torch.tensor([[2, 1]]), torch.tensor([[True, False]])), expected)


def test_bc_loss_weights():
    logits = torch.log(torch.tensor([[[0.25, 0.75], [0.5, 0.5]]]))
    actions = torch.tensor([[1, 0]])
    mask = torch.tensor([[True, True]])
    nll = torch.tensor([-torch.log(torch.tensor(0.75)), -torch.log(torch.tensor(0.5))])
    assert torch.isclose(L.bc_loss(logits, actions, mask), nll.mean())
    w = torch.tensor([[2.0, 0.0]])
    assert torch.isclose(L.bc_loss(logits, actions, mask, w), (2.0 * nll[0]) / 2)


def test_polyak_update_by_hand():
    online, target = torch.nn.Linear(2, 1), torch.nn.Linear(2, 1)
    with torch.no_grad():
        online.weight.copy_(torch.tensor([[1.0, 2.0]])); online.bias.fill_(4.0)
        target.weight.zero_(); target.bias.zero_()
    L.polyak_update(target, online, 0.1)
    assert torch.allclose(target.weight, torch.tensor([[0.1, 0.2]])) and torch.isclose(target.bias, torch.tensor([0.4]))
    L.polyak_update(target, online, 1.0)
    assert torch.equal(target.weight, online.weight)
    assert target.weight.grad is None  # a no-grad update: no autograd history on the target


def test_beta_perturbed_sampling_follows_advantage():
    logits = torch.log(torch.tensor([0.7, 0.2, 0.1]))  # the behaviour policy prefers token 0
    q = torch.tensor([0.0, 0.0, 2.0])                   # but token 2 has the advantage
    v = torch.tensor(0.5)
    assert torch.equal(perturbed_logits(logits, q, v, 0.0), logits)
    for beta in (0.0, 1.0, 4.0):
        expected = torch.softmax(logits + beta * (q - v), -1)
        gen = torch.Generator().manual_seed(0)
        draws = torch.multinomial(torch.softmax(perturbed_logits(logits, q, v, beta), -1), 20000, True,
                                  generator=gen)
        freq = torch.bincount(draws, minlength=3).float() / 20000
        assert torch.allclose(freq, expected, atol=0.015), (beta, freq, expected)
    # larger beta moves mass towards the high-advantage token
    p = [float(torch.softmax(perturbed_logits(logits, q, v, b), -1)[2]) for b in (0.0, 1.0, 4.0)]
    assert p[0] < p[1] < p[2] and p[2] > 0.9
    # batched: V has one value per state
    out = perturbed_logits(logits.expand(2, 3), q.expand(2, 3), torch.tensor([0.0, 1.0]), 1.0)
    assert torch.allclose(out[1] - out[0], torch.full((3,), -1.0))
