"""The rules of Wordle in scalar form: colouring, colour patterns, rendering and known-letter constraints.

A colour pattern is five colours ``0`` (grey/black), ``1`` (yellow), ``2`` (green), and is also encoded
as one integer ``sum(colour_i * 3**i)`` in ``[0, 243)`` (``pattern_id``).

Two colouring rules exist:

* ``official`` (the default) -- the real game: greens first, then each remaining guessed letter is
  yellow only while the answer still has an unmatched copy of it, scanning left to right. So ``speed``
  against ``abide`` is ⬛⬛🟨⬛🟨 and ``abbey`` against ``abide`` is 🟩🟩⬛🟨⬛.
* ``ilql`` -- the rule of the ILQL paper's code: every non-green guessed letter that occurs anywhere in
  the answer is yellow (``speed``/``abide`` is ⬛⬛🟨🟨🟨). Use it only to reproduce that paper.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
from typing import Iterable, Sequence

from rlds_lang.wordle.words import WORD_LENGTH

BLACK, YELLOW, GREEN = 0, 1, 2
NUM_PATTERNS = 3**WORD_LENGTH
WIN_PATTERN_ID = NUM_PATTERNS - 1  # all green
SQUARES = {BLACK: "⬛", YELLOW: "🟨", GREEN: "🟩"}
#: the square ``Constraints.marks`` gives a letter the board says nothing about.
UNKNOWN_SQUARE = "⬜"
LETTERS = {BLACK: "b", YELLOW: "y", GREEN: "g"}


class Rule(str, enum.Enum):
    """Which colouring rule the game uses (see the module docstring)."""

    OFFICIAL = "official"
    ILQL = "ilql"


def as_rule(rule: "Rule | str") -> Rule:
    """Normalises a rule name, with an error listing the valid names."""
    try:
        return Rule(rule)
    except ValueError:
        raise ValueError(f"unknown colouring rule {rule!r}; expected one of {[r.value for r in Rule]}") from None


def colour(guess: str, answer: str, rule: Rule | str = Rule.OFFICIAL) -> tuple[int, ...]:
    """The colour pattern of ``guess`` against ``answer`` under ``rule``, as five ints in {0, 1, 2}."""
    rule = as_rule(rule)
    if len(guess) != WORD_LENGTH or len(answer) != WORD_LENGTH:
        raise ValueError(f"guess {guess!r} and answer {answer!r} must both have {WORD_LENGTH} letters")
    result = [BLACK] * WORD_LENGTH
    for i, (g, a) in enumerate(zip(guess, answer)):
        if g == a:
            result[i] = GREEN
    if rule is Rule.ILQL:
        letters = set(answer)
        for i, g in enumerate(guess):
            if result[i] != GREEN and g in letters:
                result[i] = YELLOW
        return tuple(result)
    unmatched = collections.Counter(a for a, r in zip(answer, result) if r != GREEN)
    for i, g in enumerate(guess):
        if result[i] != GREEN and unmatched[g] > 0:
            result[i] = YELLOW
            unmatched[g] -= 1
    return tuple(result)


def pattern_id(pattern: Sequence[int]) -> int:
    """Encodes a five-colour pattern as an integer in ``[0, 243)`` (position 0 least significant)."""
    return sum(int(c) * 3**i for i, c in enumerate(pattern))


def pattern_from_id(pid: int) -> tuple[int, ...]:
    """Decodes ``pattern_id``."""
    if not 0 <= pid < NUM_PATTERNS:
        raise ValueError(f"pattern id {pid} is outside [0, {NUM_PATTERNS})")
    return tuple((pid // 3**i) % 3 for i in range(WORD_LENGTH))


def render(pattern: Sequence[int]) -> str:
    """The pattern as coloured squares, e.g. ``⬛⬛🟨⬛🟨``."""
    return "".join(SQUARES[int(c)] for c in pattern)


def parse_squares(text: str) -> tuple[int, ...]:
    """Inverse of ``render`` for the default square set."""
    inverse = {v: k for k, v in SQUARES.items()}
    try:
        pattern = tuple(inverse[ch] for ch in text)
    except KeyError as e:
        raise ValueError(f"{text!r} holds a character that is not a colour square: {e}") from None
    if len(pattern) != WORD_LENGTH:
        raise ValueError(f"{text!r} has {len(pattern)} squares, expected {WORD_LENGTH}")
    return pattern


@dataclasses.dataclass
class Constraints:
    """What a history of (guess, pattern) pairs says about the answer, under one colouring rule.

    Attributes:
      greens: position -> letter known to be there.
      not_at: position -> letters known not to be there.
      min_count: letter -> least number of copies in the answer.
      max_count: letter -> most number of copies (0 means the letter is absent).
    """

    rule: Rule = Rule.OFFICIAL
    greens: dict[int, str] = dataclasses.field(default_factory=dict)
    not_at: dict[int, set[str]] = dataclasses.field(default_factory=lambda: collections.defaultdict(set))
    min_count: dict[str, int] = dataclasses.field(default_factory=dict)
    max_count: dict[str, int] = dataclasses.field(default_factory=dict)

    def add(self, guess: str, pattern: Sequence[int]) -> None:
        """Adds what one coloured guess implies."""
        per_letter: dict[str, list[int]] = collections.defaultdict(list)
        for i, (g, c) in enumerate(zip(guess, pattern)):
            per_letter[g].append(int(c))
            if c == GREEN:
                self.greens[i] = g
            else:
                self.not_at[i].add(g)
        for letter, colours in per_letter.items():
            hits = sum(1 for c in colours if c != BLACK)
            if self.rule is Rule.ILQL:
                # Yellow/green only say the letter occurs; black says it does not occur at all, unless
                # the same letter is green elsewhere (then black never appears under this rule).
                if any(c == YELLOW for c in colours) or any(c == GREEN for c in colours):
                    self.min_count[letter] = max(self.min_count.get(letter, 0), 1)
                if any(c == BLACK for c in colours):
                    self.max_count[letter] = 0
                continue
            self.min_count[letter] = max(self.min_count.get(letter, 0), hits)
            if any(c == BLACK for c in colours):
                self.max_count[letter] = min(self.max_count.get(letter, WORD_LENGTH), hits)

    def allows(self, word: str) -> bool:
        """Whether ``word`` satisfies every constraint."""
        for i, letter in self.greens.items():
            if word[i] != letter:
                return False
        for i, letters in self.not_at.items():
            if word[i] in letters:
                return False
        counts = collections.Counter(word)
        for letter, n in self.min_count.items():
            if counts[letter] < n:
                return False
        for letter, n in self.max_count.items():
            if counts[letter] > n:
                return False
        return True

    def marks(self, word: str) -> str:
        """``word``'s letters as the board marks them, one square each: 🟩 the letter is known to be at this place,
        ⬛ the board rules it out here (another letter is known here, it was seen elsewhere but not here, or it is
        absent), 🟨 it is known to be in the answer and may be here, ⬜ nothing is known about it. A word with a
        ⬛ is not allowed (``allows``); one without may still miss a letter the answer needs or repeat one too often.

        >>> constraints_from_history([("crane", (0, 1, 0, 0, 2))]).marks("rinse")
        '🟨⬜⬛⬜🟩'
        """
        squares = []
        for i, letter in enumerate(word):
            if self.greens.get(i) == letter:
                squares.append(SQUARES[GREEN])
            elif i in self.greens or letter in self.not_at.get(i, ()) or self.max_count.get(letter) == 0:
                squares.append(SQUARES[BLACK])
            else:
                squares.append(SQUARES[YELLOW] if self.min_count.get(letter, 0) > 0 else UNKNOWN_SQUARE)
        return "".join(squares)

    def describe(self) -> str:
        """A one-line human summary, e.g. ``greens a____; absent: xyz; needs: e>=1``."""
        board = "".join(self.greens.get(i, "_") for i in range(WORD_LENGTH))
        absent = "".join(sorted(k for k, v in self.max_count.items() if v == 0))
        needs = ", ".join(f"{k}>={v}" for k, v in sorted(self.min_count.items()) if v > 0)
        return f"greens {board}; absent: {absent or '-'}; needs: {needs or '-'}"


def constraints_from_history(history: Iterable[tuple[str, Sequence[int]]], rule: Rule | str = Rule.OFFICIAL) -> Constraints:
    """The known-letter constraints implied by a history of coloured guesses."""
    cons = Constraints(rule=as_rule(rule))
    for guess, pattern in history:
        cons.add(guess, pattern)
    return cons


def filter_words(words: Iterable[str], history: Iterable[tuple[str, Sequence[int]]], rule: Rule | str = Rule.OFFICIAL) -> list[str]:
    """The words still allowed by the constraints of ``history``."""
    cons = constraints_from_history(history, rule)
    return [w for w in words if cons.allows(w)]
