"""``ModelConfig.logit_scale``: the output logits times a learnable scalar; it trains, resumes exactly, and the
saved ``lm/`` is a plain GPT-2 (output untied, the scale folded in) with the same logits."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from rlds_lang.tokenizers import word_tokenizer
from tests.resume_check import train_straight_and_resumed
from tests.toy_data import build_dataset, wordle_like
from trainers.algorithms.registry import load_agent_model
from trainers.core.model import (
    ModelConfig,
    ScaledOutput,
    build_language_model,
    language_model_for,
)

WORDS = ["crane", "crate", "lousy", "slate", "abide", "speed", "geese", "these", "lever", "eerie", "elder"]
TINY = ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=64)


@pytest.mark.parametrize("spelled", [False, True])
def test_the_scale_multiplies_the_logits_of_the_same_model(spelled):
    tokenizer = word_tokenizer(WORDS)
    config = dataclasses.replace(TINY, spelled_embeddings=spelled)
    torch.manual_seed(0)
    plain = language_model_for(config, tokenizer)
    torch.manual_seed(0)
    scaled = language_model_for(dataclasses.replace(config, logit_scale=10.0), tokenizer)
    ids = torch.tensor([tokenizer.encode("crane") + tokenizer.encode("⬛🟨⬛⬛🟩")])
    assert isinstance(scaled.lm_head, ScaledOutput) and scaled.lm_head.scale.requires_grad
    torch.testing.assert_close(scaled(input_ids=ids).logits, 10.0 * plain(input_ids=ids).logits)


def test_a_checkpoint_start_refuses_a_new_scale(tmp_path):
    lm = build_language_model(TINY, 10, pad_id=0)
    lm.save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="logit_scale starts a model from random weights"):
        build_language_model(ModelConfig(checkpoint=str(tmp_path), logit_scale=10.0), 10, pad_id=0)


def test_bc_with_a_logit_scale_learns_it_resumes_exactly_and_saves_a_plain_lm(tmp_path):
    from trainers.algorithms.bc import BCConfig

    dataset = build_dataset(wordle_like(48, seed=3), tmp_path / "data")
    word_tokenizer(WORDS).save(tmp_path / "words.json")

    def config(out: str, **kwargs) -> BCConfig:
        base = dict(dataset=dataset, out=str(tmp_path / out), model=dataclasses.replace(TINY, logit_scale=10.0),
                    tokenizer=f"file:{tmp_path / 'words.json'}", max_length=32, batch_size=8, lr=3e-3,
                    warmup_steps=0, log_every=1, checkpoint_every=1000, shuffle_buffer=64)
        return BCConfig(**{**base, **kwargs})

    train_straight_and_resumed("bc", config, tmp_path)
    loaded = load_agent_model(tmp_path / "resumed" / "checkpoint")
    assert float(loaded.lm.lm_head.scale) != 10.0  # the scale is trained
    assert loaded.lm.lm_head.inner.weight is loaded.lm.transformer.wte.weight  # still tied inside the model
    tokenizer = loaded.tokenizer
    ids = torch.tensor([[tokenizer.bos_id] + tokenizer.encode("crane") + tokenizer.encode("⬛🟨⬛⬛🟩")])
    plain = build_language_model(ModelConfig(checkpoint=str(tmp_path / "resumed" / "checkpoint" / "lm")),
                                 tokenizer.vocab_size, pad_id=tokenizer.pad_id)
    assert not isinstance(plain.lm_head, ScaledOutput) and plain.lm_head.weight is not plain.transformer.wte.weight
    torch.testing.assert_close(plain(input_ids=ids).logits, loaded.lm(input_ids=ids).logits, rtol=1e-5, atol=1e-5)
