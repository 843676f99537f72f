"""Utterance-level ILQL's defining loss on a hand-made batch (Q at each utterance's [EOA] regresses onto r + gamma
V(next state), V at the state by expectile 0.9 onto the target Q), the agent takes the highest-Q of its sampled
candidates, and with enough candidates it says a rare rewarded action far more often than BC does."""

from __future__ import annotations

import doctest

import pytest
import torch

from tests.baseline_helpers import train_on_rare_action
from tests.test_ilql_targets import TINY, TOKENIZER, set_output
from trainers.algorithms.utterance_ilql import losses as utterance_losses
from trainers.algorithms.utterance_ilql.config import UtteranceILQLConfig
from trainers.algorithms.utterance_ilql.model import UtteranceILQLModel
from trainers.algorithms.utterance_ilql.policy import BestOfSamplesPolicy


def test_docstring_examples_run():
    assert doctest.testmod(utterance_losses, raise_on_error=False).failed == 0


def test_defaults_and_checks():
    c = UtteranceILQLConfig()
    assert (c.tau, c.samples, c.gamma, c.alpha) == (0.9, 4, 0.99, 0.005)
    # the authors' policy: a BC model on its own transformer, not trained (awac_weight 0.0)
    assert (c.awac_weight, c.separate_value_trunk) == (0.0, True)
    with pytest.raises(ValueError, match="UtteranceILQLConfig.samples"):
        UtteranceILQLConfig(samples=0)


def two_utterance_batch() -> dict[str, torch.Tensor]:
    """[BOS] o [EOO] a a [EOA] o [EOO] a [EOA]: reward -1 on the first [EOA], 0 and done on the second. Row 1 is
    cut after position 6, so its first utterance is neither terminal nor followed by another."""
    ids = torch.tensor([[TOKENIZER.bos_id, 30, TOKENIZER.eoo_id, 6, 7, TOKENIZER.eoa_id, 31, TOKENIZER.eoo_id, 8,
                         TOKENIZER.eoa_id]] * 2)
    attention = torch.ones(2, 10, dtype=torch.long)
    attention[1, 7:] = 0
    action = torch.zeros(2, 10, dtype=torch.bool)
    action[:, [3, 4, 5, 8, 9]] = True
    turn_end = torch.zeros(2, 10, dtype=torch.bool)
    turn_end[:, [5, 9]] = True
    rewards = torch.zeros(2, 10)
    rewards[:, 5] = -1.0
    dones = torch.zeros(2, 10, dtype=torch.bool)
    dones[:, 9] = True
    return {"input_ids": ids, "attention_mask": attention, "action_mask": action, "turn_end": turn_end,
            "rewards": rewards, "dones": dones}


def test_utterance_q_and_v_losses_by_hand():
    torch.manual_seed(0)
    model = UtteranceILQLModel(UtteranceILQLConfig(dataset="unused", model=TINY, gamma=0.5), TOKENIZER)
    policy = [p.detach().clone() for p in model.lm.policy.parameters()]
    heads = model.utterance_heads
    for head, value in ((heads.q1, 1.0), (heads.q2, 2.0), (heads.v, 0.5), (heads.target_q1, -3.0),
                        (heads.target_q2, -1.0)):
        set_output(head, value)
    output = model(two_utterance_batch())
    # Q targets: row 0's first utterance -1 + 0.5 * V = -0.75, its second 0 (terminal); row 1's first has none
    targets = torch.tensor([-0.75, 0.0])
    expected_q = float(((1.0 - targets) ** 2).mean() + ((2.0 - targets) ** 2).mean())
    assert float(output.metrics["q_loss"]) == pytest.approx(expected_q, rel=1e-6)
    # V at the three states whose utterance ends inside the sequence: target min(-3, -1) = -3 below V = 0.5,
    # weight 1 - tau = 0.1
    assert float(output.metrics["v_loss"]) == pytest.approx(0.1 * 3.5 ** 2, rel=1e-6)
    # the policy is fixed: no BC term, no gradient into it
    output.loss.backward()
    assert float(output.metrics["awac_loss"]) == 0.0 and all(p.grad is None for p in model.lm.policy.parameters())
    assert all(torch.equal(a, b) for a, b in zip(policy, model.lm.policy.parameters()))


def test_an_agent_scores_a_candidate_with_the_q_training_regresses_at_its_eoa():
    """The hidden state an agent reranks a candidate from is the one the loss trains Q at, the utterance's [EOA]:
    Q1 read through ``candidate_states`` at the end of each utterance of row 0 gives back the forward's Q loss (the
    fast twin of the rare-action run below, which fails too when either side reads another position)."""
    torch.manual_seed(0)
    model = UtteranceILQLModel(UtteranceILQLConfig(dataset="unused", model=TINY, gamma=0.5), TOKENIZER).eval()
    heads = model.utterance_heads
    with torch.no_grad():
        heads.q1[-1].weight.normal_()
    for head, value in ((heads.q2, 2.0), (heads.v, 0.5), (heads.target_q1, -3.0), (heads.target_q2, -1.0)):
        set_output(head, value)
    batch = {key: value[:1] for key, value in two_utterance_batch().items()}
    with torch.no_grad():
        loss = float(model(batch).metrics["q_loss"])
        ids = batch["input_ids"][0].tolist()
        states = model.candidate_states([ids[:6], ids], TOKENIZER.pad_id)  # each utterance with its [EOA]
        q = heads.q1(states).squeeze(-1)
    targets = torch.tensor([-0.75, 0.0])  # -1 + 0.5 * V, then 0 at the terminal [EOA]
    assert float(q.std()) > 1e-3, "the live head should score the two utterances apart"
    assert loss == pytest.approx(float(((q - targets) ** 2).mean() + ((2.0 - targets) ** 2).mean()), rel=1e-5)


class FixedSampler:
    """Stands in for the BC sampler: every game gets the same candidates, in order."""

    def __init__(self, candidates):
        self.candidates = candidates

    def act_batch(self, histories, seeds=None):
        return [self.candidates[i % len(self.candidates)] for i in range(len(histories))]


def test_the_agent_says_the_candidate_with_the_highest_q(monkeypatch):
    policy = BestOfSamplesPolicy.__new__(BestOfSamplesPolicy)
    policy.samples, policy.sampler = 3, FixedSampler(["ba", "ab", "bb"])
    q = {"ba": -1.0, "ab": 0.5, "bb": 0.2}
    monkeypatch.setattr(policy, "utterance_q", lambda histories, candidates: torch.tensor([q[c] for c in candidates]))
    assert policy.act_batch([([""], []), ([""], [])], seeds=[0, 1]) == ["ab", "ab"]


def test_candidates_are_scored_by_the_minimum_of_the_target_heads():
    """The ILQL code reranks by ``target_qs``, the minimum of its target heads: the live heads, or the larger target
    head, would score these candidates otherwise (their weights are drawn apart here)."""
    from trainers.core.checkpoint import LoadedModel

    torch.manual_seed(0)
    model = UtteranceILQLModel(UtteranceILQLConfig(dataset="unused", model=TINY), TOKENIZER).eval()
    with torch.no_grad():
        for head in (model.utterance_heads.q1, model.utterance_heads.target_q1, model.utterance_heads.target_q2):
            head[-1].weight.normal_()
    policy = BestOfSamplesPolicy(LoadedModel("utterance_ilql", model.config, model, TOKENIZER, 0), samples=2)
    histories, candidates = [([""], []), (["", "⬛⬛⬛⬛⬛"], ["crane"])], ["slate", "abide"]
    rows = [TOKENIZER.encode_prompt(list(o), list(a)) + TOKENIZER.encode(c) + [TOKENIZER.eoa_id]
            for (o, a), c in zip(histories, candidates)]
    states = model.candidate_states(rows, TOKENIZER.pad_id)
    heads = model.utterance_heads
    with torch.no_grad():
        first, second = heads.target_q1(states).squeeze(-1), heads.target_q2(states).squeeze(-1)
    scored = policy.utterance_q(histories, candidates)
    torch.testing.assert_close(scored, torch.minimum(first, second))
    assert not torch.allclose(scored, torch.maximum(first, second))
    assert not torch.allclose(scored, heads.live_q(states))


def test_with_enough_candidates_it_says_the_rare_rewarded_action(tmp_path):
    from trainers.algorithms.registry import load_policy

    # no BC checkpoint here: the policy is trained by BC in the same step (the option beside the authors' fixed one)
    loaded = train_on_rare_action("utterance_ilql", tmp_path, steps=300, alpha=0.1, samples=16, awac_weight=1.0,
                                  separate_value_trunk=False)
    checkpoint = tmp_path / "utterance_ilql" / "checkpoint"
    agent = load_policy(checkpoint, allowed_actions=["ab", "ba"])
    assert isinstance(agent, BestOfSamplesPolicy) and agent.samples == 16
    q_good, q_bad = agent.utterance_q([([""], [])] * 2, ["ab", "ba"]).tolist()
    assert q_good > q_bad, (q_good, q_bad)
    said = agent.act_batch([([""], [])] * 40, seeds=list(range(40)))
    sampled = agent.sampler.act_batch([([""], [])] * 40, seeds=list(range(40)))  # BC alone
    assert said.count("ab") >= 24 and sampled.count("ab") <= 12, (said.count("ab"), sampled.count("ab"))
    assert loaded.algorithm == "utterance_ilql"
