"""The advantage clip of ILQL's decoding rule (``logits + min(beta * (Q - V), adv_clip)``): applied by the agents,
read from the checkpoint, and each setting's default is its reference's (the ILQL code's Wordle: 0.0; its VisDial
and Reddit, and LMRL-Gym's Wordle: none)."""

from __future__ import annotations

import torch

from rlds_lang.tokenizers import CharTokenizer
from trainers.algorithms.cql.config import CQLConfig
from trainers.algorithms.ilql.ilql import LMRL_GYM_ILQL, ILQLConfig
from trainers.algorithms.ilql.mc import LMRL_GYM_MC, MCConfig
from trainers.algorithms.psi.config import PsiConfig
from trainers.algorithms.registry import agent_options, parse_agent
from trainers.core.decoding import perturbed_logits
from trainers.core.model import ModelConfig, ValueHeads, build_language_model
from trainers.core.policy import LanguageModelPolicy


def test_the_clip_caps_the_perturbation_from_above():
    logits, q, v = torch.tensor([0.5, 0.0, 0.0]), torch.tensor([3.0, 1.0, -1.0]), torch.tensor(1.0)
    assert perturbed_logits(logits, q, v, 2.0).tolist() == [4.5, 0.0, -4.0]
    assert perturbed_logits(logits, q, v, 2.0, adv_clip=0.0).tolist() == [0.5, 0.0, -4.0]
    assert perturbed_logits(logits, q, v, 2.0, adv_clip=1.0).tolist() == [1.5, 0.0, -4.0]


def test_an_agent_decodes_with_its_clip():
    """Uniform LM logits; Q says token 'b' is worth 5 more than V and 'a' 1 more. Unclipped, greedy play says 'b';
    at adv_clip 0 both perturbations are capped at 0 and the tie goes to the first token, 'a'."""
    tokenizer = CharTokenizer("ab")
    lm = build_language_model(ModelConfig(n_layer=1, n_embd=8, n_head=2, n_positions=16), tokenizer.vocab_size,
                              pad_id=tokenizer.pad_id)
    with torch.no_grad():
        lm.lm_head.weight.zero_()
    heads = ValueHeads(8, tokenizer.vocab_size).start_at(0.0)
    q = torch.zeros(tokenizer.vocab_size)
    q[tokenizer.encode("a")[0]], q[tokenizer.encode("b")[0]] = 1.0, 5.0
    with torch.no_grad():
        for head in (heads.target_q1, heads.target_q2):
            head[-1].bias.copy_(q)
    said = {}
    for clip in (None, 0.0):
        agent = LanguageModelPolicy(lm, tokenizer, heads=heads, beta=1.0, greedy=True, allowed_actions=["a", "b"],
                                    adv_clip=clip)
        said[clip] = agent.act_batch([([""], [])])[0]
        assert agent.params()["adv_clip"] == clip
    assert said == {None: "b", 0.0: "a"}


def test_each_settings_default_is_its_references():
    assert ILQLConfig().adv_clip == 0.0 and MCConfig().adv_clip == 0.0   # the ILQL code's Wordle setting
    assert CQLConfig().adv_clip is None and PsiConfig().adv_clip is None  # their VisDial evaluators
    assert LMRL_GYM_ILQL["adv_clip"] is None and LMRL_GYM_MC["adv_clip"] is None  # LMRL-Gym adds beta * Q unclipped
    from trainers.experiments.baselines.settings import LMRL_GYM
    from trainers.experiments.lmrl_gym.run import ON_BC_POLICY, ROWS

    assert ON_BC_POLICY["adv_clip"] is None
    for row in (*ROWS, *LMRL_GYM.rows):
        if row.algorithm in ("ilql", "mc", "cql", "psi"):
            assert row.overrides.get("adv_clip", "unset") is None, row.name


def test_an_agent_option_sets_the_clip():
    name, path, options = parse_agent("ilql=runs/x,beta=4,adv_clip=none")
    assert (name, path) == ("ilql", "runs/x") and agent_options(options) == {"beta": 4.0, "adv_clip": None}
    assert agent_options({"adv_clip": "0"}) == {"adv_clip": 0.0}


def test_a_checkpoint_plays_with_its_recorded_clip_and_one_saved_before_the_clip_uncapped(tmp_path):
    """The clip is read from the checkpoint's config.json: a checkpoint saved before configs had ``adv_clip`` was
    played uncapped when its results were made, and still is (not with today's default, 0)."""
    import json

    from rlds_lang.tokenizers import make_tokenizer
    from trainers.algorithms.registry import load_policy
    from trainers.core.checkpoint import save_checkpoint
    from trainers.core.model import ModelConfig

    tiny = ModelConfig(n_layer=1, n_embd=16, n_head=2, n_positions=32)
    tok = make_tokenizer("wordle")
    config = ILQLConfig(dataset="unused", model=tiny)
    from trainers.algorithms.ilql.ilql import ILQLModel

    path = save_checkpoint(tmp_path / "ilql", "ilql", config, ILQLModel(config, tok), tok, {"step": 1})
    assert load_policy(path).adv_clip == 0.0 and load_policy(path, adv_clip=2.0).adv_clip == 2.0
    stored = json.loads((path / "config.json").read_text())
    del stored["config"]["adv_clip"]
    (path / "config.json").write_text(json.dumps(stored))
    assert load_policy(path).adv_clip is None
