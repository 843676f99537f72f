"""What a Wordle policy knows of a game: the word lists' derived tables, and the game seen from its observations.

``WordleKnowledge`` holds a (guesses, answers, rule) triple and its feedback tables, shared by every
policy of a process; ``GameView.from_history`` turns ``(observations, actions)`` into the feedback
history and the answers still consistent with it. ``rlds_lang.wordle.policies`` builds the policies on
these.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from rlds_lang.env import Observation
from rlds_lang.wordle import game
from rlds_lang.wordle.engine import FeedbackMatrix, encode_words, letter_counts, pattern_block
from rlds_lang.wordle.words import WORD_LENGTH, WordList, resolve_word_list

_POW3 = 3 ** np.arange(WORD_LENGTH, dtype=np.int64)


@dataclasses.dataclass
class _Tables:
    """Derived read-only tables of one (guesses, answers, rule) triple, shared by all policies."""

    matrix: FeedbackMatrix
    answer_rows: np.ndarray  # guess-list index of every answer
    patterns_t: np.ndarray  # (n_answers, n_guesses) C-contiguous transpose of the matrix
    guess_codes: np.ndarray  # encoded guess list (n_guesses, 5)
    guess_counts: np.ndarray  # letter counts of the guess list (n_guesses, 26)


_TABLES: dict[str, _Tables] = {}


def _tables(guesses: WordList, answers: WordList, rule: game.Rule) -> _Tables:
    key = FeedbackMatrix.key(guesses, answers, rule)
    if key not in _TABLES:
        matrix = FeedbackMatrix.build(guesses, answers, rule)
        missing = [w for w in answers.words if w not in guesses]
        if missing:
            raise ValueError(f"guess list {guesses.name!r} lacks {len(missing)} answers, e.g. {missing[:3]}")
        rows = np.fromiter((guesses.index(w) for w in answers.words), dtype=np.int64, count=len(answers))
        codes = encode_words(guesses.words)
        _TABLES[key] = _Tables(matrix, rows, np.ascontiguousarray(matrix.patterns.T), codes, letter_counts(codes))
    return _TABLES[key]


def feedback_pattern_id(feedback: Any) -> int:
    """The pattern id of an observation's ``feedback`` array (five colours 0/1/2)."""
    fb = np.asarray(feedback, dtype=np.int64).reshape(-1)
    if fb.shape != (WORD_LENGTH,) or fb.min() < 0 or fb.max() > 2:
        raise ValueError(f"feedback {fb.tolist()} is not five colours in 0..2")
    return int(fb @ _POW3)


def feedback_history(observations: Sequence[Observation], actions: Sequence[str]) -> list[tuple[str, int]]:
    """``[(guess, pattern id), ...]``: guess ``actions[t]`` got the feedback of ``observations[t + 1]``."""
    if len(observations) != len(actions) + 1:
        raise ValueError(f"expected one more observation than actions, got {len(observations)} and {len(actions)}")
    return [(str(a), feedback_pattern_id(observations[t + 1]["feedback"])) for t, a in enumerate(actions)]


class WordleKnowledge:
    """The word lists and rule a policy plays with, and the feedback matrix computations on them.

    Args:
      answers: answer list (``WordList``, default name or path); must match the environment's.
      guesses: guess list; must contain every answer.
      rule: colouring rule (``official`` or ``ilql``); must match the environment's.
    """

    def __init__(self, answers: WordList | str = "official_answers", guesses: WordList | str = "official_guesses",
                 rule: game.Rule | str = game.Rule.OFFICIAL):
        self._answers_spec = answers if isinstance(answers, str) else answers.name
        self._guesses_spec = guesses if isinstance(guesses, str) else guesses.name
        self.answers = resolve_word_list(answers)
        self.guesses = resolve_word_list(guesses)
        self.rule = game.as_rule(rule)

    def params(self) -> dict[str, Any]:
        """The lists (by name or path) and rule."""
        return {"answers": self._answers_spec, "guesses": self._guesses_spec, "rule": self.rule.value}

    @property
    def tables(self) -> _Tables:
        """Matrix and derived tables (loaded on first use, shared across policies in the process)."""
        return _tables(self.guesses, self.answers, self.rule)

    def guess_row(self, guess: str) -> np.ndarray:
        """Pattern ids of ``guess`` against every answer (computed on the fly for off-list words)."""
        if guess in self.guesses:
            return self.tables.matrix.patterns[self.guesses.index(guess)]
        return pattern_block(encode_words([guess]), encode_words(self.answers.words), self.rule)[0]

    def consistent(self, history: Sequence[tuple[str, int]]) -> np.ndarray:
        """Indices (into ``answers``) of the answers that produce every (guess, pattern id) of ``history``."""
        idx = np.arange(len(self.answers))
        for guess, pid in history:
            idx = idx[self.guess_row(guess)[idx] == pid]
        return idx

    def consistent_guess_mask(self, history: Sequence[tuple[str, int]]) -> np.ndarray:
        """Boolean mask over the *guess* list: which words would have produced every feedback seen."""
        t = self.tables
        mask = np.ones(len(self.guesses), dtype=bool)
        if not history:
            return mask
        codes = encode_words([g for g, _ in history])
        block = pattern_block(codes, t.guess_codes, self.rule, t.guess_counts)  # (len(history), n_guesses)
        pids = np.array([p for _, p in history], dtype=np.uint8)
        return (block == pids[:, None]).all(axis=0)

    def pattern(self, guess: str, answer: str) -> tuple[int, ...]:
        """The colours of ``guess`` against ``answer``."""
        if guess in self.guesses and answer in self.answers:
            return game.pattern_from_id(int(self.tables.matrix.patterns[self.guesses.index(guess), self.answers.index(answer)]))
        return game.colour(guess, answer, self.rule)


@dataclasses.dataclass
class GameView:
    """What a policy knows about the current game.

    Attributes:
      history: ``(guess, pattern id)`` per guess made.
      candidates: indices into the answer list of the answers consistent with ``history``.
    """

    history: list[tuple[str, int]]
    candidates: np.ndarray

    @classmethod
    def from_history(cls, knowledge: WordleKnowledge, observations: Sequence[Observation],
                     actions: Sequence[str]) -> "GameView":
        """Reconstructs the view from observations and the policy's own actions only."""
        history = feedback_history(observations, actions)
        candidates = knowledge.consistent(history)
        if len(candidates) == 0:
            raise ValueError(
                f"no answer in {knowledge.answers.name!r} fits the feedback {history} under rule "
                f"{knowledge.rule.value!r}: the policy's lists or rule differ from the environment's")
        return cls(history, candidates)

    @property
    def turn(self) -> int:
        """Guesses made so far."""
        return len(self.history)


__all__ = ["GameView", "WordleKnowledge", "feedback_history", "feedback_pattern_id"]
