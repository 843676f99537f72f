"""A tiny pretrained causal LM for tests, saved as Hugging Face saves one: a 1-layer GPT-2 (random weights) and a
small byte-level BPE tokenizer trained on Wordle's words and feedback squares, with GPT-2's ``<|endoftext|>`` as its
only special token (bos, eos and unk at once, as GPT-2's)."""

from __future__ import annotations

import os
from pathlib import Path

#: GPT-2's one special token.
ENDOFTEXT = "<|endoftext|>"
#: the words the tokenizer is trained on (``tests.toy_data.wordle_like``'s, and a few more).
WORDS = ("crane", "slate", "abide", "speed", "geese", "these", "lever", "eerie", "elder", "sassy", "essay")
SQUARES = ("⬛", "🟨", "🟩")


def save_tiny_gpt2(folder: str | os.PathLike, n_embd: int = 32, n_positions: int = 128, seed: int = 0) -> Path:
    """Writes a 1-layer GPT-2 and its BPE tokenizer into ``folder`` (``save_pretrained``) and returns it."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

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
    torch.manual_seed(seed)
    eot = bpe.token_to_id(ENDOFTEXT)
    config = GPT2Config(vocab_size=bpe.get_vocab_size(), n_positions=n_positions, n_embd=n_embd, n_layer=1, n_head=2,
                        bos_token_id=eot, eos_token_id=eot, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    GPT2LMHeadModel(config).save_pretrained(folder)
    return folder
