"""The ILQL code's Section-5 ranking (``trainers.evaluation.q_rank``, their ``Action_Ranking_Evaluator_Adversarial``):
its states and moves, its draws (a state uniformly, then the moves as often as the games made them), and its strict
comparison of Q at the last action tokens, for the trained and the target heads."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
import torch

from tests.baseline_helpers import TOKENIZER, tiny_model
from tests.test_ilql_targets import set_output
from tests.test_section5 import recorded_game
from trainers.core.checkpoint import LoadedModel
from trainers.evaluation import q_rank as Q


def test_docstring_examples_run():
    assert doctest.testmod(Q, raise_on_error=False).failed == 0


def games():
    """Two optimal games (one branched twice at turn 2), three suboptimal ones."""
    prefix = (["", "o1a", "o1b", "o1c"], ["raise", "m1", "m2"], [-1.0, -1.0, 0.0])
    return [recorded_game("o1", "optimal", *prefix),
            recorded_game("b0", "repeat_takeover", ["", "o1a", "o1b", "x"], ["raise", "m1", "raise"], [-1.0] * 3,
                  parent="o1", turn=2),
            recorded_game("b1", "repeat_takeover", ["", "o1a", "o1b", "y"], ["raise", "m1", "m1"], [-1.0] * 3,
                  parent="o1", turn=2),
            recorded_game("o2", "optimal", ["", "w"], ["raise"], [0.0]),
            *[recorded_game(f"s{i}", "random_mixture", ["", "s"], [word], [-1.0]) for i, word in
              enumerate(["abbey", "xylyl", "abbey"])]]


def test_states_hold_each_policys_moves_once_per_game():
    states = Q.adversarial_ranking_states(games())
    initial, branch = states["initial"], states["branch"]
    assert len(initial) == 1 and initial.better == [["raise", "raise"]] and initial.worse == [["abbey", "xylyl", "abbey"]]
    # the parent's move once, each takeover's move once
    assert len(branch) == 1 and branch.better == [["m2"]] and sorted(branch.worse[0]) == ["m1", "raise"]
    assert Q.state_key(branch.histories[0]) == ("", "raise", "o1a", "m1", "o1b")


def test_draws_pick_a_state_uniformly_then_moves_as_often_as_played():
    """Two states, one with many more entries: each is drawn about half the time (the reference's
    ``random.choice(self.initial_states)``), and within a state a move played twice as often is drawn twice as
    often (``random.choice`` over the entries)."""
    states = Q.RankingStates([([""], []), (["", "a"], ["x"])], [["p"] * 50, ["q"]],
                             [["u", "u", "v"] * 20, ["w"]])
    pairs = Q.draw_pairs(states, 3000, seed=0)
    first = np.mean([i == 0 for i, _, _ in pairs])
    assert 0.46 < first < 0.54
    u = np.mean([w == "u" for i, _, w in pairs if i == 0])
    assert 0.62 < u < 0.71
    assert pairs == Q.draw_pairs(states, 3000, seed=0)  # seeded
    with pytest.raises(ValueError, match="nothing to rank"):
        Q.draw_pairs(Q.RankingStates([], [], []), 5)


def test_q_is_compared_strictly_at_the_last_tokens_with_the_min_of_the_twin_heads():
    """Constant heads: Q of a token is its bias. 'crane' against 'crate': the end token and 'e' score alike (not
    ranked right: strict), 'n' beats 't' by the minimum of the live heads (Q1 alone says otherwise) and loses by the
    target heads; 'a', 'r', 'c' alike."""
    ilql = tiny_model("ilql")
    vocab = TOKENIZER.vocab_size
    n, t = TOKENIZER.encode("n")[0], TOKENIZER.encode("t")[0]
    q1, q2, target = torch.zeros(vocab), torch.zeros(vocab), torch.zeros(vocab)
    q1[n], q1[t] = 1.0, 5.0          # Q1 alone would rank 't' first
    q2[n], q2[t] = 2.0, -1.0         # min: n -> 1, t -> -1
    target[n], target[t] = -3.0, 3.0
    for head, value in ((ilql.heads.q1, q1), (ilql.heads.q2, q2), (ilql.heads.target_q1, target),
                        (ilql.heads.target_q2, target)):
        set_output(head, value)
    loaded = LoadedModel("ilql", ilql.config, ilql.eval(), TOKENIZER, 0)
    states = Q.RankingStates([([""], [])], [["crane"]], [["crate"]])
    measured = Q.q_rank(loaded, states, [(0, "crane", "crate")] * 3)
    assert measured["draws"] == 3
    assert measured["live"] == [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert measured["target"] == [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    live, target_values = Q.move_token_values(loaded, states.histories[0], ["crane"])
    assert live[0, 2] == 1.0 and target_values[0, 2] == -3.0 and live[0, 0] == 0.0
    # the same move on both sides is never ranked right
    assert Q.q_rank(loaded, states, [(0, "crane", "crane")])["live"] == [0.0] * 6
