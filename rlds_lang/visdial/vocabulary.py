"""The published bots' answer vocabulary: lower-case tokens, rare words as ``UNK``, the server's spacing.

The reference bots (visdial-rl) speak through a word vocabulary built by their preprocessing: questions
(with ``?``) and answers are split into word tokens (NLTK's Treebank-style ``word_tokenize``: punctuation
apart, contractions split as ``ca n't`` / ``do n't`` / ``it 's``), every token seen at least 5 times
(``-word_count_threshold``, default 5) becomes a word, and any other token is ``UNK``. Their server joins
a decoded answer with spaces and repairs a few spacings (``"' "`` and ``" '"`` to ``"'"``, ``ca n't`` /
``do n't`` / ``is n't`` to ``can't`` / ``don't`` / ``isn't``, ``" ?"`` to ``"?"``, ``" ,"`` to ``","``)
before returning it. ``AnswerVocabulary`` gives our retrieval answerer the same surface, so rewards that
look at answer text (the yes/no penalties) see what they would see from the published bots.

Our tokenizer is a regular expression, not NLTK: words, the Treebank contraction split and single
punctuation marks, which covers the short, lower-case VisDial answers (it does not reproduce NLTK's
handling of quotes, ellipses or abbreviations with periods).
"""

from __future__ import annotations

import collections
import re
from typing import Iterable, Sequence

UNK = "UNK"
#: the threshold of the reference preprocessing (visdial-rl ``data/prepro.py``).
PUBLISHED_MIN_COUNT = 5
_TOKEN = re.compile(r"\w+(?=n't\b)|n't\b|'\w+|\w+|[^\w\s]")
#: the spacing repairs the reference server applies to a decoded answer, in its order.
SPACING_REPAIRS = (("' ", "'"), (" '", "'"), ("ca n't", "can't"), (" ?", "?"), ("do n't", "don't"), (" ,", ","),
                   ("is n't", "isn't"))


def word_tokens(text: str) -> list[str]:
    """``text`` lower-cased and split into word tokens (``"can't see."`` -> ``["ca", "n't", "see", "."]``)."""
    return _TOKEN.findall(text.lower())


def join_tokens(tokens: Sequence[str]) -> str:
    """Tokens joined by spaces with the reference server's spacing repairs."""
    text = " ".join(tokens)
    for old, new in SPACING_REPAIRS:
        text = text.replace(old, new)
    return text


class AnswerVocabulary:
    """Words seen at least ``min_count`` times; ``normalize`` maps an answer onto them (see the module)."""

    def __init__(self, counts: collections.Counter, min_count: int = PUBLISHED_MIN_COUNT):
        if min_count < 1:
            raise ValueError(f"min_count must be at least 1, got {min_count}")
        self.min_count = int(min_count)
        self.words = frozenset(w for w, n in counts.items() if n >= min_count) | {UNK}

    @classmethod
    def from_texts(cls, questions: Iterable[str], answers: Iterable[str],
                   min_count: int = PUBLISHED_MIN_COUNT) -> "AnswerVocabulary":
        """Counts the tokens of ``questions`` (each with ``?`` appended, as the reference does) and ``answers``."""
        counts: collections.Counter = collections.Counter()
        for q in questions:
            counts.update(word_tokens(q if q.endswith("?") else q + "?"))
        for a in answers:
            counts.update(word_tokens(a))
        return cls(counts, min_count)

    def __contains__(self, word: str) -> bool:
        return word in self.words

    def __len__(self) -> int:
        return len(self.words)

    def normalize(self, answer: str) -> str:
        """``answer`` as the published bots would say it: lower-case tokens, ``UNK`` for rare ones, repaired spaces."""
        return join_tokens([t if t in self.words else UNK for t in word_tokens(answer)])


__all__ = ["AnswerVocabulary", "PUBLISHED_MIN_COUNT", "SPACING_REPAIRS", "UNK", "join_tokens", "word_tokens"]
