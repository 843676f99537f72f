"""Retrofitting words onto shared Wordle colour rows (the ILQL paper's human dataset), and recording them.

``RetrofitIndex`` is the retrofit structure, built from the vectorised ``FeedbackMatrix`` (no pairwise
Python loops): for each answer, the guess indices grouped by the colour pattern they produce against it
(one stable argsort of the transposed matrix, CSR-style, with per-answer offsets from one ``bincount``).
``candidates(answer, pattern)`` is then a slice.

``retrofit(index, pattern_ids, seed, answer=None)`` picks, for each row, a guess producing that row's
pattern (uniform, seeded). With ``answer`` (``true_word`` mode: the day's answer from a day -> answer
table) the rows are fitted against it; without (``any_answer`` mode) an answer is drawn uniformly among
those for which every row has a candidate. The all-green row always retrofits to the answer itself.
Failures come back as ``tweets.Rejected`` values and are counted, never hidden.

``loggers.wordle_recipes.record_retrofits`` plays retrofitted games in a real ``WordleEnv`` through ``loggers.record`` (answer
set with ``set_next_answer``, guesses replayed by ``RetrofitReplayPolicy``), so rewards and observations
follow the environment's rules exactly as for a played game, with ``TWEET_METADATA`` added to the episode
metadata. Each game's seed is derived from the config seed and the tweet id, so a game retrofits the same
way whatever its position in the file or shard. No TensorFlow here.

Example::

    >>> from rlds_lang.wordle.game import WIN_PATTERN_ID, pattern_id
    >>> from rlds_lang.wordle.words import word_list_from
    >>> words = word_list_from(["crane", "slate", "abide", "speed"], "tiny")
    >>> index = RetrofitIndex.build(words, words)
    >>> fit = retrofit(index, [pattern_id((0, 0, 1, 0, 1)), WIN_PATTERN_ID], seed=7, answer="abide")
    >>> fit.answer, fit.guesses
    ('abide', ('speed', 'abide'))
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import hashlib
import os
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from rlds_lang.env import Observation
from rlds_lang.input_errors import input_error, read_lines
from rlds_lang.wordle.engine import FeedbackMatrix
from rlds_lang.wordle.game import NUM_PATTERNS, Rule
from rlds_lang.wordle.tweets import Reason, Rejected, TweetGame
from rlds_lang.wordle.words import WordList, resolve_word_list

#: episode metadata of tweet games beside ``WORDLE_SCHEMA``'s (name -> spec), like ``BRANCH_METADATA``.
TWEET_METADATA: dict[str, Any] = {
    "tweet_id": str,
    "tweet_date": str,
    "wordle_day": np.int32,
    "claimed_result": str,      # "3/6" or "X/6", as tweeted
    "hard_mode": np.bool_,      # the tweet claimed hard mode (recorded only, not enforced)
    "retrofit_mode": str,       # "true_word" or "any_answer"
    "retrofit_seed": np.int64,  # the game's own seed (from the config seed and the tweet id)
}


class RetrofitMode(str, enum.Enum):
    """Against which answer rows are retrofitted (see the module docstring)."""

    TRUE_WORD = "true_word"
    ANY_ANSWER = "any_answer"


@dataclasses.dataclass(frozen=True)
class RetrofitIndex:
    """For each answer, every colour pattern mapped to the guesses that produce it (CSR layout).

    Attributes:
      matrix: the feedback matrix it was built from (its ``guesses``, ``answers`` and ``rule``).
      order: ``(answers, guesses)`` guess indices, grouped by pattern id within each answer's row.
      offsets: ``(answers, NUM_PATTERNS + 1)`` int32; answer ``a``'s guesses giving pattern ``p`` are
        ``order[a, offsets[a, p]:offsets[a, p + 1]]``.
      possible: ``(NUM_PATTERNS, answers)`` bool; whether some guess gives pattern ``p`` against answer ``a``.
    """

    matrix: FeedbackMatrix
    order: np.ndarray
    offsets: np.ndarray
    possible: np.ndarray

    @classmethod
    def from_matrix(cls, matrix: FeedbackMatrix) -> "RetrofitIndex":
        """Groups the matrix's guesses by pattern, per answer, with array operations only."""
        by_answer = np.ascontiguousarray(matrix.patterns.T)  # (answers, guesses), rows contiguous
        num_answers, num_guesses = by_answer.shape
        index_dtype = np.int16 if num_guesses < 2**15 else np.int32
        order = np.argsort(by_answer, axis=1, kind="stable").astype(index_dtype)
        flat = by_answer + (np.arange(num_answers, dtype=np.int64) * NUM_PATTERNS)[:, None]  # (answer, pattern) cells
        counts = np.bincount(flat.ravel(), minlength=num_answers * NUM_PATTERNS).reshape(num_answers, NUM_PATTERNS)
        offsets = np.zeros((num_answers, NUM_PATTERNS + 1), np.int32)
        np.cumsum(counts, axis=1, out=offsets[:, 1:])
        return cls(matrix, order, offsets, np.ascontiguousarray(counts.T > 0))

    @classmethod
    def build(cls, guesses: WordList | str = "official_guesses", answers: WordList | str = "official_answers",
              rule: Rule | str = Rule.OFFICIAL) -> "RetrofitIndex":
        """The structure for these lists and rule (the matrix comes from ``FeedbackMatrix.build``'s cache)."""
        return cls.from_matrix(FeedbackMatrix.build(resolve_word_list(guesses), resolve_word_list(answers), rule))

    @property
    def guesses(self) -> WordList:
        """The guess list."""
        return self.matrix.guesses

    @property
    def answers(self) -> WordList:
        """The answer list."""
        return self.matrix.answers

    def candidates(self, answer: int, pattern: int) -> np.ndarray:
        """Indices of the guesses that produce ``pattern`` against answer index ``answer``."""
        return self.order[answer, self.offsets[answer, pattern]:self.offsets[answer, pattern + 1]]

    def answers_fitting(self, patterns: Sequence[int]) -> np.ndarray:
        """Indices of the answers against which every pattern has at least one guess."""
        return np.flatnonzero(self.possible[np.asarray(patterns, np.intp)].all(axis=0))


@dataclasses.dataclass(frozen=True)
class Retrofit:
    """Words fitted onto colour rows: the answer and one guess per row."""

    answer: str
    guesses: tuple[str, ...]


def game_seed(seed: int, key: str) -> int:
    """A 63-bit seed for one game from the config ``seed`` and a stable key (the tweet id)."""
    digest = hashlib.blake2b(f"{int(seed)}:{key}".encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def retrofit(index: RetrofitIndex, pattern_ids: Sequence[int], seed: int, answer: str | None = None) -> Retrofit | Rejected:
    """Fits one guess onto each pattern (see the module docstring); ``Rejected`` when impossible."""
    rng = np.random.default_rng(seed)
    p = np.asarray(pattern_ids, np.intp)
    if answer is None:
        fitting = index.answers_fitting(p)
        if len(fitting) == 0:
            return Rejected(Reason.NO_CONSISTENT_ANSWER, "no answer gives every row a guess")
        a = int(fitting[rng.integers(len(fitting))])
    elif answer not in index.answers:
        return Rejected(Reason.ANSWER_NOT_IN_LIST, f"{answer!r} is not in {index.answers.name!r}")
    else:
        a = index.answers.index(answer)
    start, stop = index.offsets[a, p], index.offsets[a, p + 1]
    if np.any(stop == start):
        row = int(np.argmax(stop == start))
        return Rejected(Reason.NO_GUESS_FOR_ROW, f"no guess gives row {row + 1} against {index.answers.words[a]!r}")
    picks = index.order[a, start + (rng.random(len(p)) * (stop - start)).astype(np.intp)]
    words = index.guesses.words
    return Retrofit(index.answers.words[a], tuple(words[g] for g in picks))


class AnswerTableError(ValueError):
    """A ``day,answer`` table cannot be read; the message names the file and line."""


def load_answer_table(path: str | os.PathLike) -> dict[int, str]:
    """Reads a ``day,answer`` table (CSV or TSV, optional ``day,answer`` header, ``#`` comments).

    Errors (``AnswerTableError``) name the file and line: a missing, empty or non-UTF-8 file, a bad day
    number, an answer that is not five letters a-z, or a day listed twice. A byte-order mark is dropped.
    """
    path = os.fspath(path)
    table: dict[int, str] = {}
    for lineno, raw in read_lines(path, AnswerTableError, "answer table"):
        line = raw.strip()
        if not line or line.startswith("#") or (lineno == 1 and line.lower().replace("\t", ",") == "day,answer"):
            continue
        parts = [x.strip() for x in line.replace("\t", ",").split(",")]
        if len(parts) != 2 or not parts[0].isdigit() or len(parts[0]) > 9:
            raise input_error(AnswerTableError, path, "expected 'day,answer'", line=lineno, value=line)
        day, word = int(parts[0]), parts[1].lower()
        if len(word) != 5 or not word.isascii() or not word.isalpha():
            raise input_error(AnswerTableError, path, "answer is not five letters a-z", line=lineno, field="answer",
                              value=parts[1])
        if day in table:
            raise input_error(AnswerTableError, path, f"day {day} listed twice", line=lineno)
        table[day] = word
    if not table:
        raise input_error(AnswerTableError, path, "no 'day,answer' line")
    return table


@dataclasses.dataclass(frozen=True)
class RetrofittedGame:
    """A tweet's game with its fitted words and the metadata its episode will carry."""

    tweet: TweetGame
    fit: Retrofit
    mode: RetrofitMode
    seed: int

    def tags(self) -> dict[str, Any]:
        """The ``TWEET_METADATA`` values of this game."""
        game = self.tweet.game
        return {"tweet_id": self.tweet.tweet_id, "tweet_date": self.tweet.tweet_date, "wordle_day": np.int32(game.day),
                "claimed_result": game.claimed_result, "hard_mode": np.bool_(game.hard_mode),
                "retrofit_mode": self.mode.value, "retrofit_seed": np.int64(self.seed)}


def retrofit_tweets(tweets: Iterable[TweetGame], index: RetrofitIndex, seed: int, rejections: collections.Counter,
                    answer_table: Mapping[int, str] | None = None) -> Iterator[RetrofittedGame]:
    """Retrofits every tweet game: against the day's answer when ``answer_table`` is given (``true_word``),
    else against any fitting answer; failures are added to ``rejections`` by reason."""
    mode = RetrofitMode.ANY_ANSWER if answer_table is None else RetrofitMode.TRUE_WORD
    for tweet in tweets:
        answer = None
        if answer_table is not None:
            answer = answer_table.get(tweet.game.day)
            if answer is None:
                rejections[Reason.DAY_NOT_IN_TABLE.value] += 1
                continue
        s = game_seed(seed, tweet.tweet_id)
        fit = retrofit(index, tweet.game.pattern_ids, s, answer)
        if isinstance(fit, Rejected):
            rejections[fit.reason.value] += 1
            continue
        yield RetrofittedGame(tweet, fit, mode, s)


class RetrofitReplayPolicy:
    """Plays the retrofitted guesses of the current game (set by ``loggers.wordle_recipes.RetrofitHook`` before each episode)."""

    name = "tweet_retrofit"

    def __init__(self, rule: str):
        self.rule = rule
        self.guesses: tuple[str, ...] = ()

    def reset(self, seed: int) -> None:
        """Nothing to reset: the hook sets the guesses."""

    def act(self, observations: Sequence[Observation], actions: Sequence[str]) -> str:
        """The next retrofitted guess."""
        return self.guesses[len(actions)]

    def params(self) -> Mapping[str, Any]:
        """The human source; the words themselves come from retrofit_mode/retrofit_seed in the metadata."""
        return {"source": "human game shared as a tweet, words retrofitted onto its colour rows", "rule": self.rule}


__all__ = ["AnswerTableError", "RetrofitIndex", "RetrofitMode", "RetrofitReplayPolicy", "Retrofit", "RetrofittedGame", "TWEET_METADATA",
           "game_seed", "load_answer_table", "retrofit", "retrofit_tweets"]
