"""A pretrained causal LM of another family than GPT-2 (a tiny Llama: ``hidden_size`` and no ``n_embd`` in its
config, its body at ``.model``) trains BC and ILQL from ``--model.pretrained``: the heads read the width from the
config whatever the family, the checkpoint saves and plays; ILQL's separate value trunk (GPT-2's blocks) is
refused with a reason."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.pretrained_fixtures import episodes, play_three_games, save_tiny_llama, train_config
from trainers.core.pretrained import pretrained_tokenizer


@pytest.fixture(scope="module")
def llama(tmp_path_factory) -> Path:
    return save_tiny_llama(tmp_path_factory.mktemp("tiny_llama"), hidden_size=24)


@pytest.fixture(scope="module")
def tok(llama):
    return pretrained_tokenizer(str(llama))


def one_batch(tok):
    from transforms.token_layout import TokenMDPConfig, layout, sequences
    from transforms.torch_bridge import collate_token_mdp

    games = episodes((["", "⬛🟨⬛⬛🟩", "🟩🟩🟩🟩🟩"], ["crane", "slate"], [-1.0, 0.0]),
                     (["", "⬛⬛⬛⬛⬛"], ["essay"], [-1.0]))
    return collate_token_mdp(sequences(layout(games, tok, TokenMDPConfig(observation_key="o"))), tok.pad_id)


def test_the_width_comes_from_the_config_of_any_family(llama, tok):
    from transformers import AutoConfig

    from trainers.core.model import ModelConfig, hidden_size, language_model_for

    config = AutoConfig.from_pretrained(llama)
    assert config.model_type == "llama" and not hasattr(config, "n_embd")
    assert hidden_size(language_model_for(ModelConfig(pretrained=str(llama)), tok)) == 24


@pytest.mark.parametrize("algorithm", ["bc", "ilql"])
def test_bc_and_ilql_train_a_llama_and_play_from_its_checkpoint(algorithm, llama, tok, tmp_path):
    from transformers import LlamaForCausalLM

    from trainers.algorithms.registry import algorithm_by_name
    from trainers.core.checkpoint import save_checkpoint
    from trainers.core.loop import accumulate_gradients

    config = train_config(algorithm, "unused", tmp_path / "run", llama)
    module = algorithm_by_name(algorithm).model_class(config, tok)
    assert isinstance(module.lm, LlamaForCausalLM)
    metrics = accumulate_gradients(module, [one_batch(tok)])
    assert np.isfinite(metrics["loss"])
    block = module.lm.model.layers[0].mlp.up_proj.weight
    assert block.grad is not None and block.grad.abs().sum() > 0
    if algorithm == "ilql":
        assert module.heads.q1[0].in_features == 24
        assert module.heads.q1[0].weight.grad.abs().sum() > 0
    checkpoint = save_checkpoint(tmp_path / "run", algorithm, config, module, tok, {"step": 1})
    assert (checkpoint / "lm" / "config.json").is_file()
    play_three_games(checkpoint, tmp_path)


def test_a_separate_value_trunk_is_refused_for_a_family_other_than_gpt2(llama, tok):
    from trainers.algorithms.ilql.ilql import ILQLModel

    config = train_config("ilql", "unused", Path("unused"), llama, separate_value_trunk=True)
    with pytest.raises(ValueError, match="'llama' models share the policy's trunk"):
        ILQLModel(config, tok)


def test_ppos_value_head_and_a_reward_models_trunk_read_a_llama(llama, tok):
    from trainers.algorithms.ppo.config import PPOConfig
    from trainers.algorithms.ppo.trainer import initial_model
    from trainers.algorithms.reward.networks import TextStepReward
    from trainers.core.model import ModelConfig

    ids = torch.tensor([tok.encode_prompt(["", "⬛🟨⬛⬛🟩"], ["crane"])])
    mask = torch.ones_like(ids)
    _, model, _ = initial_model(PPOConfig(model=ModelConfig(pretrained=str(llama))))
    logits, values = model(ids, mask)
    assert model.value_head.in_features == 24 and values.shape == ids.shape
    assert logits.shape == (*ids.shape, tok.vocab_size)
    reward = TextStepReward(ModelConfig(pretrained=str(llama)), tok, hidden=8, dropout=0.0, batch_norm=False)
    assert type(reward.trunk).__name__ == "LlamaModel" and reward.head[0].in_features == 24
    assert reward({"input_ids": ids, "attention_mask": mask}).shape == (1,)
