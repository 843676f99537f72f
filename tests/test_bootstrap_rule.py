"""One bootstrapping rule for every value trainer (``trainers.algorithms.ilql.losses.transitions``), the ILQL code's:
only a terminal step bootstraps 0. An episode that ran out of time bootstraps the state after its last observation,
a cut sequence the last state it keeps, and an action whose next state was cut away leaves the value losses. Checked
on the token layout ``transforms.token_mdp`` writes and on ILQL, CQL, ψ, utterance ILQL and CHAI."""

from __future__ import annotations

import doctest

import pytest
import torch

from tests.baseline_helpers import TOKENIZER, tiny_model
from tests.test_ilql_targets import set_output
from trainers.algorithms.ilql import losses as ilql_losses
from trainers.algorithms.ilql.losses import decision_points, transitions

EOO, EOA = TOKENIZER.eoo_id, TOKENIZER.eoa_id
SEPARATORS = (EOO, EOA)


def one_turn_batch(terminal: bool, cut_at: int | None = None) -> dict[str, torch.Tensor]:
    """``[BOS] o [EOO] a a [EOA] o [EOO] [EOS]``: one utterance (reward -1 on its ``[EOA]``, at 5) whose episode is
    terminal or ran out of time (``is_last`` without ``is_terminal``: the final ``[EOO]``, at 7, is a state the agent
    would act from); ``cut_at`` keeps that many tokens (a sequence cut at ``max_length``)."""
    o, a = TOKENIZER.encode("c")[0], TOKENIZER.encode("a")[0]
    ids = torch.tensor([[TOKENIZER.bos_id, o, EOO, a, a, EOA, o, EOO, TOKENIZER.eos_id]])
    attention = torch.ones(1, 9, dtype=torch.long)
    if cut_at is not None:
        attention[0, cut_at:] = 0
    action = torch.zeros(1, 9, dtype=torch.bool)
    action[0, [3, 4, 5]] = True
    turn_end = torch.zeros(1, 9, dtype=torch.bool)
    turn_end[0, 5] = True
    rewards = torch.zeros(1, 9)
    rewards[0, 5] = -1.0
    dones = torch.zeros(1, 9, dtype=torch.bool)
    dones[0, 5] = terminal
    return {"input_ids": ids, "attention_mask": attention, "action_mask": action, "turn_end": turn_end,
            "rewards": rewards, "dones": dones}


def test_docstring_examples_run():
    assert doctest.testmod(ilql_losses, raise_on_error=False).failed == 0


def test_the_token_layout_puts_a_state_after_an_unfinished_episode():
    """``transforms.token_mdp`` on a game that ran out of time (``is_terminal`` false): its last ``[EOA]``'s next
    state is the ``[EOO]`` after the last observation, and ``dones`` is false there; the same game ended: true."""
    import tensorflow as tf

    from transforms.token_mdp import TokenMDPConfig, token_mdp

    def layout(terminal: bool) -> dict[str, torch.Tensor]:
        steps = {"observation": ["", "b"], "action": ["ab", ""], "reward": [-1.0, 0.0], "is_last": [False, True],
                 "is_terminal": [False, terminal]}
        episodes = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps)})
        seq = next(token_mdp(episodes, TOKENIZER, TokenMDPConfig(observation_key="observation")).as_numpy_iterator())
        return {key: torch.tensor(seq[key])[None] for key in ("input_ids", "action_mask", "rewards", "dones")} | {
            "attention_mask": torch.ones(1, len(seq["input_ids"]), dtype=torch.long)}

    for terminal in (False, True):
        batch = layout(terminal)
        steps = transitions(batch, *SEPARATORS, outputs=False)
        eoa = int((batch["input_ids"][0] == EOA).nonzero())
        final_eoo = int((batch["input_ids"][0] == EOO).nonzero()[-1])
        assert final_eoo == batch["input_ids"].shape[1] - 2  # ... o_T [EOO] [EOS]
        assert int(steps.next_state[0, eoa]) == final_eoo and bool(steps.has_next[0, eoa])
        assert bool(steps.dones[0, eoa]) == terminal


def test_decision_points_and_next_states_by_hand():
    batch = one_turn_batch(terminal=False)
    assert decision_points(batch["input_ids"], batch["action_mask"], batch["attention_mask"],
                           *SEPARATORS).nonzero()[:, 1].tolist() == [2, 3, 4, 7]
    steps = transitions(batch, *SEPARATORS)  # on the outputs: position t is about token t + 1
    assert steps.next_state[0, [2, 3, 4]].tolist() == [3, 4, 7] and steps.has_next[0, [2, 3, 4]].all()
    # cut inside the second observation: the [EOA]'s next state (7) is gone, it has no target
    cut = transitions(one_turn_batch(terminal=False, cut_at=7), *SEPARATORS)
    assert cut.has_next[0, [2, 3, 4]].tolist() == [True, True, False]
    assert cut.valid(torch.ones(1, 8, dtype=torch.bool))[0, [2, 3, 4]].tolist() == [True, True, False]


def ilql_q_loss(terminal: bool, cut_at: int | None = None, **overrides) -> float:
    ilql = tiny_model("ilql", gamma=0.5, cql_weight=0.0, awac_weight=0.0, v_weight=0.0, **overrides)
    for head, value in ((ilql.heads.v, 0.5), (ilql.heads.q1, 1.0), (ilql.heads.q2, 2.0)):
        set_output(head, value)
    return float(ilql(one_turn_batch(terminal, cut_at)).metrics["q_loss"])


def two_heads(targets: list[float]) -> float:
    t = torch.tensor(targets)
    return float(((1.0 - t) ** 2).mean() + ((2.0 - t) ** 2).mean())


def test_ilql_bootstraps_v_after_an_unfinished_episode_and_zero_after_a_terminal_one():
    """Targets at the three action tokens: 0 + 0.5 V, 0 + 0.5 V, and at the [EOA] -1 + 0.5 V(final [EOO]) when the
    episode ran out of time, -1 when it ended. ``dones`` decides which (zeroing it fails this test)."""
    assert ilql_q_loss(terminal=False) == pytest.approx(two_heads([0.25, 0.25, -0.75]), rel=1e-6)
    assert ilql_q_loss(terminal=True) == pytest.approx(two_heads([0.25, 0.25, -1.0]), rel=1e-6)
    # cut inside the second observation: the [EOA] leaves the loss (the ILQL code drops it from its action indices)
    assert ilql_q_loss(terminal=False, cut_at=7) == pytest.approx(two_heads([0.25, 0.25]), rel=1e-6)
    # cut just after the final [EOO]: that state is kept, so the [EOA] bootstraps it
    assert ilql_q_loss(terminal=False, cut_at=8) == pytest.approx(two_heads([0.25, 0.25, -0.75]), rel=1e-6)


def test_cql_and_psi_bootstrap_the_same_next_state():
    low = torch.full((TOKENIZER.vocab_size,), -2.0)
    tq = low.clone()
    tq[7] = 3.0
    for terminal, last in ((False, -1.0 + 0.5 * 3.0), (True, -1.0)):
        cql = tiny_model("cql", gamma=0.5, cql_weight=0.0, awac_weight=0.0, v_weight=0.0)
        for head, value in ((cql.heads.q1, 1.0), (cql.heads.q2, 2.0), (cql.heads.target_q1, tq),
                            (cql.heads.target_q2, tq)):
            set_output(head, value)
        loss = float(cql(one_turn_batch(terminal)).metrics["q_loss"])
        assert loss == pytest.approx(two_heads([1.5, 1.5, last]), rel=1e-6), terminal
    soft = float(torch.logsumexp(tq, 0))
    for terminal in (False, True):
        psi = tiny_model("psi", gamma=0.5, r_scale=1.0, v_weight=0.0, q_weight=1.0)
        for head, value in ((psi.heads.q1, 0.0), (psi.heads.q2, 0.0), (psi.heads.target_q1, tq),
                            (psi.heads.target_q2, tq)):
            set_output(head, value)
        batch = one_turn_batch(terminal)
        with torch.no_grad():
            log_pi = torch.log_softmax(psi.lm.policy(input_ids=batch["input_ids"]).logits[0, :-1], -1)
        targets = [float(log_pi[t, batch["input_ids"][0, t + 1]]) + r + (0.0 if (terminal and t == 4) else 0.5 * soft)
                   for t, r in ((2, 0.0), (3, 0.0), (4, -1.0))]
        expected = 2 * float(torch.nn.functional.huber_loss(torch.zeros(3), torch.tensor(targets)))
        assert float(psi(batch).metrics["q_loss"]) == pytest.approx(expected, rel=1e-5), terminal


def test_utterance_ilql_bootstraps_v_after_an_unfinished_episode():
    for terminal, target in ((False, -1.0 + 0.5 * 0.5), (True, -1.0)):
        model = tiny_model("utterance_ilql", gamma=0.5, v_weight=0.0)
        heads = model.utterance_heads
        for head, value in ((heads.q1, 1.0), (heads.q2, 2.0), (heads.v, 0.5)):
            set_output(head, value)
        loss = float(model(one_turn_batch(terminal)).metrics["q_loss"])
        assert loss == pytest.approx(two_heads([target]), rel=1e-6), terminal
    # cut inside the second observation: no target, nothing to regress
    model = tiny_model("utterance_ilql", gamma=0.5, v_weight=0.0)
    assert float(model(one_turn_batch(False, cut_at=7)).metrics["q_loss"]) == 0.0


def test_chai_samples_at_the_state_after_an_unfinished_episode(monkeypatch):
    for terminal, target in ((False, -1.0 + 0.5 * 4.0), (True, -1.0)):
        chai = tiny_model("chai", gamma=0.5, target_samples=2, cql_weight=0.0)
        for head, value in ((chai.utterance_heads.q1, 1.0), (chai.utterance_heads.q2, 2.0),
                            (chai.utterance_heads.target_q1, 4.0), (chai.utterance_heads.target_q2, 5.0)):
            set_output(head, value)
        asked = []

        def sampled(prompts, prompt_sums, asked=asked):
            asked.extend(len(p) - 1 for p in prompts)
            return torch.zeros(len(prompts), 2, 16), torch.zeros(len(prompts), 2)

        monkeypatch.setattr(chai, "sample_states", sampled)
        loss = float(chai(one_turn_batch(terminal)).metrics["q_loss"])
        # the utterance's own state (2) always; the final [EOO] (7) only when a target bootstraps it
        assert asked == ([2] if terminal else [2, 7])
        assert loss == pytest.approx(two_heads([target]), rel=1e-6), terminal
