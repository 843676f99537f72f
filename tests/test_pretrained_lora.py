"""LoRA on a pretrained causal LM (``ModelConfig.lora_rank``, ``trainers.core.lora``): only the adapters and the
heads train, the checkpoint holds the adapters merged into the weights and plays without peft and without the
pretrained folder, and LoRA without a pretrained model, without peft or on resume is a clear error."""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.pretrained_fixtures import episodes, play_three_games, train_config
from tests.pretrained_fixtures import tiny, tok  # noqa: F401  (module fixtures)
from tests.toy_data import build_dataset, wordle_like
from trainers.core.model import ModelConfig, build_language_model

#: peft is looked for, not imported: importing it (and transformers through it) takes seconds in every collecting worker.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("peft") is None,
                                reason="LoRA needs the optional peft package (the train extra)")

ADAPTED = "transformer.h.0.attn.c_attn"  # peft's default LoRA target for GPT-2


@pytest.fixture(scope="module")
def wordle_dataset(tmp_path_factory) -> str:
    return build_dataset(wordle_like(24, seed=3), tmp_path_factory.mktemp("wordle_like"))


def lora_config(algorithm: str, dataset: str, out: Path, folder: Path):
    """``algorithm``'s small config from ``folder`` with rank-2 adapters."""
    config = train_config(algorithm, dataset, out, folder)
    return dataclasses.replace(config, model=dataclasses.replace(config.model, lora_rank=2))


@pytest.mark.parametrize("algorithm", ["bc", "ilql"])
def test_a_step_changes_only_the_adapters_and_the_heads(algorithm, tiny, tok):
    from trainers.algorithms.registry import algorithm_by_name
    from trainers.core.loop import accumulate_gradients
    from transforms.token_layout import TokenMDPConfig, layout, sequences
    from transforms.torch_bridge import collate_token_mdp

    module = algorithm_by_name(algorithm).model_class(lora_config(algorithm, "unused", Path("unused"), tiny), tok)
    before = {name: value.detach().clone() for name, value in module.named_parameters()}
    games = episodes((["", "⬛🟨⬛⬛🟩", "🟩🟩🟩🟩🟩"], ["crane", "slate"], [-1.0, 0.0]),
                     (["", "⬛⬛⬛⬛⬛"], ["essay"], [-1.0]))
    batch = collate_token_mdp(sequences(layout(games, tok, TokenMDPConfig(observation_key="o"))), tok.pad_id)
    assert np.isfinite(accumulate_gradients(module, [batch])["loss"])
    torch.optim.AdamW(module.parameters(), lr=1e-2).step()
    adapters = {name for name in before if ".lora_" in name}
    assert adapters and all(ADAPTED in name for name in adapters)
    lm_weights = {name for name in before if name.startswith("lm.") and name not in adapters}
    assert any(".base_layer." in name for name in lm_weights)
    params = dict(module.named_parameters())
    for name in lm_weights:                                         # the pretrained LM is frozen...
        assert params[name].grad is None and torch.equal(params[name], before[name]), name
    assert any(not torch.equal(params[name], before[name]) for name in adapters if ".lora_B." in name)  # ...LoRA trains
    heads = {name for name in before if name.startswith("heads.") and "target" not in name}
    assert (algorithm == "bc") == (not heads)
    for name in heads:                                              # and so do the heads on it
        assert params[name].grad is not None and not torch.equal(params[name], before[name]), name


def test_the_checkpoint_holds_merged_weights_and_plays_without_peft_or_the_folder(tiny, tok, wordle_dataset,
                                                                                   tmp_path, monkeypatch):
    from transformers import GPT2LMHeadModel

    from trainers.algorithms.registry import load_agent_model, train

    folder = Path(shutil.copytree(tiny, tmp_path / "gpt2"))
    original = GPT2LMHeadModel.from_pretrained(folder).state_dict()
    result = train("bc", lora_config("bc", wordle_dataset, tmp_path / "run", folder), progress=False)
    assert result.steps == 3 and np.isfinite(result.final_metrics["loss"])
    shutil.rmtree(folder)
    monkeypatch.setitem(sys.modules, "peft", None)                  # `import peft` now raises ImportError
    checkpoint = tmp_path / "run" / "checkpoint"
    saved = torch.load(checkpoint / "model.pt", map_location="cpu")
    assert not any("lora_" in name or "base_layer" in name for name in saved)
    loaded = load_agent_model(checkpoint)
    assert loaded.config.model.lora_rank == 2                       # the config says how it was trained
    merged = GPT2LMHeadModel.from_pretrained(checkpoint / "lm").state_dict()
    assert set(merged) == set(original)
    assert not torch.equal(merged[f"{ADAPTED}.weight"], original[f"{ADAPTED}.weight"])   # the adapters, merged
    assert torch.equal(merged["transformer.h.0.mlp.c_fc.weight"], original["transformer.h.0.mlp.c_fc.weight"])
    assert torch.equal(loaded.model.state_dict()[f"lm.{ADAPTED}.weight"], merged[f"{ADAPTED}.weight"])
    play_three_games(checkpoint, tmp_path)


def test_a_saved_lora_module_is_merged_and_plays_without_peft_or_the_folder(tiny, tok, tmp_path, monkeypatch):
    from transformers import GPT2LMHeadModel

    from trainers.algorithms.registry import algorithm_by_name, load_agent_model
    from trainers.core.checkpoint import save_checkpoint

    folder = Path(shutil.copytree(tiny, tmp_path / "gpt2"))
    original = GPT2LMHeadModel.from_pretrained(folder).state_dict()
    config = lora_config("bc", "unused", tmp_path / "run", folder)
    module = algorithm_by_name("bc").model_class(config, tok)
    with torch.no_grad():
        for name, value in module.named_parameters():
            if ".lora_B." in name:
                value.normal_()                                     # a trained adapter (B starts at zero)
    checkpoint = save_checkpoint(tmp_path / "run", "bc", config, module, tok, {"step": 1})
    assert any(".lora_B." in name for name, _ in module.named_parameters())   # training goes on with adapters
    shutil.rmtree(folder)
    monkeypatch.setitem(sys.modules, "peft", None)
    assert not any("lora_" in name or "base_layer" in name for name in torch.load(checkpoint / "model.pt"))
    merged = GPT2LMHeadModel.from_pretrained(checkpoint / "lm").state_dict()
    assert not torch.equal(merged[f"{ADAPTED}.weight"], original[f"{ADAPTED}.weight"])
    assert torch.equal(merged["transformer.h.0.mlp.c_fc.weight"], original["transformer.h.0.mlp.c_fc.weight"])
    loaded = load_agent_model(checkpoint).model.state_dict()
    assert torch.equal(loaded[f"lm.{ADAPTED}.weight"], merged[f"{ADAPTED}.weight"])
    play_three_games(checkpoint, tmp_path)


def test_the_merged_copy_computes_what_the_adapted_model_computes(tiny, tok):
    from trainers.core.lora import has_lora, merged_copy

    lm = build_language_model(ModelConfig(pretrained=str(tiny), lora_rank=2), tok.vocab_size, tok.pad_id)
    with torch.no_grad():
        for name, value in lm.named_parameters():
            if ".lora_B." in name:
                value.normal_()                                     # B starts at zero: make the adapters count
    ids = torch.tensor([[1, 2, 3, 4]])
    merged = merged_copy(lm)
    assert has_lora(lm) and not has_lora(merged)
    assert torch.allclose(merged(input_ids=ids).logits, lm(input_ids=ids).logits, atol=1e-5)


def test_lora_without_a_pretrained_model_is_refused():
    with pytest.raises(ValueError, match="lora_rank=2 adapts a pretrained model.*pretrained"):
        build_language_model(ModelConfig(n_layer=1, n_embd=8, n_head=2, lora_rank=2), 10, pad_id=0)


def test_lora_without_peft_says_how_to_install_it(tiny, tok, monkeypatch):
    monkeypatch.setitem(sys.modules, "peft", None)
    with pytest.raises(ImportError, match="pip install peft"):
        build_language_model(ModelConfig(pretrained=str(tiny), lora_rank=2), tok.vocab_size, tok.pad_id)


def test_a_lora_run_does_not_resume(tiny, tok, tmp_path):
    from trainers.core.checkpoint import load_trainer_state, save_checkpoint
    from trainers.core.model import language_model_for

    config = dataclasses.replace(lora_config("bc", "unused", tmp_path / "run", tiny), resume=True)
    module = torch.nn.Module()
    module.lm = language_model_for(config.model, tok)
    save_checkpoint(tmp_path / "run", "bc", config, module, tok, {"step": 1})
    with pytest.raises(ValueError, match="LoRA run .* does not resume.*--model.pretrained"):
        load_trainer_state(config, module)


def test_the_adapted_layers_are_peft_defaults_for_the_family(tok, tmp_path):
    from tests.pretrained_fixtures import save_tiny_llama

    lm = build_language_model(ModelConfig(pretrained=str(save_tiny_llama(tmp_path / "llama")), lora_rank=2),
                              tok.vocab_size, tok.pad_id)
    adapted = {name.split(".lora_A.")[0].rsplit(".", 1)[-1] for name, value in lm.named_parameters()
               if ".lora_A." in name and value.requires_grad}
    assert adapted == {"q_proj", "v_proj"}
    assert not any(value.requires_grad for name, value in lm.named_parameters() if ".lora_" not in name)


def test_a_reward_model_with_adapters_trains_only_them_and_its_heads_and_scores_without_peft(tiny, tok, tmp_path,
                                                                                              monkeypatch):
    from tests.pretrained_fixtures import text_judgements
    from trainers.algorithms.reward.model import RewardModel, RewardModelConfig
    from trainers.algorithms.reward.trainer import RewardModelTrainer

    folder = Path(shutil.copytree(tiny, tmp_path / "gpt2"))
    config = RewardModelConfig(model=ModelConfig(pretrained=str(folder), lora_rank=2), members=2, hidden=8,
                               batch_size=4, lr=1e-2, device="cpu")
    trainer = RewardModelTrainer(config)
    trainer.train_step(text_judgements(8, seed=0))                  # the members are built on the first step
    before = {name: value.detach().clone() for name, value in trainer.model.members.named_parameters()}
    trainer.train_step(text_judgements(8, seed=0))
    after = dict(trainer.model.members.named_parameters())
    moved = {name for name in before if not torch.equal(before[name], after[name])}
    assert moved and all(".lora_" in name or ".trunk." not in name for name in moved)   # adapters and heads only
    assert any(".lora_B." in name for name in moved)
    clips = [j.left for j in text_judgements(4, seed=1)]
    expected, _ = trainer.model.member_step_rewards(clips)
    trainer.save(tmp_path / "checkpoint")                           # with its trainer state
    shutil.rmtree(folder)
    monkeypatch.setitem(sys.modules, "peft", None)
    loaded = RewardModel.load(tmp_path / "checkpoint", "cpu")
    assert torch.allclose(loaded.member_step_rewards(clips)[0], expected, atol=1e-5)
    with pytest.raises(ValueError, match="LoRA run .* does not resume"):
        RewardModelTrainer(config).restore(tmp_path / "checkpoint")


def test_ppo_with_adapters_saves_a_merged_policy_that_plays_without_peft(tiny, tmp_path, monkeypatch):
    from tests.pretrained_fixtures import WORDS
    from trainers.cli.main import main

    folder = Path(shutil.copytree(tiny, tmp_path / "gpt2"))
    words = tmp_path / "words.txt"
    words.write_text("\n".join(WORDS) + "\n")
    out = tmp_path / "ppo"
    main(["train", "ppo", "--task", "wordle", "--model.pretrained", str(folder), "--model.lora_rank", "2",
          "--answers", str(words), "--guesses", str(words), "--updates", "1", "--episodes", "2", "--ppo_epochs", "1",
          "--lr", "1e-3", "--out", str(out), "--no-progress"])
    shutil.rmtree(folder)
    monkeypatch.setitem(sys.modules, "peft", None)
    saved = torch.load(out / "checkpoint" / "model.pt", map_location="cpu")
    assert not any("lora_" in name or "base_layer" in name for name in saved)
    play_three_games(out / "checkpoint", tmp_path)
