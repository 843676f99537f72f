"""The Wordle environment: text guesses in, colour feedback out, with the ILQL paper's MDP semantics.

Reward is -1 for every guess that is not the answer and 0 for the winning guess; an episode ends on a
win or after ``max_guesses`` guesses. Hidden-word modes:

* ``fixed``: the ordinary game, one answer per episode (drawn from the answer list by the seed, or set
  with ``set_next_answer``).
* ``adversarial_resample``: the ILQL MDP -- after every guess the answer is redrawn uniformly from the
  answers still consistent with all feedback so far, so only the feedback history matters.

Observation: ``text`` (the last feedback as coloured squares, ``""`` before the first guess),
``feedback`` (int8[5], colours 0/1/2, all -1 before the first guess) and ``turn`` (guesses made).
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np
from dm_env import specs

from rlds_lang.env import InvalidActionError, LanguageEnv, Observation, text_spec
from rlds_lang.wordle import game
from rlds_lang.wordle.engine import FeedbackMatrix
from rlds_lang.wordle.words import WORD_LENGTH, WordList, resolve_word_list

MAX_GUESSES = 6


class HiddenWordMode(str, enum.Enum):
    """How the hidden word behaves during an episode (see the module docstring)."""

    FIXED = "fixed"
    ADVERSARIAL_RESAMPLE = "adversarial_resample"


class WordleEnv(LanguageEnv):
    """Wordle as a ``dm_env`` language environment.

    Args:
      answers: the answer list (a ``WordList``, a default name or a file path).
      guesses: the list of accepted guesses; it must contain every answer.
      rule: ``official`` or ``ilql`` colouring.
      mode: ``fixed`` or ``adversarial_resample``.
      enforce_guess_list: reject guesses outside ``guesses`` (otherwise any five letters a-z are taken).
      max_guesses: guesses allowed per episode.
      seed: seed of the hidden-word draws.
    """

    task_name = "wordle"

    def __init__(self, answers: WordList | str = "official_answers", guesses: WordList | str = "official_guesses",
                 rule: game.Rule | str = game.Rule.OFFICIAL, mode: HiddenWordMode | str = HiddenWordMode.FIXED,
                 enforce_guess_list: bool = True, max_guesses: int = MAX_GUESSES, seed: int = 0):
        super().__init__(seed)
        self.answers = resolve_word_list(answers)
        self.guesses = resolve_word_list(guesses)
        missing = [w for w in self.answers if w not in self.guesses]
        if missing:
            raise ValueError(f"guess list {self.guesses.name!r} lacks {len(missing)} answers, e.g. {missing[:3]}")
        self.rule = game.as_rule(rule)
        self.mode = HiddenWordMode(mode)
        self.enforce_guess_list = bool(enforce_guess_list)
        if max_guesses < 1:
            raise ValueError(f"max_guesses must be >= 1, got {max_guesses}")
        self.max_guesses = int(max_guesses)
        self._matrix: FeedbackMatrix | None = None
        self._next_answer: str | None = None
        self.answer = ""
        self.initial_answer = ""
        self.history: list[tuple[str, tuple[int, ...]]] = []
        self._candidates: np.ndarray | None = None

    @property
    def matrix(self) -> FeedbackMatrix:
        """The feedback matrix of guesses x answers under this env's rule (built on first use)."""
        if self._matrix is None:
            self._matrix = FeedbackMatrix.build(self.guesses, self.answers, self.rule)
        return self._matrix

    def set_next_answer(self, word: str) -> None:
        """Makes the next ``reset`` use ``word`` as the (initial) hidden word."""
        if word not in self.answers:
            raise ValueError(f"{word!r} is not in the answer list {self.answers.name!r}")
        self._next_answer = word

    def observation_spec(self) -> dict[str, specs.Array]:
        return {
            "text": text_spec("text"),
            "feedback": specs.BoundedArray((WORD_LENGTH,), np.int8, minimum=-1, maximum=2, name="feedback"),
            "turn": specs.BoundedArray((), np.int32, minimum=0, maximum=self.max_guesses, name="turn"),
        }

    def _observation(self) -> Observation:
        if self.history:
            pattern = self.history[-1][1]
            return {"text": game.render(pattern), "feedback": np.asarray(pattern, np.int8),
                    "turn": np.int32(len(self.history))}
        return {"text": "", "feedback": np.full((WORD_LENGTH,), -1, np.int8), "turn": np.int32(0)}

    def _reset(self) -> Observation:
        if self._next_answer is not None:
            self.answer, self._next_answer = self._next_answer, None
        else:
            self.answer = self.answers.words[int(self._rng.integers(len(self.answers)))]
        self.initial_answer = self.answer
        self.history = []
        self._candidates = None
        return self._observation()

    def validate_guess(self, guess: str) -> None:
        """Raises ``InvalidActionError`` naming the guess if the game cannot accept it."""
        if len(guess) != WORD_LENGTH or not guess.isascii() or not guess.isalpha() or not guess.islower():
            raise InvalidActionError(f"guess {guess!r} is not {WORD_LENGTH} lowercase ASCII letters")
        if self.enforce_guess_list and guess not in self.guesses:
            raise InvalidActionError(f"guess {guess!r} is not in the guess list {self.guesses.name!r}")

    def _step(self, action: str) -> tuple[Observation, float, bool]:
        self.validate_guess(action)
        pattern = game.colour(action, self.answer, self.rule)
        self.history.append((action, pattern))
        won = action == self.answer
        if self.mode is HiddenWordMode.ADVERSARIAL_RESAMPLE and not won:
            self._resample(action, pattern)
        done = won or len(self.history) >= self.max_guesses
        return self._observation(), (0.0 if won else -1.0), done

    def _resample(self, guess: str, pattern: tuple[int, ...]) -> None:
        """Redraws the answer among those consistent with the whole feedback history."""
        pid = game.pattern_id(pattern)
        if self._candidates is None:
            self._candidates = np.arange(len(self.answers))
        if guess in self.guesses:
            keep = self.matrix.patterns[self.guesses.index(guess), self._candidates] == pid
        else:
            keep = np.array([game.pattern_id(game.colour(guess, self.answers.words[i], self.rule)) == pid
                             for i in self._candidates], dtype=bool)
        self._candidates = self._candidates[keep]
        # The current answer produced the pattern, so the candidate set is never empty.
        self.answer = self.answers.words[int(self._rng.choice(self._candidates))]

    def episode_metadata(self) -> dict[str, Any]:
        return {
            "task": self.task_name,
            "answer": self.answer,
            "initial_answer": self.initial_answer,
            "mode": self.mode.value,
            "rule": self.rule.value,
            "answers_name": self.answers.name,
            "answers_sha256": self.answers.sha256,
            "guesses_name": self.guesses.name,
            "guesses_sha256": self.guesses.sha256,
            "max_guesses": np.int32(self.max_guesses),
        }
