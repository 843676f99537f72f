"""The character tokenizer every other tokenizer builds on, and the JSON form that each tokenizer saves
itself in: ``CharTokenizer`` (one token per character of its alphabet, plus the special tokens), the alphabets of
Wordle's letters and squares, ``ragged_positions`` (the token MDP's offsets into ragged tensors) and the helpers
that write and read a tokenizer's JSON description. ``rlds_lang.tokenizers`` is the registry on top."""

from __future__ import annotations
import json
import os
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence
if TYPE_CHECKING:  # pragma: no cover - type hints only
    import numpy as np
    import tensorflow as tf


#: The squares of Wordle feedback, one code point each (no variation selector U+FE0F): black, white,
#: yellow, green, and the high-contrast orange and blue.
WORDLE_SQUARES = "⬛⬜🟨🟩🟧🟦"


#: The letters a Wordle guess is made of.
WORDLE_LETTERS = "abcdefghijklmnopqrstuvwxyz"


_FORMAT = "rlds_lang.CharTokenizer"


_FORMAT_VERSION = 1


class CharTokenizer:
    """Character-level tokenizer: one id per character of ``alphabet``, plus special tokens.

    Ids ``0..5`` are the specials in ``SPECIALS`` order (``pad`` is never ``eos``); the alphabet's
    characters follow in the order given. ``eoo`` ends an observation and ``eoa`` an action in the
    episode layout of ``transforms.token_mdp`` (``[BOS] o_0 [EOO] a_0 [EOA] ... o_T [EOO] [EOS]``).

    >>> tok = CharTokenizer("ab")
    >>> tok.vocab_size, tok.encode("ba"), tok.decode([1, 7, 6, 2]), tok.decode([1, 7], skip_special=False)
    (8, [7, 6], 'ba', '<bos>b')
    """

    SPECIALS = ("<pad>", "<bos>", "<eos>", "<eoo>", "<eoa>", "<unk>")

    def __init__(self, alphabet: str, name: str = "chars"):
        if not isinstance(alphabet, str) or not alphabet:
            raise ValueError(f"CharTokenizer {name!r}: the alphabet must be a non-empty str, got {alphabet!r}")
        seen: dict[str, int] = {}
        for position, char in enumerate(alphabet):
            if char in seen:
                raise ValueError(f"CharTokenizer {name!r}: duplicate character {char!r} (U+{ord(char):04X}) "
                                 f"at positions {seen[char]} and {position} of the alphabet")
            seen[char] = position
        self.alphabet = alphabet
        self.name = name
        self.pad_id, self.bos_id, self.eos_id, self.eoo_id, self.eoa_id, self.unk_id = range(len(self.SPECIALS))
        self._first = len(self.SPECIALS)
        self.vocab_size = self._first + len(alphabet)
        self._ids = {char: self._first + i for i, char in enumerate(alphabet)}

    def __repr__(self) -> str:
        return f"CharTokenizer(alphabet={self.alphabet!r}, name={self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CharTokenizer) and (self.alphabet, self.name) == (other.alphabet, other.name)

    def __hash__(self) -> int:
        return hash((self.alphabet, self.name))

    def encode(self, text: str, strict: bool = True) -> list[int]:
        """The ids of ``text``'s characters (no specials added).

        With ``strict`` a character outside the alphabet raises ``ValueError`` naming it and its
        position; otherwise it becomes ``unk_id`` (what ``tf_encode`` does).

        >>> CharTokenizer("ab").encode("abc", strict=False)
        [6, 7, 5]
        """
        if strict:
            for position, char in enumerate(text):
                if char not in self._ids:
                    raise ValueError(f"CharTokenizer {self.name!r}: character {char!r} (U+{ord(char):04X}) at "
                                     f"position {position} of {text!r} is not in the alphabet")
        return [self._ids.get(char, self.unk_id) for char in text]

    def decode(self, ids: Iterable[int], skip_special: bool = True) -> str:
        """The text of ``ids``; specials are dropped (``skip_special``) or written as their names.

        Padding is a special too, so a padded row decodes to its text. An id outside the vocabulary
        raises ``ValueError`` naming it and its position.

        >>> tok = CharTokenizer("ab")
        >>> tok.decode([6, 0, 0]), tok.decode([6, 4], skip_special=False)
        ('a', 'a<eoa>')
        """
        out = []
        for position, token in enumerate(ids):
            token = int(token)
            if not 0 <= token < self.vocab_size:
                raise ValueError(f"CharTokenizer {self.name!r}: id {token} at position {position} is outside "
                                 f"the vocabulary [0, {self.vocab_size})")
            if token >= self._first:
                out.append(self.alphabet[token - self._first])
            elif not skip_special:
                out.append(self.SPECIALS[token])
        return "".join(out)

    def encode_prompt(self, observations: Sequence[str], actions: Sequence[str], strict: bool = False) -> list[int]:
        """The ids of ``[BOS] o_0 [EOO] a_0 [EOA] ... o_t [EOO]``: the context the agent generates a_t from.

        The Python twin of the episode layout of ``transforms.token_mdp`` (token for token the same
        prefix), for agents at inference: the agent then generates a_t's characters and ``[EOA]``.
        Needs ``len(actions) == len(observations) - 1``. Characters outside the alphabet become
        ``unk_id`` as in the tf layout, unless ``strict``.

        >>> tok = CharTokenizer("ab")
        >>> tok.encode_prompt(["a", "b"], ["ab"])
        [1, 6, 3, 6, 7, 4, 7, 3]
        """
        if len(actions) != len(observations) - 1:
            raise ValueError(f"encode_prompt needs one action fewer than observations, got {len(observations)} "
                             f"observations and {len(actions)} actions")
        ids = [self.bos_id]
        for observation, action in zip(observations, actions):
            ids += self.encode(observation, strict) + [self.eoo_id] + self.encode(action, strict) + [self.eoa_id]
        return ids + self.encode(observations[-1], strict) + [self.eoo_id]

    def encode_ragged(self, texts: Sequence[str]) -> tuple["np.ndarray", "np.ndarray"]:
        """Vectorised ``encode(..., strict=False)`` of many texts: ``(flat int32 ids, int64 lengths)``.

        The texts are joined, read as code points (UTF-32) and looked up with a sorted search; characters outside
        the alphabet become ``unk_id``. This is what ``transforms.token_layout`` tokenises episodes with.

        >>> [a.tolist() for a in CharTokenizer("ab").encode_ragged(["ab", "", "c"])]
        [[6, 7, 5], [2, 0, 1]]
        """
        import numpy as np

        order = sorted(range(len(self.alphabet)), key=lambda i: ord(self.alphabet[i]))
        code_points = np.array([ord(self.alphabet[i]) for i in order], np.uint32)
        ids = np.array([self._first + i for i in order], np.int32)
        points = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), np.uint32)
        where = np.minimum(np.searchsorted(code_points, points), len(code_points) - 1)
        values = np.where(code_points[where] == points, ids[where], np.int32(self.unk_id)).astype(np.int32)
        return values, np.fromiter((len(text) for text in texts), np.int64, len(texts))

    def tf_encode(self, texts: "tf.Tensor") -> "tf.RaggedTensor":
        """Vectorised ``encode(..., strict=False)`` of a string tensor: ``[N]`` texts -> int32 ``[N, None]``.

        UTF-8 is decoded to code points (``tf.strings.unicode_decode``; invalid bytes become U+FFFD) and
        looked up with a sorted search, so it is stateless and runs inside any ``tf.data`` function.
        Characters outside the alphabet become ``unk_id``. A scalar string gives a dense ``[None]``.

        >>> import tensorflow as tf
        >>> CharTokenizer("ab").tf_encode(tf.constant(["ab", "", "c"])).to_list()
        [[6, 7], [], [5]]
        """
        import tensorflow as tf

        order = sorted(range(len(self.alphabet)), key=lambda i: ord(self.alphabet[i]))
        code_points = tf.constant([ord(self.alphabet[i]) for i in order], tf.int32)
        ids = tf.constant([self._first + i for i in order], tf.int32)
        last = len(self.alphabet) - 1

        def lookup(points: tf.Tensor) -> tf.Tensor:
            where = tf.minimum(tf.searchsorted(code_points, points, out_type=tf.int32), last)
            found = tf.equal(tf.gather(code_points, where), points)
            return tf.where(found, tf.gather(ids, where), tf.constant(self.unk_id, tf.int32))

        decoded = tf.strings.unicode_decode(tf.convert_to_tensor(texts, tf.string), "UTF-8")
        if isinstance(decoded, tf.RaggedTensor):
            return tf.ragged.map_flat_values(lookup, decoded)
        return lookup(decoded)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (what ``save`` writes and ``from_dict`` reads back).

        >>> CharTokenizer("ab", name="t").to_dict()["alphabet"]
        'ab'
        """
        return {"format": _FORMAT, "version": _FORMAT_VERSION, "name": self.name, "alphabet": self.alphabet,
                "specials": list(self.SPECIALS)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CharTokenizer":
        """The tokenizer ``to_dict`` described; a wrong format, version or special set raises ``ValueError``.

        >>> CharTokenizer.from_dict(CharTokenizer("ab").to_dict()) == CharTokenizer("ab")
        True
        """
        if d.get("format") != _FORMAT:
            raise ValueError(f"not a CharTokenizer description: field 'format' is {d.get('format')!r}, "
                             f"expected {_FORMAT!r}")
        if d.get("version") != _FORMAT_VERSION:
            raise ValueError(f"CharTokenizer description: field 'version' is {d.get('version')!r}, "
                             f"this code reads version {_FORMAT_VERSION}")
        if tuple(d.get("specials", ())) != cls.SPECIALS:
            raise ValueError(f"CharTokenizer description: field 'specials' is {d.get('specials')!r}, "
                             f"expected {list(cls.SPECIALS)!r}")
        for field in ("alphabet", "name"):
            if not isinstance(d.get(field), str):
                raise ValueError(f"CharTokenizer description: field {field!r} must be a string, got {d.get(field)!r}")
        return cls(d["alphabet"], d["name"])

    def save(self, path: str | os.PathLike) -> None:
        """Writes the tokenizer as UTF-8 JSON to ``path`` (for checkpoints)."""
        write_json_object(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike) -> "CharTokenizer":
        """The tokenizer ``save`` wrote to ``path``; errors name the file."""
        return from_json_file(cls.from_dict, path)


def ragged_positions(ragged: "tf.RaggedTensor") -> tuple["tf.Tensor", "tf.Tensor"]:
    """For each value of a 2-D ragged tensor: (its row, its position within the row), int64 -- the offsets
    every vectorised encoder and ``transforms.token_mdp`` lay tokens out with.

    >>> import tensorflow as tf
    >>> [t.numpy().tolist() for t in ragged_positions(tf.ragged.constant([[7, 8, 9], [], [4]]))]
    [[0, 0, 0, 2], [0, 1, 2, 0]]
    """
    import tensorflow as tf

    rows = ragged.value_rowids()
    return rows, tf.range(tf.size(rows, out_type=tf.int64)) - tf.gather(ragged.row_splits, rows)


def read_json_object(path: str | os.PathLike) -> dict[str, Any]:
    """The JSON object stored in ``path`` (a saved tokenizer); ``ValueError`` naming the file otherwise."""
    with open(path, encoding="utf-8") as f:
        try:
            description = json.load(f)
        except json.JSONDecodeError as error:
            raise ValueError(f"{os.fspath(path)}: not JSON ({error})") from error
    if not isinstance(description, dict):
        raise ValueError(f"{os.fspath(path)}: expected a JSON object, got {type(description).__name__}")
    return description


def check_format(description: Mapping[str, Any], expected: str, version: int, who: str) -> None:
    """Raises ``ValueError`` unless a tokenizer's description has ``format == expected`` and ``version``.

    >>> check_format({"format": "x", "version": 2}, "x", 1, "Tok")
    Traceback (most recent call last):
    ValueError: Tok description: field 'version' is 2, this code reads version 1
    """
    if description.get("format") != expected:
        raise ValueError(f"not a {who} description: field 'format' is {description.get('format')!r}")
    if description.get("version") != version:
        raise ValueError(f"{who} description: field 'version' is {description.get('version')!r}, "
                         f"this code reads version {version}")


def write_json_object(path: str | os.PathLike, description: Mapping[str, Any]) -> None:
    """Writes a tokenizer's description as UTF-8 JSON (characters unescaped) to ``path``: every ``save``."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(dict(description), f, ensure_ascii=False, indent=1)
        f.write("\n")


def from_json_file(from_dict: Any, path: str | os.PathLike) -> Any:
    """``from_dict(read_json_object(path))`` with any ``ValueError`` prefixed by the file's path."""
    description = read_json_object(path)
    try:
        return from_dict(description)
    except ValueError as error:
        raise ValueError(f"{os.fspath(path)}: {error}") from error
