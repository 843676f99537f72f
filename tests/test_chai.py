"""CHAI's defining loss on a hand-made batch (Q at each utterance's [EOA] regresses onto r + gamma * the max over
the utterances sampled at the next state), its sampler, and with a frozen BC LM it says a rare rewarded action far
more often than that LM does."""

from __future__ import annotations

import doctest

import pytest
import torch

from tests.baseline_helpers import TOKENIZER, tiny_model, train_on_rare_action
from tests.test_ilql_targets import set_output
from tests.test_utterance_ilql import two_utterance_batch
from trainers.algorithms.chai import losses as chai_losses
from trainers.algorithms.chai.config import ChaiConfig
from trainers.algorithms.chai.model import sample_utterances
from trainers.algorithms.utterance_ilql.model import hidden_after


def test_docstring_examples_run():
    assert doctest.testmod(chai_losses, raise_on_error=False).failed == 0


def test_defaults_and_checks():
    c = ChaiConfig()
    assert (c.target_samples, c.samples, c.gamma, c.alpha) == (5, 5, 0.99, 0.005)
    with pytest.raises(ValueError, match="ChaiConfig.target_samples"):
        ChaiConfig(target_samples=0)


def test_the_target_is_the_max_over_the_next_states_sampled_utterances(monkeypatch):
    chai = tiny_model("chai", gamma=0.5, target_samples=3)
    set_output(chai.utterance_heads.q1, 1.0)
    set_output(chai.utterance_heads.q2, 2.0)
    batch = two_utterance_batch()
    asked = []

    def sampled(prompts):
        asked.extend(prompts)
        return torch.tensor([[-1.0, 2.0, 0.5]] * len(prompts))

    monkeypatch.setattr(chai, "sampled_target_q", sampled)
    output = chai(batch)
    # only row 0 has a next state (position 7, after its first utterance): its prompt is the sequence up to there
    assert asked == [batch["input_ids"][0, :8].tolist()]
    # targets: -1 + 0.5 * max(-1, 2, 0.5) = 0 for the first utterance, 0 for the terminal one
    assert float(output.loss) == pytest.approx((1.0 - 0.0) ** 2 + (2.0 - 0.0) ** 2, rel=1e-6)
    assert not any(p.requires_grad for p in chai.lm.parameters())
    output.loss.backward()
    assert chai.utterance_heads.q1[-1].bias.grad is not None


def test_sampled_utterances_stop_at_eoa_and_never_hold_padding_or_markers():
    lm = tiny_model("chai").lm
    prompts = [TOKENIZER.encode_prompt([""], []), TOKENIZER.encode_prompt(["", "⬛⬛⬛⬛⬛"], ["crane"])]
    torch.manual_seed(3)
    first, hidden = sample_utterances(lm, TOKENIZER, prompts, k=4, max_tokens=6)
    torch.manual_seed(3)
    assert sample_utterances(lm, TOKENIZER, prompts, k=4, max_tokens=6)[0] == first  # torch's generator decides
    # the [EOA] states read from the prompts' shared cache are those of running each whole row through the LM
    rows = [prompt + u + [TOKENIZER.eoa_id] for prompt, u in zip((p for p in prompts for _ in range(4)), first)]
    with torch.no_grad():
        torch.testing.assert_close(hidden, hidden_after(lm, rows, TOKENIZER.pad_id), rtol=1e-4, atol=1e-5)
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
