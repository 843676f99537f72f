"""ILQL's target network and heads, checked on one hand-made batch: V regresses onto ``min`` of the *target* Q
heads (on the target trunk with ``target_network="trunk"``), both Q heads are trained on the TD targets, the
target trunk is a Polyak copy of the value trunk, and agents decode with the Q heads ``decode_with`` names."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from rlds_lang.tokenizers import make_tokenizer
from trainers.algorithms.ilql import losses as L
from trainers.algorithms.ilql.ilql import LMRL_GYM_ILQL, ILQLConfig, ILQLModel, awac_weights
from trainers.algorithms.ilql.mc import LMRL_GYM_MC, MCConfig, MCModel
from trainers.core.decoding import next_token_logits
from trainers.core.model import ModelConfig, trunk_hidden, value_trunk

TINY = ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=32)
TOKENIZER = make_tokenizer("wordle")


def hand_batch() -> dict[str, torch.Tensor]:
    """Two sequences of 8 tokens: action tokens at 1, 2, 4, 5 and 6 (``[EOA]`` at 2 and 6, ``[EOO]`` at 3; the first
    sequence padded from 6 on, so it is cut inside its second utterance), reward -1 on tokens 2 and 6, token 6
    terminal."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(6, TOKENIZER.vocab_size, (2, 8), generator=generator)
    ids[:, [2, 6]], ids[:, 3] = TOKENIZER.eoa_id, TOKENIZER.eoo_id
    attention = torch.ones(2, 8, dtype=torch.long)
    attention[0, 6:] = 0
    action = torch.zeros(2, 8, dtype=torch.bool)
    action[:, [1, 2, 4, 5, 6]] = True
    rewards = torch.zeros(2, 8)
    rewards[:, [2, 6]] = -1.0
    dones = torch.zeros(2, 8, dtype=torch.bool)
    dones[:, 6] = True
    return {"input_ids": ids, "attention_mask": attention, "action_mask": action, "rewards": rewards, "dones": dones}


def set_output(head: torch.nn.Sequential, bias: float | torch.Tensor) -> None:
    """Makes an MLP head output the constant ``bias`` (zero output weights)."""
    with torch.no_grad():
        head[-1].weight.zero_()
        head[-1].bias.copy_(torch.as_tensor(bias).expand_as(head[-1].bias))


def model(**overrides) -> ILQLModel:
    torch.manual_seed(0)
    return ILQLModel(ILQLConfig(dataset="unused", model=TINY, **overrides), TOKENIZER)


def test_v_regresses_onto_the_min_of_the_target_q_heads_not_the_live_ones():
    """V = 0; the live Q heads say +10 and +12, the target heads -3 and -1: V's expectile target is -3."""
    ilql = model(tau=0.7)
    heads = ilql.heads
    for head, value in ((heads.v, 0.0), (heads.q1, 10.0), (heads.q2, 12.0), (heads.target_q1, -3.0),
                        (heads.target_q2, -1.0)):
        set_output(head, value)
    metrics = ilql(hand_batch()).metrics
    # every target below V: weight 1 - tau on (-3 - 0)^2
    assert float(metrics["v_loss"]) == pytest.approx(0.3 * 9.0)


def test_both_q_heads_regress_onto_the_td_targets_and_get_gradients():
    """Q1 = 1 and Q2 = 2 everywhere, V = 0.5: TD targets r + 0.5 * V(next) (0 after a terminal); the Q loss is the
    sum of both heads' mean squared errors, and each head receives a gradient from it (no CQL, no BC)."""
    ilql = model(gamma=0.5, cql_weight=0.0, awac_weight=0.0, v_weight=0.0)
    for head, value in ((ilql.heads.v, 0.5), (ilql.heads.q1, 1.0), (ilql.heads.q2, 2.0)):
        set_output(head, value)
    output = ilql(hand_batch())
    # action positions after the shift: 0, 1, 3, 4, 5 (row 0 without 5, padding). Targets: 0 + 0.5 * 0.5,
    # -1 + 0.5 * 0.5 (the next state is the [EOO] after the observation), 0.25, 0.25, and -1 at the terminal; row 0's
    # last action (4) is cut inside its utterance: it bootstraps V of the last state kept, 0.25 (the ILQL code's
    # rl_data.py; never 0)
    targets = torch.tensor([0.25, -0.75, 0.25, 0.25] + [0.25, -0.75, 0.25, 0.25, -1.0])
    expected = ((1.0 - targets) ** 2).mean() + ((2.0 - targets) ** 2).mean()
    assert float(output.metrics["q_loss"]) == pytest.approx(float(expected), rel=1e-6)
    output.loss.backward()
    for name in ("q1", "q2"):
        grad = getattr(ilql.heads, name)[-1].bias.grad
        assert grad is not None and grad.abs().sum() > 0, name


def test_the_target_trunk_feeds_the_target_heads():
    """With ``target_network="trunk"``, V's target is the target heads on the target trunk's hidden states: change
    the target trunk alone and V's loss follows it, exactly as computed from that trunk."""
    ilql = model(target_network="trunk", decode_with="live")
    batch = hand_batch()
    with torch.no_grad():
        ilql.target_trunk.ln_f.bias.add_(0.5)
        ilql.heads.target_q1[-1].weight.normal_()
        ilql.heads.target_q2[-1].weight.normal_()
    actions = batch["input_ids"][:, 1:]
    mask = batch["action_mask"][:, 1:] & batch["attention_mask"][:, 1:].bool()
    live = ilql.lm(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_hidden_states=True)
    v = ilql.heads.v(live.hidden_states[-1][:, :-1]).squeeze(-1)
    target_hidden = trunk_hidden(ilql.target_trunk, batch["input_ids"], batch["attention_mask"])[:, :-1]
    target_q = ilql.heads.target_q(target_hidden).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    from_live_trunk = ilql.heads.target_q(live.hidden_states[-1][:, :-1]).gather(-1, actions.unsqueeze(-1))
    assert not torch.allclose(target_q, from_live_trunk.squeeze(-1))
    expected = L.expectile_loss(target_q - v, ilql.config.tau, mask)
    assert float(ilql(batch).metrics["v_loss"]) == pytest.approx(expected.item(), rel=1e-5)


@pytest.mark.parametrize("separate", [False, True])
def test_the_target_trunk_starts_as_the_value_trunk_and_follows_it_by_polyak(separate):
    ilql = model(target_network="trunk", decode_with="live", separate_value_trunk=separate, alpha=0.25)
    live = value_trunk(ilql.lm)
    assert live is (ilql.lm.value if separate else ilql.lm.transformer)
    pairs = list(zip(ilql.target_trunk.parameters(), live.parameters(), strict=True))
    assert all(torch.equal(t, p) and not t.requires_grad for t, p in pairs)
    # same first loss as target heads on the live trunk, since the copy is exact
    heads_only = model(separate_value_trunk=separate)
    assert ilql(hand_batch()).loss.item() == pytest.approx(heads_only(hand_batch()).loss.item(), rel=1e-6)
    before = [t.clone() for t, _ in pairs]
    with torch.no_grad():
        for p in live.parameters():
            p.add_(1.0)
    ilql.after_optimizer_step()
    for old, (t, p) in zip(before, pairs):
        torch.testing.assert_close(t, 0.75 * old + 0.25 * p)
    ilql.train()
    assert ilql.training and not ilql.target_trunk.training


def test_target_heads_scheme_has_no_target_trunk_and_mc_never_does():
    assert model().target_trunk is None
    mc = MCModel(MCConfig(dataset="unused", model=TINY, decode_with="live"), TOKENIZER)
    assert mc.target_trunk is None and mc.heads.decode_with == "live"
    assert "target_trunk.wte.weight" in model(target_network="trunk", decode_with="live").state_dict()


@pytest.mark.parametrize("decode_with", ["target", "live"])
def test_agents_decode_with_the_q_heads_decode_with_names(decode_with):
    ilql = model(decode_with=decode_with).eval()
    heads = ilql.heads
    for head, value in ((heads.v, 0.0), (heads.q1, 2.0), (heads.q2, 1.0), (heads.target_q1, -3.0),
                        (heads.target_q2, -1.0)):
        set_output(head, value)
    with torch.no_grad():  # the live heads' min is 1 everywhere but token 7, where it is 4; the target heads' -3
        heads.q1[-1].bias[7] = 5.0
        heads.q2[-1].bias[7] = 4.0
    prompt = torch.tensor([[TOKENIZER.bos_id, 9, 10]])
    logits = next_token_logits(ilql.lm, heads, prompt, torch.ones_like(prompt), beta=2.0)
    plain = ilql.lm(input_ids=prompt).logits[:, -1]
    live_q = torch.full((TOKENIZER.vocab_size,), 1.0)
    live_q[7] = 4.0
    q = live_q if decode_with == "live" else torch.full((TOKENIZER.vocab_size,), -3.0)
    torch.testing.assert_close(logits[0], plain[0] + 2.0 * q)


def test_config_choices_are_checked_with_the_field_named():
    with pytest.raises(ValueError, match="target_network"):
        ILQLConfig(target_network="transformer")
    with pytest.raises(ValueError, match="decode_with"):
        MCConfig(decode_with="lagged")
    with pytest.raises(ValueError, match="decode_with='live'"):
        ILQLConfig(target_network="trunk")


def test_lmrl_gym_settings_are_its_scripts_values():
    ilql = ILQLConfig(**LMRL_GYM_ILQL)
    mc = MCConfig(**LMRL_GYM_MC)
    for config, lr in ((ilql, 3e-5), (mc, 1e-5)):
        assert (config.lr, config.warmup_steps, config.grad_clip, config.weight_decay) == (lr, 0, 0.0, 0.0)
        assert (config.adam_beta1, config.adam_beta2) == (0.9, 0.95)
        assert (config.decode_with, config.cql_weight, config.head_init_value) == ("live", 0.01, -4.4)
    assert ilql.target_network == "trunk" and ilql.alpha == 0.005
    # today's defaults are unchanged (the committed results pages were made with them)
    default = ILQLConfig()
    assert (default.target_network, default.decode_with, default.lr, default.grad_clip) == ("heads", "target", 3e-4,
                                                                                             1.0)
    assert (default.adam_beta1, default.adam_beta2) == (0.9, 0.999)
    assert dataclasses.asdict(ILQLConfig(**LMRL_GYM_ILQL))["target_network"] == "trunk"


def test_lmrl_gym_rows_value_trunk_over_a_fixed_policy_trains_only_the_values():
    """LMRL-Gym's rows as ``trainers.experiments.lmrl_gym`` builds them: its settings, a separate value trunk and no
    BC term; the target trunk copies the value trunk, and the policy gets no gradient."""
    ilql = model(**{**LMRL_GYM_ILQL, "separate_value_trunk": True, "awac_weight": 0.0})
    assert ilql.target_trunk is not None and ilql.heads.decode_with == "live"
    output = ilql(hand_batch())
    assert torch.isfinite(output.loss)
    output.loss.backward()
    assert all(p.grad is None for p in ilql.lm.policy.parameters())
    # the heads start as the constant -4.4 (zero output weights), so the value trunk's first gradient is zero, and
    # V's too (its target, min target Q, is V); the Q heads' TD errors are not zero
    assert all(p.grad is not None for p in ilql.lm.value.parameters())
    assert all(getattr(ilql.heads, name)[-1].weight.grad.abs().sum() > 0 for name in ("q1", "q2"))
    assert all(p.grad is None for p in ilql.target_trunk.parameters())


@pytest.mark.parametrize("decode_with", ["target", "live"])
def test_diagnostics_read_the_q_the_agent_decodes_with(decode_with):
    """The ranking test and the calibration score a word by the ``Q`` the agent acts on (``acting_q``): with
    ``decode_with="live"`` (LMRL-Gym's trunk target) the live heads, not the lagged target heads."""
    from trainers.core.checkpoint import LoadedModel
    from trainers.evaluation.diagnostics import utterance_values

    tokenizer = make_tokenizer("wordle")
    config = ILQLConfig(model=ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=32), decode_with=decode_with)
    model = ILQLModel(config, tokenizer).eval()
    model.heads.start_at(-4.0)
    with torch.no_grad():
        model.heads.q1[-1].bias.fill_(-1.0)
        model.heads.q2[-1].bias.fill_(-2.0)
    loaded = LoadedModel("ilql", config, model, tokenizer, 0)
    values = utterance_values(loaded, ([""], []), ["crane"])
    assert values.tolist() == [-2.0 if decode_with == "live" else -4.0]


def test_awac_weights_raise_the_likelihood_of_tokens_of_positive_advantage():
    """``awac_beta = 2``: the BC term of every token is weighted by exp(2 (Q^target - V)) (the ILQL code's
    ``exp_weights``): with the target heads at 1 and V at 0.5 that is e, never e^-1."""
    plain = model(q_weight=0.0, v_weight=0.0, cql_weight=0.0)
    weighted = model(q_weight=0.0, v_weight=0.0, cql_weight=0.0, awac_beta=2.0)
    for ilql in (plain, weighted):
        for head, value in ((ilql.heads.v, 0.5), (ilql.heads.target_q1, 1.0), (ilql.heads.target_q2, 3.0)):
            set_output(head, value)
    bc = float(plain(hand_batch()).metrics["awac_loss"])
    assert float(weighted(hand_batch()).metrics["awac_loss"]) == pytest.approx(bc * math.e, rel=1e-5)
    assert awac_weights(torch.tensor([0.5, -0.5]), 2.0).tolist() == pytest.approx([math.e, 1 / math.e])
    assert awac_weights(torch.tensor([0.5]), 0.0) is None
