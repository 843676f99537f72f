"""Tokenizers for language tasks: a character-level one (Wordle's letters and colour squares).

The datasets stay tokenizer-independent (docs/architecture.md): a token view is derived by ``transforms/``
from the stored text with a tokenizer from this module, and the same tokenizer is saved beside a
trained model (``save``/``load``, JSON) so that the agent reads and writes the same ids when it plays.

A tokenizer may also write an observation together with the action before it (``tf_encode_observations``,
as ``rlds_lang.wordle.board_tokenizer`` does); ``transforms.token_mdp`` then uses that, and its
``encode_prompt`` does the same for agents.

Every id of ``CharTokenizer`` maps to exactly one character or one special token, so text made of the alphabet's
characters comes back byte-for-byte: ``decode(encode(text)) == text``. No TensorFlow at import time:
``tf_encode`` (the vectorised twin of ``encode`` used inside ``tf.data`` pipelines) imports it lazily.

Example::

    from rlds_lang.tokenizers import wordle_tokenizer

    tok = wordle_tokenizer()
    ids = tok.encode("crane")
    assert tok.decode(ids) == "crane"
    prompt = tok.encode_prompt(["", "⬛🟨⬛⬛🟩"], ["crane"])   # the context from which the agent guesses again
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Sequence

from rlds_lang.char_tokenizer import (WORDLE_LETTERS, WORDLE_SQUARES, CharTokenizer, read_json_object)

if TYPE_CHECKING:  # pragma: no cover - type hints only
    pass


def wordle_tokenizer() -> CharTokenizer:
    """The Wordle tokenizer: the 26 lowercase letters and the six feedback squares (38 ids with the specials).

    >>> tok = wordle_tokenizer()
    >>> tok.vocab_size, tok.decode(tok.encode("🟩⬛crane"))
    (38, '🟩⬛crane')
    """
    return CharTokenizer(WORDLE_LETTERS + WORDLE_SQUARES, name="wordle")


def continuation_tokenizer() -> CharTokenizer:
    """The continuation task's tokenizer (``rlds_lang.continuation.corpus.continuation_tokenizer``)."""
    from rlds_lang.continuation.corpus import continuation_tokenizer as make

    return make()


def word_tokenizer(words: Sequence[str], name: str = "words") -> Any:
    """Word-as-token Wordle: a ``rlds_lang.subword.SubwordTokenizer`` whose merges make every word of ``words``
    and every feedback pattern of squares (3^5 of them) a single id, so a guess is one action token and a
    feedback one observation token (the alternative to letter-as-token in LMRL-Gym's Wordle setting).

    Byte-level BPE trained until no merge is left, so any other text still encodes (in several ids) and
    decodes byte for byte. Raises ``ValueError`` naming a word that did not become one id.

    >>> tok = word_tokenizer(["crane", "slate"])
    >>> len(tok.encode("crane")), len(tok.encode("⬛🟨⬛⬛🟩")), tok.decode(tok.encode("slate🟩"))
    (1, 1, 'slate🟩')
    """
    from itertools import product

    from rlds_lang.subword import SubwordTokenizer
    from rlds_lang.wordle.game import SQUARES, WORD_LENGTH

    patterns = ["".join(p) for p in product(sorted(SQUARES.values()), repeat=WORD_LENGTH)]
    units = sorted(set(words)) + patterns
    # every unit needs at most (bytes - 1) merges; this bound is never reached (training stops when none is left)
    bound = len(SubwordTokenizer.SPECIALS) + 256 + sum(len(u.encode()) for u in units)
    tok = SubwordTokenizer.train([u for u in units for _ in range(2)], vocab_size=bound, name=name)
    split = [u for u in units if len(tok.encode(u)) != 1]
    if split:
        raise ValueError(f"word_tokenizer {name!r}: {len(split)} words or patterns are not one id, e.g. {split[:3]}")
    return tok


def lmrl_gym_word_tokenizer() -> Any:
    """``word_tokenizer`` of LMRL-Gym's 431-word list (``rlds_lang.wordle.words.lmrl_gym_words``)."""
    from rlds_lang.wordle.words import lmrl_gym_words

    return word_tokenizer(lmrl_gym_words().words, name="lmrl_gym_words")


def token_spellings(tokenizer: Any) -> list[str]:
    """The text of every id of ``tokenizer`` (``""`` for the specials): what a model with spelled embeddings
    (``trainers.core.model.SpelledEmbedding``) spells each token with.

    >>> token_spellings(CharTokenizer("ab"))
    ['', '', '', '', '', '', 'a', 'b']
    """
    return [tokenizer.decode([token]) for token in range(tokenizer.vocab_size)]


def lmrl_gym_board_tokenizer() -> Any:
    """``rlds_lang.wordle.board_tokenizer.WordBoardTokenizer`` of LMRL-Gym's 431-word list: words as tokens,
    each feedback as the (letter, colour) cells of the guess it answers."""
    from rlds_lang.wordle.board_tokenizer import lmrl_gym_board_tokenizer as make

    return make()


def bytes_tokenizer() -> Any:
    """Any text as its UTF-8 bytes: a ``rlds_lang.subword.SubwordTokenizer`` with the 256 byte symbols and no merge
    (262 ids with the specials), so every text encodes and decodes byte for byte without training a tokenizer
    first (the one for a dataset of one's own environment; a trained subword tokenizer is shorter).

    >>> tok = bytes_tokenizer()
    >>> tok.vocab_size, len(tok.encode("é")), tok.decode(tok.encode("any text, é 😀"))
    (262, 2, 'any text, é 😀')
    """
    from rlds_lang.subword import SubwordTokenizer

    return SubwordTokenizer.train([], vocab_size=len(SubwordTokenizer.SPECIALS) + 256, name="bytes")


#: tokenizers by the name a training config gives (``TrainConfig.tokenizer``).
TOKENIZERS = {"wordle": wordle_tokenizer, "bytes": bytes_tokenizer, "continuation": continuation_tokenizer,
              "lmrl_gym_words": lmrl_gym_word_tokenizer, "lmrl_gym_board": lmrl_gym_board_tokenizer}


def make_tokenizer(name: str) -> Any:
    """The tokenizer registered as ``name``, the one saved at ``PATH`` for ``file:PATH`` (``load_tokenizer``,
    e.g. a subword tokenizer trained on a dataset), or for ``words_board:LIST`` the ``WordBoardTokenizer`` of a
    named Wordle word list (words as tokens, feedback as cells); the error lists the known names.

    >>> make_tokenizer("wordle").vocab_size
    38
    """
    if name.startswith("file:"):
        return load_tokenizer(name[len("file:"):])
    if name.startswith("words_board:"):
        from rlds_lang.wordle.board_tokenizer import word_board_tokenizer

        return word_board_tokenizer(name[len("words_board:"):])
    if name not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer {name!r}; known: {sorted(TOKENIZERS)}, file:PATH of a saved tokenizer "
                         f"or words_board:LIST of a Wordle word list")
    return TOKENIZERS[name]()


def load_tokenizer(path: str | os.PathLike) -> Any:
    """The tokenizer saved at ``path``: a ``CharTokenizer``, a ``rlds_lang.subword.SubwordTokenizer``, a
    ``rlds_lang.wordle.board_tokenizer.WordBoardTokenizer`` or a pretrained model's
    (``rlds_lang.pretrained_tokenizer.PretrainedTokenizer``) by its ``format`` field; errors name the file."""
    description = read_json_object(path)
    if description.get("format") == "rlds_lang.PretrainedTokenizer":
        from rlds_lang.pretrained_tokenizer import PretrainedTokenizer

        return PretrainedTokenizer.load(path)
    if description.get("format") == "rlds_lang.SubwordTokenizer":
        from rlds_lang.subword import SubwordTokenizer

        return SubwordTokenizer.load(path)
    if description.get("format") == "rlds_lang.WordBoardTokenizer":
        from rlds_lang.wordle.board_tokenizer import WordBoardTokenizer

        return WordBoardTokenizer.load(path)
    return CharTokenizer.load(path)


