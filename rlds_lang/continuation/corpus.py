"""The continuation task's corpus: sentences of Debian's BSD-licensed ``fortunes-min`` files (shipped in
``data/``, see its README and COPYRIGHT), each cut into a prompt (its first ``prompt_words`` words) and a
continuation (the following whole words, at most ``max_chars`` characters).

Text is normalised to the task's alphabet (``ALPHABET``: lowercase letters, space and ``.,!?'-``): lowercase,
other characters dropped, whitespace collapsed, attribution lines (``-- Author``) removed. Sentences are split
after ``.``, ``!`` or ``?``. The split of a sentence (``train`` / ``test``) is a stable hash of its text, so
adding files never moves a sentence between splits.

Example::

    from rlds_lang.continuation.corpus import corpus_examples

    train = corpus_examples("train")
    print(train[0].prompt, "|", train[0].continuation)
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.resources
import re
from importlib.resources.abc import Traversable
from typing import Sequence

from rlds_lang.char_tokenizer import CharTokenizer

#: the characters of the task (every corpus text is normalised to them).
ALPHABET = "abcdefghijklmnopqrstuvwxyz .,!?'-"
#: the shipped corpus files (``data/<name>``), fortunes separated by lines holding ``%``.
CORPUS_FILES = ("fortunes", "literature", "riddles")
#: the corpus folder, read through ``importlib.resources`` (package data of the installed package).
DATA_DIR = importlib.resources.files("rlds_lang.continuation") / "data"


@dataclasses.dataclass(frozen=True)
class Example:
    """One corpus sentence as a task example: the prompt shown and the corpus's own continuation."""

    prompt: str
    continuation: str
    split: str
    source: str


def continuation_tokenizer() -> CharTokenizer:
    """The character tokenizer of the task (``ALPHABET`` plus the specials)."""
    return CharTokenizer(ALPHABET, name="continuation")


def normalise(text: str) -> str:
    """``text`` lowercased, reduced to ``ALPHABET`` (other characters dropped), whitespace collapsed.

    >>> normalise("A horse!\\tA  HORSE!  My kingdom -- \\"for\\" a horse!")
    'a horse! a horse! my kingdom -- for a horse!'
    """
    lowered = re.sub(r"\s+", " ", text.lower())
    return re.sub(" +", " ", "".join(c for c in lowered if c in ALPHABET)).strip()


def read_fortunes(path: Traversable) -> list[str]:
    """The fortunes of a fortune file, attribution lines dropped; an unreadable file is an error naming it."""
    try:
        raw = path.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise FileNotFoundError(f"{path}: cannot read the continuation corpus ({error})") from None
    raw = re.sub(".\b", "", raw)  # overstriking (char, backspace) keeps the second character
    fortunes = []
    for block in re.split(r"^%\s*$", raw, flags=re.M):
        lines = [line for line in block.splitlines() if not line.strip().startswith("--")]
        if any(line.strip() for line in lines):
            fortunes.append(" ".join(lines))
    return fortunes


def sentences(text: str) -> list[str]:
    """The normalised sentences of ``text`` (split after ``.``, ``!``, ``?``).

    >>> sentences("Hello there.  How are you? Fine!")
    ['hello there.', 'how are you?', 'fine!']
    """
    return [s for s in (normalise(part) for part in re.split(r"(?<=[.!?])\s+", text)) if s]


def split_of(sentence: str, test_share: float = 0.2) -> str:
    """``test`` for a stable ``test_share`` of sentences (by hash), else ``train``."""
    unit = int(hashlib.sha256(sentence.encode("utf-8")).hexdigest()[:8], 16) / 16 ** 8
    return "test" if unit < test_share else "train"


def make_example(sentence: str, prompt_words: int, max_chars: int, source: str = "") -> Example | None:
    """The example of ``sentence``, or None when it has fewer than ``prompt_words + 1`` words or its first
    continuation word is longer than ``max_chars``."""
    words = sentence.split(" ")
    if len(words) <= prompt_words:
        return None
    kept: list[str] = []
    for word in words[prompt_words:]:
        if len(" ".join(kept + [word])) > max_chars:
            break
        kept.append(word)
    if not kept:
        return None
    return Example(" ".join(words[:prompt_words]), " ".join(kept), split_of(sentence), source)


def corpus_examples(split: str | None = None, prompt_words: int = 4, max_chars: int = 23,
                    files: Sequence[str] = CORPUS_FILES, data_dir: Traversable = DATA_DIR) -> list[Example]:
    """The examples of the shipped corpus (of ``split`` when given), in file order, duplicates dropped."""
    if split not in (None, "train", "test"):
        raise ValueError(f"split must be 'train', 'test' or None, got {split!r}")
    seen: set[str] = set()
    out: list[Example] = []
    for name in files:
        for fortune in read_fortunes(data_dir / name):
            for sentence in sentences(fortune):
                example = make_example(sentence, prompt_words, max_chars, name)
                if example is None or sentence in seen or (split and example.split != split):
                    continue
                seen.add(sentence)
                out.append(example)
    return out


__all__ = ["ALPHABET", "CORPUS_FILES", "DATA_DIR", "Example", "continuation_tokenizer", "normalise", "read_fortunes",
           "sentences", "split_of", "make_example", "corpus_examples"]
