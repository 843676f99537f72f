"""Token-level CQL's defining loss on a hand-made batch: Q regresses onto the max over the next state's target Q
(not ILQL's V), the conservative term is the cross-entropy of Q / temperature against the data token, and CQL
prefers a rare rewarded action that BC does not."""

from __future__ import annotations

import doctest

import pytest
import torch

from tests.baseline_helpers import TOKENIZER, first_letter_odds, tiny_model, train_on_rare_action
from tests.test_ilql_targets import hand_batch, set_output
from trainers.algorithms.cql import losses as cql_losses
from trainers.algorithms.cql.config import CQLConfig

VOCAB = TOKENIZER.vocab_size


def model(**overrides):
    return tiny_model("cql", **overrides)


def test_docstring_examples_run():
    assert doctest.testmod(cql_losses, raise_on_error=False).failed == 0


def test_defaults_are_the_authors_cql_settings():
    c = CQLConfig()
    assert (c.tau, c.cql_weight, c.cql_temperature, c.gamma, c.alpha, c.beta) == (0.5, 0.1, 1.0, 0.99, 0.005, 8.0)


def test_q_regresses_onto_the_max_of_the_next_states_target_q():
    """Target heads: min(tq1, tq2) has its max 3 at token 7 (no dataset token's); V = 0.5 (ILQL's target would use
    it). Q1 = 1 and Q2 = 2: the targets are r + 0.5 * 3 where a next state follows, r after a terminal."""
    cql = model(gamma=0.5, cql_weight=0.0, awac_weight=0.0, v_weight=0.0)
    low = torch.full((VOCAB,), -2.0)
    tq1, tq2 = low.clone(), low.clone()
    tq1[7], tq2[7] = 3.0, 4.0          # min 3 at token 7
    tq1[9], tq2[9] = 5.0, -1.0         # min -1: the max is of the min, not of either head
    for head, value in ((cql.heads.v, 0.5), (cql.heads.q1, 1.0), (cql.heads.q2, 2.0), (cql.heads.target_q1, tq1),
                        (cql.heads.target_q2, tq2)):
        set_output(head, value)
    output = cql(hand_batch())
    # action positions after the shift: 0, 1, 3, 4, 5 (row 0 cut at 6 inside an utterance: its position 4 bootstraps
    # the last state it keeps, as every trainer here does; not 0)
    targets = torch.tensor([1.5, 0.5, 1.5, 1.5] + [1.5, 0.5, 1.5, 1.5, -1.0])
    expected = ((1.0 - targets) ** 2).mean() + ((2.0 - targets) ** 2).mean()
    assert float(output.metrics["q_loss"]) == pytest.approx(float(expected), rel=1e-6)
    assert float(output.loss) == pytest.approx(float(expected), rel=1e-6)


def test_the_conservative_term_is_the_cross_entropy_of_q_over_temperature():
    """Q1 and Q2 are fixed vectors over the vocabulary; with only the conservative term weighted, the loss is
    ``mean_t [logsumexp(Q / T) - Q(a_t) / T]`` summed over both heads, at T = 2."""
    cql = model(q_weight=0.0, v_weight=0.0, awac_weight=0.0, cql_weight=1.0, cql_temperature=2.0)
    q1 = torch.linspace(-1.0, 2.0, VOCAB)
    q2 = torch.linspace(3.0, 0.0, VOCAB)
    set_output(cql.heads.q1, q1)
    set_output(cql.heads.q2, q2)
    batch = hand_batch()
    output = cql(batch)
    tokens = [int(batch["input_ids"][0, t + 1]) for t in (0, 1, 3, 4)] + \
             [int(batch["input_ids"][1, t + 1]) for t in (0, 1, 3, 4, 5)]

    def ce(q: torch.Tensor) -> float:
        return sum(float(torch.logsumexp(q / 2.0, 0) - q[a] / 2.0) for a in tokens) / len(tokens)

    assert float(output.loss) == pytest.approx(ce(q1) + ce(q2), rel=1e-5)
    # the full loss adds the weighted term to the others
    full = model(cql_weight=0.1, cql_temperature=2.0)
    set_output(full.heads.q1, q1)
    set_output(full.heads.q2, q2)
    out = full(batch)
    rest = out.metrics["q_loss"] + out.metrics["v_loss"] + out.metrics["awac_loss"]
    assert float(out.loss) == pytest.approx(float(rest) + 0.1 * (ce(q1) + ce(q2)), rel=1e-5)


def test_cql_prefers_a_rare_rewarded_action(tmp_path):
    """Over 300 steps the default Polyak rate (0.005) would leave the target heads half at their random start, and
    the max over them overestimates; a faster target (0.1) lets the TD chain settle in a short test."""
    loaded = train_on_rare_action("cql", tmp_path, steps=300, alpha=0.1)
    assert loaded.algorithm == "cql"
    assert first_letter_odds(loaded, 0.0) < 0.4, "the LM head alone imitates the data (mostly 'ba')"
    assert first_letter_odds(loaded, loaded.config.beta) > 0.7, "beta * (Q - V) should turn the policy to 'ab'"
