"""Spelled embeddings (``ModelConfig.spelled_embeddings``): the table is a free table plus (place, character)
vectors, the output layer stays tied to it, learning about one word reaches the words that share its letters,
checkpoints resume exactly and their ``lm/`` is a plain GPT-2 with the same outputs."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from rlds_lang.tokenizers import token_spellings, word_tokenizer
from tests.resume_check import train_straight_and_resumed
from tests.toy_data import build_dataset, wordle_like
from trainers.algorithms.registry import load_agent_model, load_policy
from trainers.core.model import (
    ModelConfig,
    SpelledEmbedding,
    build_language_model,
    language_model_for,
    plain_language_model,
)

WORDS = ["crane", "crate", "lousy", "slate", "abide", "speed", "geese", "these", "lever", "eerie", "elder",
         "sassy", "essay"]
TINY = ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=64)


def spelled(config: ModelConfig = TINY, seed: int = 0):
    tokenizer = word_tokenizer(WORDS)
    torch.manual_seed(seed)
    return language_model_for(dataclasses.replace(config, spelled_embeddings=True), tokenizer), tokenizer


def test_at_initialisation_the_model_is_the_plain_one():
    lm, tokenizer = spelled()
    torch.manual_seed(0)
    plain = language_model_for(TINY, tokenizer)
    ids = torch.tensor([tokenizer.encode("crane") + tokenizer.encode("⬛🟨⬛⬛🟩")])
    assert isinstance(lm.transformer.wte, SpelledEmbedding)
    torch.testing.assert_close(lm(input_ids=ids).logits, plain(input_ids=ids).logits)


def test_a_token_is_its_free_row_plus_its_letters_in_their_places():
    lm, tokenizer = spelled()
    table = lm.transformer.wte
    nn.init.normal_(table.letters)
    crane, = tokenizer.encode("crane")
    width = len(table.symbols)
    letters = sum(table.letters[place * width + table.symbols.index(char)] for place, char in enumerate("crane"))
    torch.testing.assert_close(table.weight[crane], table.free[crane] + letters)
    torch.testing.assert_close(table.weight[tokenizer.pad_id], table.free[tokenizer.pad_id])  # specials: not spelled
    hidden = torch.randn(2, table.weight.shape[1])
    torch.testing.assert_close(lm.lm_head(hidden), hidden @ table.weight.T)  # output tied to the spelled table
    assert token_spellings(tokenizer)[crane] == "crane"


def test_learning_one_word_raises_the_words_that_share_its_letters():
    """SGD towards ``crane`` lifts ``crate`` (4 letters in place shared) above ``lousy`` (none) far more with
    spelled embeddings than with the plain table, where the two move alike."""

    def gap_gain(lm, tokenizer) -> float:
        ids = torch.tensor([[tokenizer.bos_id]])
        crane, crate, lousy = (tokenizer.encode(w)[0] for w in ("crane", "crate", "lousy"))

        @torch.no_grad()
        def gap() -> float:
            logits = lm(input_ids=ids).logits[0, -1]
            return float(logits[crate] - logits[lousy])

        before = gap()
        optimiser = torch.optim.SGD(lm.parameters(), lr=0.1)
        for _ in range(20):
            loss = nn.functional.cross_entropy(lm(input_ids=ids).logits[0, -1:], torch.tensor([crane]))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        return gap() - before

    lm, tokenizer = spelled()
    torch.manual_seed(0)
    plain = language_model_for(TINY, tokenizer)
    spelled_gain, plain_gain = gap_gain(lm, tokenizer), gap_gain(plain, tokenizer)
    assert spelled_gain > 0.5 and spelled_gain > 3 * abs(plain_gain), (spelled_gain, plain_gain)


def test_the_plain_copy_computes_the_same_logits_and_saves_as_gpt2(tmp_path):
    lm, tokenizer = spelled()
    nn.init.normal_(lm.transformer.wte.letters, std=0.1)
    ids = torch.tensor([tokenizer.encode("slate") + tokenizer.encode("🟩🟩⬛⬛🟨")])
    plain = plain_language_model(lm)
    assert type(plain.transformer.wte) is nn.Embedding
    torch.testing.assert_close(plain(input_ids=ids).logits, lm(input_ids=ids).logits)
    plain.save_pretrained(tmp_path / "lm")
    again = build_language_model(ModelConfig(checkpoint=str(tmp_path / "lm")), tokenizer.vocab_size, pad_id=0)
    torch.testing.assert_close(again(input_ids=ids).logits, lm(input_ids=ids).logits)


def test_spelled_embeddings_need_the_spellings():
    with pytest.raises(ValueError, match="spellings"):
        build_language_model(dataclasses.replace(TINY, spelled_embeddings=True), 10, pad_id=0)
    with pytest.raises(ValueError, match="3 spellings for 4 token ids"):
        SpelledEmbedding(nn.Embedding(4, 2), ["", "a", "b"])


@pytest.fixture(scope="module")
def word_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("spelled")
    dataset = build_dataset(wordle_like(48, seed=3), root / "data")
    tokenizer_file = root / "words.json"
    word_tokenizer(WORDS).save(tokenizer_file)

    def config(out: str, **kwargs):
        from trainers.algorithms.bc import BCConfig

        base = dict(dataset=dataset, out=str(root / out), model=dataclasses.replace(TINY, spelled_embeddings=True),
                    tokenizer=f"file:{tokenizer_file}", max_length=32, batch_size=8, lr=3e-3, warmup_steps=0,
                    log_every=1, checkpoint_every=1000, shuffle_buffer=64)
        return BCConfig(**{**base, **kwargs})

    return root, config


def test_bc_with_spelled_embeddings_trains_resumes_exactly_and_saves_a_plain_lm(word_run):
    root, config = word_run
    train_straight_and_resumed("bc", config, root)
    loaded = load_agent_model(root / "resumed" / "checkpoint")
    state = loaded.model.state_dict()
    assert isinstance(loaded.lm.transformer.wte, SpelledEmbedding) and state["lm.transformer.wte.letters"].abs().sum() > 0
    for key, value in load_agent_model(root / "straight" / "checkpoint").model.state_dict().items():
        torch.testing.assert_close(state[key], value, rtol=1e-5, atol=1e-7, msg=key)
    tokenizer = loaded.tokenizer
    ids = torch.tensor([[tokenizer.bos_id] + tokenizer.encode("crane") + tokenizer.encode("⬛🟨⬛⬛🟩")])
    plain = build_language_model(ModelConfig(checkpoint=str(root / "resumed" / "checkpoint" / "lm")),
                                 tokenizer.vocab_size, pad_id=tokenizer.pad_id)
    torch.testing.assert_close(plain(input_ids=ids).logits, loaded.lm(input_ids=ids).logits, rtol=1e-5, atol=1e-5)
    agent = load_policy(root / "resumed" / "checkpoint", allowed_actions=WORDS, seed=1)  # it plays, words only
    agent.reset(1)
    assert agent.act([""], []) in WORDS and agent.act(["", "⬛⬛⬛⬛⬛"], ["lousy"]) in WORDS
