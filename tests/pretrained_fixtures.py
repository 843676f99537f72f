"""Tiny pretrained causal LMs for tests, saved as Hugging Face saves one: a 1-layer GPT-2 or Llama (random
weights) and a small byte-level BPE tokenizer trained on Wordle's words and feedback squares, with GPT-2's
``<|endoftext|>`` as its only special token (bos, eos and unk at once, as GPT-2's); and three games played by a
checkpoint trained from one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

#: GPT-2's one special token.
ENDOFTEXT = "<|endoftext|>"
#: the words the tokenizer is trained on (``tests.toy_data.wordle_like``'s, and a few more).
WORDS = ("crane", "slate", "abide", "speed", "geese", "these", "lever", "eerie", "elder", "sassy", "essay")
SQUARES = ("⬛", "🟨", "🟩")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """A tiny GPT-2 and its BPE tokenizer in a temporary folder (``save_tiny_gpt2``), one per test module."""
    return save_tiny_gpt2(tmp_path_factory.mktemp("tiny_gpt2"))


@pytest.fixture(scope="module")
def tok(tiny) -> Any:
    """``tiny``'s tokenizer as the task's token view (a ``PretrainedTokenizer``)."""
    from trainers.core.pretrained import pretrained_tokenizer

    return pretrained_tokenizer(str(tiny))


def save_bpe_tokenizer(folder: str | os.PathLike) -> tuple[Path, int, int]:
    """Writes the small byte-level BPE tokenizer into ``folder`` (``save_pretrained``); returns ``(folder, its
    vocabulary size, the id of <|endoftext|>)``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    folder = Path(folder)
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=[ENDOFTEXT], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    corpus = [word for word in WORDS for _ in range(4)] + ["".join(SQUARES[(i + j) % 3] for j in range(5))
                                                           for i in range(3)]
    bpe.train_from_iterator(corpus, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token=ENDOFTEXT, eos_token=ENDOFTEXT,
                                        unk_token=ENDOFTEXT)
    tokenizer.save_pretrained(folder)
    return folder, bpe.get_vocab_size(), bpe.token_to_id(ENDOFTEXT)


def save_tiny_gpt2(folder: str | os.PathLike, n_embd: int = 32, n_positions: int = 128, seed: int = 0) -> Path:
    """Writes a 1-layer GPT-2 and its BPE tokenizer into ``folder`` (``save_pretrained``) and returns it."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    folder, vocab_size, eot = save_bpe_tokenizer(folder)
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=vocab_size, n_positions=n_positions, n_embd=n_embd, n_layer=1, n_head=2,
                        bos_token_id=eot, eos_token_id=eot, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


def save_tiny_llama(folder: str | os.PathLike, hidden_size: int = 24, seed: int = 0) -> Path:
    """Writes a 1-layer Llama (random weights; a family whose config has ``hidden_size`` and no ``n_embd``, and
    whose body is ``.model``, not ``.transformer``) with the same BPE tokenizer into ``folder``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    folder, vocab_size, eot = save_bpe_tokenizer(folder)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=hidden_size, intermediate_size=2 * hidden_size,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=128, bos_token_id=eot, eos_token_id=eot)
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


def play_three_games(checkpoint: Path, tmp_path: Path):
    """Three greedy games of the toy words (answers and guesses), played by the agent of ``checkpoint``."""
    from trainers.algorithms.registry import load_policy
    from trainers.evaluation.wordle import EvalConfig, evaluate

    words = tmp_path / "words.txt"
    words.write_text("\n".join(WORDS) + "\n")
    policy = load_policy(checkpoint, allowed_actions=list(WORDS), greedy=True)
    games = evaluate(policy, EvalConfig(games=3, answers=str(words), guesses=str(words)), progress=False)
    assert len(games.actions) == 3 and games.invalid == 0
    assert all(action in WORDS for game in games.actions for action in game)
    return games


def episodes(*games) -> Any:
    """Episodes of ``(observations, actions, rewards)``, each ended by a last step without an action (a
    ``transforms.token_layout.StepsBatch``)."""
    from transforms.token_layout import StepsBatch

    observation, action, reward, last, lengths = [], [], [], [], []
    for observations, actions, rewards in games:
        n = len(observations)
        observation += list(observations)
        action += list(actions) + [""]
        reward += list(rewards) + [0.0]
        last += [i == n - 1 for i in range(n)]
        lengths.append(n)
    return StepsBatch(observation, action, np.array(reward), np.array(last), np.array(last),
                      np.concatenate([[0], np.cumsum(lengths)]), np.array([b"e%d" % i for i in range(len(games))], object))


def text_judgements(n: int, seed: int) -> list:
    """``n`` judgements of two one-step Wordle clips each, the clip whose guess is the answer ("crane") preferred."""
    import random

    from rlds_lang.preferences.types import Clip, Judgement, Label

    rng = random.Random(seed)

    def clip(i: int, word: str) -> Clip:
        reward = 0.0 if word == "crane" else -1.0
        return Clip(f"e{seed}-{i}-{word}:0", f"e{seed}-{i}-{word}", 0, 1, [""], [word], [reward], [False])

    out = []
    for i in range(n):
        other = rng.choice([w for w in WORDS if w != "crane"])
        left, right = (clip(i, "crane"), clip(i, other)) if i % 2 else (clip(i, other), clip(i, "crane"))
        out.append(Judgement(left, right, Label.LEFT if i % 2 else Label.RIGHT, labeller="synthetic"))
    return out


def train_config(algorithm: str, dataset: str, out: Path, model_folder: Path, **kwargs):
    """``algorithm``'s config for a few small steps from ``model_folder`` (``kwargs`` override)."""
    from trainers.algorithms.registry import algorithm_by_name
    from trainers.core.model import ModelConfig

    base = dict(dataset=dataset, out=str(out), model=ModelConfig(pretrained=str(model_folder)), max_length=64,
                batch_size=4, lr=3e-3, warmup_steps=0, log_every=1, checkpoint_every=1000, shuffle_buffer=16, steps=3)
    return algorithm_by_name(algorithm).config_class(**{**base, **kwargs})
