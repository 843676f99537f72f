"""Vectorised Wordle feedback: the pattern id of every guess against every answer, as a uint8 matrix.

``FeedbackMatrix.build(guesses, answers, rule)`` computes ``M[g, a] = pattern_id(colour(guesses[g],
answers[a]))`` with numpy, a block of guesses at a time, and caches it on disk keyed by both lists'
hashes and the rule (``rlds_lang.paths.cache_dir()``: ``$RLDS_LANG_CACHE`` or the user cache directory). The policies, the environment in
``adversarial_resample`` mode and the tweet retrofits all read this matrix instead of looping in Python.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np

from rlds_lang.paths import cache_dir
from rlds_lang.wordle.game import NUM_PATTERNS, Rule, as_rule
from rlds_lang.wordle.words import WORD_LENGTH, WordList

_POW3 = (3 ** np.arange(WORD_LENGTH)).astype(np.uint8)


def encode_words(words: tuple[str, ...] | list[str]) -> np.ndarray:
    """Words as an ``(n, 5)`` uint8 array of letter codes 0..25."""
    raw = np.frombuffer("".join(words).encode("ascii"), dtype=np.uint8).reshape(len(words), WORD_LENGTH)
    return raw - ord("a")


def letter_counts(encoded: np.ndarray) -> np.ndarray:
    """Per-word letter counts of encoded words: ``(n, 26)`` uint8."""
    counts = np.zeros((encoded.shape[0], 26), dtype=np.uint8)
    for k in range(WORD_LENGTH):
        np.add.at(counts, (np.arange(encoded.shape[0]), encoded[:, k]), 1)
    return counts


def pattern_block(guesses: np.ndarray, answers: np.ndarray, rule: Rule | str = Rule.OFFICIAL,
                  answer_counts: np.ndarray | None = None) -> np.ndarray:
    """Pattern ids of encoded ``guesses`` ``(n, 5)`` against encoded ``answers`` ``(m, 5)``: ``(n, m)`` uint8.

    Works on ``(n, m)`` planes only: for guess position ``i`` with letter ``x``, the answer's copies of
    ``x`` (a gather from its letter counts), minus the greens on ``x``, minus the earlier non-green
    copies of ``x`` in the guess, decide yellow (official rule); any copy decides it (ilql rule).
    """
    rule = as_rule(rule)
    counts_t = (letter_counts(answers) if answer_counts is None else answer_counts).T  # (26, m)
    green = [guesses[:, k][:, None] == answers[:, k][None, :] for k in range(WORD_LENGTH)]  # 5 x (n, m)
    out = np.zeros((guesses.shape[0], answers.shape[0]), dtype=np.uint8)
    for i in range(WORD_LENGTH):
        in_answer = counts_t[guesses[:, i]]  # (n, m) copies of guess letter i in each answer
        if rule is Rule.ILQL:
            yellow = ~green[i] & (in_answer > 0)
        else:
            budget = in_answer.copy()
            for k in range(WORD_LENGTH):
                same = (guesses[:, k] == guesses[:, i])[:, None]
                if k == i:
                    continue
                # copies consumed by greens elsewhere, and by earlier non-green copies in the guess
                budget -= same & green[k]
                if k < i:
                    budget -= same & ~green[k]
            # budget may wrap below zero as uint8: compare in a signed view
            yellow = ~green[i] & (budget.view(np.int8) > 0)
        out += _POW3[i] * (2 * green[i].view(np.uint8) + yellow.view(np.uint8))
    return out


@dataclasses.dataclass(frozen=True)
class FeedbackMatrix:
    """Pattern ids of every guess against every answer, with the lists that index it.

    Attributes:
      guesses: the row words.
      answers: the column words.
      rule: the colouring rule the patterns follow.
      patterns: ``(len(guesses), len(answers))`` uint8 array of pattern ids.
    """

    guesses: WordList
    answers: WordList
    rule: Rule
    patterns: np.ndarray

    @classmethod
    def key(cls, guesses: WordList, answers: WordList, rule: Rule | str) -> str:
        """The cache key of a matrix: a hash of both lists' hashes and the rule."""
        text = f"{guesses.sha256}:{answers.sha256}:{as_rule(rule).value}:v1"
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    @classmethod
    def compute(cls, guesses: WordList, answers: WordList, rule: Rule | str = Rule.OFFICIAL, block: int = 512) -> "FeedbackMatrix":
        """Computes the matrix in memory (no cache)."""
        rule = as_rule(rule)
        g, a = encode_words(guesses.words), encode_words(answers.words)
        counts = letter_counts(a)
        patterns = np.empty((len(g), len(a)), dtype=np.uint8)
        for start in range(0, len(g), block):
            patterns[start : start + block] = pattern_block(g[start : start + block], a, rule, counts)
        return cls(guesses, answers, rule, patterns)

    @classmethod
    def build(cls, guesses: WordList, answers: WordList, rule: Rule | str = Rule.OFFICIAL, use_cache: bool = True) -> "FeedbackMatrix":
        """The matrix for these lists, loaded from the disk cache or computed and cached (atomically)."""
        rule = as_rule(rule)
        memo_key = cls.key(guesses, answers, rule)
        if memo_key in _MEMO:
            return _MEMO[memo_key]
        path = cache_dir() / f"feedback_{memo_key}.npy"
        matrix = None
        if use_cache and path.exists():
            try:
                patterns = np.load(path)
                if patterns.shape == (len(guesses), len(answers)) and patterns.dtype == np.uint8:
                    matrix = cls(guesses, answers, rule, patterns)
            except (OSError, ValueError):
                matrix = None  # a torn or foreign file: recompute and overwrite
        if matrix is None:
            matrix = cls.compute(guesses, answers, rule)
            if use_cache:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npy.tmp")
                with os.fdopen(fd, "wb") as f:
                    np.save(f, matrix.patterns)
                os.replace(tmp, path)
        _MEMO[memo_key] = matrix
        return matrix

    def row(self, guess: str) -> np.ndarray:
        """Pattern ids of one guess against every answer."""
        return self.patterns[self.guesses.index(guess)]

    def consistent(self, history: list[tuple[str, int]], candidates: np.ndarray | None = None) -> np.ndarray:
        """Indices of answers (among ``candidates``, default all) that give every (guess, pattern id) seen."""
        idx = np.arange(len(self.answers)) if candidates is None else candidates
        for guess, pid in history:
            idx = idx[self.patterns[self.guesses.index(guess), idx] == pid]
        return idx


_MEMO: dict[str, FeedbackMatrix] = {}

assert NUM_PATTERNS <= 256  # patterns fit in uint8
