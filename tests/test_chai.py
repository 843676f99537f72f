"""CHAI's defining loss on a hand-made batch (Q at each utterance's [EOA] regresses onto r + gamma * the max over
the utterances sampled at the next state; the conservative term; the running mean of the LM's states), its sampler,
and with a frozen BC LM it says a rare rewarded action far more often than that LM does."""

from __future__ import annotations

import doctest
import math

import pytest
import torch

from tests.baseline_helpers import TOKENIZER, tiny_model, train_on_rare_action
from tests.test_ilql_targets import set_output
from tests.test_utterance_ilql import two_utterance_batch
from trainers.algorithms.chai import losses as chai_losses
from trainers.algorithms.chai.config import ChaiConfig
from trainers.algorithms.chai.model import conservative_term, running_mean, sample_utterances
from trainers.algorithms.utterance_ilql.model import hidden_after


def test_docstring_examples_run():
    assert doctest.testmod(chai_losses, raise_on_error=False).failed == 0


def test_defaults_and_checks():
    c = ChaiConfig()
    assert (c.target_samples, c.samples, c.cql_weight, c.gamma, c.alpha) == (5, 5, 0.1, 0.99, 0.005)
    with pytest.raises(ValueError, match="ChaiConfig.target_samples"):
        ChaiConfig(target_samples=0)


def test_the_target_is_the_max_over_the_next_states_sampled_utterances(monkeypatch):
    chai = tiny_model("chai", gamma=0.5, target_samples=3, cql_weight=0.0)
    set_output(chai.utterance_heads.q1, 1.0)
    set_output(chai.utterance_heads.q2, 2.0)
    batch = two_utterance_batch()
    asked = []

    def sampled(prompts, prompt_sums):
        asked.extend(prompts)
        return torch.zeros(len(prompts), 3, 16), torch.zeros(len(prompts), 3)

    monkeypatch.setattr(chai, "sample_states", sampled)
    monkeypatch.setattr(chai.utterance_heads, "target_q", lambda states: torch.tensor([-1.0, 2.0, 0.5]).expand(
        states.shape[:-1]))
    output = chai(batch)
    # samples at every utterance's state (row 0: 2 and 7, row 1: 2; row 1 is cut before its second utterance), 7
    # being also row 0's first utterance's next state; each prompt is the sequence up to there
    ids = batch["input_ids"]
    assert asked == [ids[0, :3].tolist(), ids[0, :8].tolist(), ids[1, :3].tolist()]
    # targets: -1 + 0.5 * max(-1, 2, 0.5) = 0 for the first utterance, 0 for the terminal one
    assert float(output.loss) == pytest.approx((1.0 - 0.0) ** 2 + (2.0 - 0.0) ** 2, rel=1e-6)
    assert not any(p.requires_grad for p in chai.lm.parameters())
    output.loss.backward()
    assert chai.utterance_heads.q1[-1].bias.grad is not None


def test_the_conservative_term_by_hand(monkeypatch):
    """The authors' ``get_cql_loss``: per head, logsumexp of (sampled Q - log p, random Q + log 2h) / 2K minus the
    data's Q, at weight 0.1; Q1 = 1 and Q2 = 2 everywhere, sampled log-probabilities -1, K = 2, h = 16."""
    chai = tiny_model("chai", gamma=0.5, target_samples=2)
    set_output(chai.utterance_heads.q1, 1.0)
    set_output(chai.utterance_heads.q2, 2.0)
    monkeypatch.setattr(chai, "sample_states", lambda prompts, sums: (torch.zeros(len(prompts), 2, 16),
                                                                      torch.full((len(prompts), 2), -1.0)))
    output = chai(two_utterance_batch())
    random_log_prob = -math.log(2 * 16)
    expected = 0.0
    for q in (1.0, 2.0):
        scores = torch.tensor([q + 1.0, q + 1.0, q - random_log_prob, q - random_log_prob]) / 4
        expected += float(torch.logsumexp(scores, 0)) - q   # the same at each of the three utterances
    assert float(output.metrics["cql_loss"]) == pytest.approx(expected, rel=1e-5)
    assert float(output.loss) == pytest.approx(float(output.metrics["q_loss"]) + 0.1 * expected, rel=1e-5)
    assert float(conservative_term(torch.tensor([0.0]), torch.zeros(1, 1), torch.zeros(1, 1), torch.zeros(1, 1),
                                   0.0)) == pytest.approx(math.log(2))


def test_the_heads_read_the_running_mean_of_the_lms_states():
    """The authors' CHAI state: the mean of the frozen LM's last hidden states over the sequence so far, in
    training (at each [EOA]) and when the agent scores a candidate."""
    chai = tiny_model("chai")
    batch = two_utterance_batch()
    with torch.no_grad():
        hidden = chai.lm(input_ids=batch["input_ids"], output_hidden_states=True).hidden_states[-1]
        torch.testing.assert_close(running_mean(hidden)[0, 5], hidden[0, :6].mean(0))
        rows = [batch["input_ids"][0, :6].tolist(), batch["input_ids"][0, :10].tolist()]
        states = chai.candidate_states(rows, TOKENIZER.pad_id)
    torch.testing.assert_close(states[0], hidden[0, :6].mean(0), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(states[1], hidden[0, :10].mean(0), rtol=1e-4, atol=1e-5)
    assert not torch.allclose(states[0], hidden[0, 5], atol=1e-3)  # not the last state alone
    # in training, Q is read there: Q1 of the running mean at row 0's first [EOA]
    seen = []
    chai.utterance_heads.q1.register_forward_hook(lambda module, inputs, output: seen.append(inputs[0]))
    chai(batch)
    torch.testing.assert_close(seen[0][0, 5], hidden[0, :6].mean(0), rtol=1e-4, atol=1e-5)


def test_sampled_utterances_stop_at_eoa_and_never_hold_padding_or_markers():
    lm = tiny_model("chai").lm
    prompts = [TOKENIZER.encode_prompt([""], []), TOKENIZER.encode_prompt(["", "⬛⬛⬛⬛⬛"], ["crane"])]
    torch.manual_seed(3)
    sampled = sample_utterances(lm, TOKENIZER, prompts, k=4, max_tokens=6)
    first = sampled.tokens
    torch.manual_seed(3)
    assert sample_utterances(lm, TOKENIZER, prompts, k=4, max_tokens=6).tokens == first  # torch's generator decides
    # the states read from the prompts' shared cache are those of running each whole row through the LM
    rows = [prompt + u + [TOKENIZER.eoa_id] for prompt, u in zip((p for p in prompts for _ in range(4)), first)]
    with torch.no_grad():
        torch.testing.assert_close(sampled.last, hidden_after(lm, rows, TOKENIZER.pad_id), rtol=1e-4, atol=1e-5)
        for i, (row, u) in enumerate(zip(rows, first)):
            hidden = lm(input_ids=torch.tensor([row]), output_hidden_states=True).hidden_states[-1][0]
            torch.testing.assert_close(sampled.sums[i], hidden[-len(u) - 1:].sum(0), rtol=1e-4, atol=1e-4)
            assert int(sampled.lengths[i]) == len(u) + 1
            # the log-probability of the utterance (banned tokens masked), plus its stop token's unless it ran out
            logits = lm(input_ids=torch.tensor([row[:-1]])).logits[0, -len(u) - 1:].double()
            logits[:, [TOKENIZER.pad_id, TOKENIZER.bos_id, TOKENIZER.eoo_id]] = float("-inf")
            log_p = torch.log_softmax(logits, -1)
            said = float(sum(log_p[j, t] for j, t in enumerate(u)))
            ends = [said + float(log_p[-1, stop]) for stop in (TOKENIZER.eoa_id, TOKENIZER.eos_id)]
            options = [said] if len(u) == 6 else ends
            assert min(abs(float(sampled.log_probs[i]) - o) for o in options) < 1e-4, (i, options)
    assert len(first) == 8 and all(len(u) <= 6 for u in first)
    banned = {TOKENIZER.pad_id, TOKENIZER.bos_id, TOKENIZER.eoo_id, TOKENIZER.eoa_id, TOKENIZER.eos_id}
    assert not banned & {t for u in first for t in u}


def test_with_a_frozen_bc_lm_it_says_the_rare_rewarded_action(tmp_path):
    from tests.test_trainers import TINY as TRAINER_TINY
    from trainers.algorithms.registry import load_policy

    bc = train_on_rare_action("bc", tmp_path / "bc")
    lm_folder = tmp_path / "bc" / "bc" / "checkpoint" / "lm"
    model = TRAINER_TINY.__class__(**{**TRAINER_TINY.__dict__, "checkpoint": str(lm_folder)})
    train_on_rare_action("chai", tmp_path / "chai", steps=300, alpha=0.1, samples=16, model=model)
    agent = load_policy(tmp_path / "chai" / "chai" / "checkpoint", allowed_actions=["ab", "ba"])
    assert agent.samples == 16 and bc.algorithm == "bc"
    said = agent.act_batch([([""], [])] * 40, seeds=list(range(40)))
    sampled = agent.sampler.act_batch([([""], [])] * 40, seeds=list(range(40)))  # the frozen BC LM alone
    assert said.count("ab") >= 24 and sampled.count("ab") <= 12, (said.count("ab"), sampled.count("ab"))
