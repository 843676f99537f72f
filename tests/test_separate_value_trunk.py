"""ILQL's value heads on their own transformer (``separate_value_trunk``, ``trainers.core.model.PolicyValueLM``): the
value losses reach only the value trunk and BC only the policy, the shared cache decodes exactly like a full
recomputation, checkpoints save the policy as ``lm/`` and reload both, and training changes both trunks."""

from __future__ import annotations

import pytest
import torch

from rlds_lang.tokenizers import make_tokenizer
from rlds_lang.wordle.words import official_guesses
from tests.test_agents import game_histories, one_thread  # noqa: F401  (autouse fixture)
from tests.test_trainers import config
from tests.toy_data import build_dataset, wordle_like
from trainers.algorithms.ilql.ilql import ILQLConfig, ILQLModel
from trainers.algorithms.registry import load_agent_model, load_policy, train
from trainers.core.checkpoint import save_checkpoint
from trainers.core.loop import DistInfo, training_batches
from trainers.core.model import ModelConfig, PolicyValueLM
from trainers.core.policy import LanguageModelPolicy
from trainers.evaluation.wordle import EvalConfig, evaluate

TINY = ModelConfig(n_layer=2, n_embd=32, n_head=2, n_positions=128)


@pytest.fixture(scope="module")
def wordle_dataset(tmp_path_factory) -> str:
    return build_dataset(wordle_like(32, seed=5), tmp_path_factory.mktemp("wordle_like"))


def separate_model(seed: int = 0) -> ILQLModel:
    torch.manual_seed(seed)
    return ILQLModel(ILQLConfig(dataset="unused", model=TINY, separate_value_trunk=True), make_tokenizer("wordle"))


def test_the_value_trunk_is_a_second_transformer_with_its_own_cache_layers():
    model = separate_model()
    assert isinstance(model.lm, PolicyValueLM)
    policy_ids = {id(p) for p in model.lm.policy.parameters()}
    assert not policy_ids & {id(p) for p in model.lm.value.parameters()}
    assert [block.attn.layer_idx for block in model.lm.value.h] == [2, 3]
    shared = ILQLModel(ILQLConfig(dataset="unused", model=TINY), make_tokenizer("wordle"))
    assert sum(p.numel() for p in model.lm.parameters()) > 1.8 * sum(p.numel() for p in shared.lm.parameters())


@pytest.mark.parametrize("weights, trained, untouched", [
    ({"awac_weight": 0.0}, "value", "policy"),                                            # Q, V, CQL: values only
    ({"q_weight": 0.0, "v_weight": 0.0, "cql_weight": 0.0}, "policy", "value"),           # BC: the policy only
])
def test_each_loss_reaches_only_its_own_trunk(wordle_dataset, weights, trained, untouched):
    cfg = config("ilql", wordle_dataset, "unused", separate_value_trunk=True, model=TINY, **weights)
    tokenizer = make_tokenizer("wordle")
    torch.manual_seed(0)
    model = ILQLModel(cfg, tokenizer)
    model(next(training_batches(cfg, tokenizer, DistInfo()))).loss.backward()

    def gradient_norm(module):
        return sum(float(p.grad.abs().sum()) for p in module.parameters() if p.grad is not None)

    assert gradient_norm(getattr(model.lm, trained)) > 0
    assert gradient_norm(getattr(model.lm, untouched)) == 0


def test_cached_decoding_equals_a_full_recomputation():
    lm = separate_model().lm.eval()
    ids = torch.randint(3, 30, (2, 12))
    mask = torch.ones_like(ids)
    mask[1, :4] = 0  # a left-padded row
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    full = lm(input_ids=ids, attention_mask=mask, position_ids=positions, output_hidden_states=True)
    out = lm(input_ids=ids[:, :7], attention_mask=mask[:, :7], position_ids=positions[:, :7], use_cache=True,
             output_hidden_states=True)
    cache = out.past_key_values
    assert len(cache.layers) == 4  # the policy's two layers, then the value trunk's
    for t in range(7, 12):
        out = lm(input_ids=ids[:, t:t + 1], attention_mask=mask[:, :t + 1], position_ids=positions[:, t:t + 1],
                 past_key_values=cache, output_hidden_states=True)
        torch.testing.assert_close(out.logits[:, -1], full.logits[:, t], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(out.hidden_states[-1][:, -1], full.hidden_states[-1][:, t], atol=1e-5, rtol=1e-5)


def test_agents_decode_the_same_with_and_without_kept_states_and_batching():
    model = separate_model()
    tok, words = make_tokenizer("wordle"), official_guesses().words
    results = [evaluate(LanguageModelPolicy(model.lm, tok, heads=model.heads, beta=16.0, allowed_actions=words,
                                            reuse_states=reuse), EvalConfig(games=12, batch_games=4), progress=False)
               for reuse in (True, False)]
    assert results[0].actions == results[1].actions
    agent = LanguageModelPolicy(model.lm, tok, heads=model.heads, beta=16.0, greedy=True, allowed_actions=words)
    histories = game_histories(["crane", "tolls", "pleat"])
    assert agent.act_batch(histories) == [agent.act_batch([h])[0] for h in histories]


def test_checkpoint_keeps_the_policy_as_lm_and_both_trunks_in_model_pt(tmp_path):
    from transformers import GPT2LMHeadModel

    model = separate_model(seed=1)
    cfg, tok = model.config, make_tokenizer("wordle")
    path = save_checkpoint(tmp_path / "run", "ilql", cfg, model, tok, {"step": 1})
    plain = GPT2LMHeadModel.from_pretrained(path / "lm")
    assert torch.equal(plain.transformer.h[0].attn.c_attn.weight, model.lm.policy.transformer.h[0].attn.c_attn.weight)
    loaded = load_agent_model(path)
    assert loaded.config.separate_value_trunk and isinstance(loaded.lm, PolicyValueLM)
    assert all(torch.equal(a, b) for a, b in zip(loaded.model.state_dict().values(), model.state_dict().values()))
    agent = load_policy(path, allowed_actions=official_guesses().words, greedy=True)
    direct = LanguageModelPolicy(model.lm, tok, heads=model.heads, beta=16.0, greedy=True,
                                 allowed_actions=official_guesses().words, adv_clip=cfg.adv_clip)
    histories = game_histories(["crane", "tolls"])
    assert agent.act_batch(histories) == direct.act_batch(histories)


def test_training_changes_both_trunks(wordle_dataset, tmp_path):
    cfg = config("ilql", wordle_dataset, tmp_path / "ilql", steps=6, separate_value_trunk=True, model=TINY)
    torch.manual_seed(cfg.seed)
    before = {k: v.clone() for k, v in ILQLModel(cfg, make_tokenizer("wordle")).state_dict().items()}
    train("ilql", cfg, progress=False)
    after = load_agent_model(tmp_path / "ilql" / "checkpoint").model.state_dict()
    for prefix in ("lm.policy.transformer.h.0.", "lm.value.h.0.", "heads.q1."):
        changed = [k for k in after if k.startswith(prefix) and not torch.equal(after[k], before[k])]
        assert changed, prefix


def test_a_fixed_bc_policy_stays_exactly_bc_while_the_values_learn(wordle_dataset, tmp_path):
    """LMRL-Gym's value-based agents: the BC model's logits perturbed by a separately trained value model."""
    from transformers import GPT2LMHeadModel

    from trainers.core.model import language_model_for

    torch.manual_seed(3)
    language_model_for(TINY, make_tokenizer("wordle")).save_pretrained(tmp_path / "bc_lm")
    start = GPT2LMHeadModel.from_pretrained(tmp_path / "bc_lm").state_dict()
    model = dict(TINY.__dict__, checkpoint=str(tmp_path / "bc_lm"))
    cfg = config("mc", wordle_dataset, tmp_path / "mc", steps=4, separate_value_trunk=True, awac_weight=0.0,
                 model=ModelConfig(**model))
    train("mc", cfg, progress=False)
    lm = load_agent_model(tmp_path / "mc" / "checkpoint").lm
    assert all(torch.equal(value, start[name]) for name, value in lm.policy.state_dict().items())
    value_start = {k[len("transformer."):]: v for k, v in start.items() if k.startswith("transformer.")}
    assert any(not torch.equal(v, value_start[k]) for k, v in lm.value.state_dict().items())


def test_heads_can_start_at_a_constant_value():
    torch.manual_seed(0)
    cfg = ILQLConfig(dataset="unused", model=TINY, head_init_value=-4.4)
    model = ILQLModel(cfg, make_tokenizer("wordle"))
    q1, q2, v = model.heads(torch.randn(2, 5, TINY.n_embd))
    for values in (q1, q2, v, model.heads.target_q(torch.randn(3, TINY.n_embd))):
        assert torch.allclose(values, torch.full_like(values, -4.4))
    default = ILQLModel(ILQLConfig(dataset="unused", model=TINY), make_tokenizer("wordle"))
    assert default.heads.v[-1].weight.abs().sum() > 0
