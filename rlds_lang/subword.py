"""A byte-level BPE tokenizer for open text (Reddit replies), on Hugging Face ``tokenizers``, with the
interface of ``rlds_lang.tokenizers.CharTokenizer`` so the token MDP, the trainers and the agents use it unchanged.

``SubwordTokenizer.train(texts, vocab_size)`` learns merges from a corpus (a dataset's training split);
ids 0..5 are the specials of ``CharTokenizer.SPECIALS`` in the same order (``pad``, ``bos``, ``eos``,
``eoo``, ``eoa``, ``unk``). The byte-level alphabet makes every text encodable and ``decode(encode(t)) == t``
byte for byte (emoji, CRLF, any Unicode), a text that spells a special's name included (it is split like
any other text, never read as the special). ``save``/``load`` write one JSON file (the format tag and
the Hugging Face tokenizer's own JSON) that travels with a checkpoint as ``tokenizer.json``;
``rlds_lang.tokenizers.load_tokenizer`` reads either kind.

Example::

    from rlds_lang.subword import SubwordTokenizer

    tok = SubwordTokenizer.train(["a reply", "another reply 😀"], vocab_size=300)
    assert tok.decode(tok.encode("another 😀\\r\\n")) == "another 😀\\r\\n"
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

if TYPE_CHECKING:  # pragma: no cover - type hints only
    import tensorflow as tf

FORMAT = "rlds_lang.SubwordTokenizer"
FORMAT_VERSION = 1
SPECIALS = ("<pad>", "<bos>", "<eos>", "<eoo>", "<eoa>", "<unk>")


class SubwordTokenizer:
    """Byte-level BPE with the CharTokenizer interface (see the module docstring); wraps a ``tokenizers.Tokenizer``."""

    SPECIALS = SPECIALS

    def __init__(self, hf_tokenizer: Any, name: str = "bpe"):
        for i, special in enumerate(SPECIALS):
            if hf_tokenizer.token_to_id(special) != i:
                raise ValueError(f"SubwordTokenizer {name!r}: special {special!r} must have id {i}, "
                                 f"has {hf_tokenizer.token_to_id(special)}")
        hf_tokenizer.encode_special_tokens = True  # "<eoa>" typed in a text is text, never the special
        self.hf = hf_tokenizer
        self.name = name
        self.pad_id, self.bos_id, self.eos_id, self.eoo_id, self.eoa_id, self.unk_id = range(len(SPECIALS))
        self.vocab_size = int(hf_tokenizer.get_vocab_size(with_added_tokens=True))

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int = 4000, name: str = "bpe") -> "SubwordTokenizer":
        """Learns a byte-level BPE of ``vocab_size`` ids (specials and the 256 byte symbols included) from ``texts``."""
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        hf = Tokenizer(models.BPE())
        hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        hf.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIALS), show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        hf.train_from_iterator(texts, trainer)
        return cls(hf, name)

    def __repr__(self) -> str:
        return f"SubwordTokenizer(name={self.name!r}, vocab_size={self.vocab_size})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SubwordTokenizer) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.name, self.vocab_size))

    def encode(self, text: str, strict: bool = True) -> list[int]:
        """The ids of ``text`` (no specials added; ``strict`` is accepted for interface parity: every text encodes)."""
        return self.encode_batch([text])[0]

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """``encode`` of many texts in one call (the library's parallel batch encoder)."""
        encodings = self.hf.encode_batch(list(texts), add_special_tokens=False)
        return [list(e.ids) for e in encodings]

    def decode(self, ids: Iterable[int], skip_special: bool = True) -> str:
        """The text of ``ids``; specials are dropped (``skip_special``) or written as their names.

        An id outside the vocabulary raises ``ValueError`` naming it and its position.
        """
        return decode_runs(ids, self.vocab_size, lambda token: SPECIALS[token] if token < len(SPECIALS) else None,
                           lambda run: self.hf.decode(run, skip_special_tokens=False), skip_special,
                           f"SubwordTokenizer {self.name!r}")

    def encode_prompt(self, observations: Sequence[str], actions: Sequence[str], strict: bool = False) -> list[int]:
        """The ids of ``[BOS] o_0 [EOO] a_0 [EOA] ... o_t [EOO]`` (as ``CharTokenizer.encode_prompt``)."""
        if len(actions) != len(observations) - 1:
            raise ValueError(f"encode_prompt needs one action fewer than observations, got {len(observations)} "
                             f"observations and {len(actions)} actions")
        ids = [self.bos_id]
        for observation, action in zip(observations, actions):
            ids += self.encode(observation) + [self.eoo_id] + self.encode(action) + [self.eoa_id]
        return ids + self.encode(observations[-1]) + [self.eoo_id]

    def tf_encode(self, texts: "tf.Tensor") -> "tf.RaggedTensor":
        """``encode`` of a string tensor inside ``tf.data``: ``[N]`` texts -> int32 ``[N, None]`` (scalar -> ``[None]``).

        Runs the library's batch encoder through ``tf.py_function``; invalid UTF-8 becomes U+FFFD.
        """
        import numpy as np
        import tensorflow as tf

        texts = tf.convert_to_tensor(texts, tf.string)

        def encode(flat: tf.Tensor):
            rows = self.encode_batch([t.decode("utf-8", "replace") for t in flat.numpy()])
            values = np.fromiter((i for r in rows for i in r), dtype=np.int32)
            return values, np.asarray([len(r) for r in rows], dtype=np.int64)

        values, lengths = tf.py_function(encode, [tf.reshape(texts, [-1])], [tf.int32, tf.int64])
        values.set_shape([None])
        lengths.set_shape([None])
        ragged = tf.RaggedTensor.from_row_lengths(values, lengths)
        return ragged[0] if texts.shape.rank == 0 else ragged

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (``save`` writes it, ``from_dict`` reads it)."""
        return {"format": FORMAT, "version": FORMAT_VERSION, "name": self.name, "specials": list(SPECIALS),
                "hf_tokenizer": json.loads(self.hf.to_str())}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SubwordTokenizer":
        """The tokenizer ``to_dict`` described; a wrong format, version or special set raises ``ValueError``."""
        from tokenizers import Tokenizer

        if d.get("format") != FORMAT:
            raise ValueError(f"not a SubwordTokenizer description: field 'format' is {d.get('format')!r}")
        if d.get("version") != FORMAT_VERSION:
            raise ValueError(f"SubwordTokenizer description: field 'version' is {d.get('version')!r}, "
                             f"this code reads version {FORMAT_VERSION}")
        if tuple(d.get("specials", ())) != SPECIALS:
            raise ValueError(f"SubwordTokenizer description: field 'specials' is {d.get('specials')!r}")
        return cls(Tokenizer.from_str(json.dumps(d["hf_tokenizer"])), str(d.get("name", "bpe")))

    def save(self, path: str | os.PathLike) -> None:
        """Writes the tokenizer as UTF-8 JSON to ``path`` (for checkpoints)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, ensure_ascii=False)
            f.write("\n")

    @classmethod
    def load(cls, path: str | os.PathLike) -> "SubwordTokenizer":
        """The tokenizer ``save`` wrote to ``path``; errors name the file."""
        from rlds_lang.char_tokenizer import from_json_file

        return from_json_file(cls.from_dict, path)


def decode_runs(ids: Iterable[int], vocab_size: int, special_text: Callable[[int], str | None],
                decode_run: Callable[[list[int]], str], skip_special: bool, who: str) -> str:
    """The text of ``ids`` for a tokenizer with a Hugging Face backend: each run of ordinary ids decoded at once
    (``decode_run``, so that a character's bytes split over several ids come back whole), each special id
    (``special_text`` gives its text; None: not special) dropped with ``skip_special`` or written as its text.
    An id outside ``[0, vocab_size)`` raises ``ValueError`` naming ``who``, the id and its position.

    >>> decode_runs([5, 0, 6], 7, lambda t: "<s>" if t == 0 else None, lambda run: str(run), False, "t")
    '[5]<s>[6]'
    """
    out: list[str] = []
    run: list[int] = []
    for position, token in enumerate(ids):
        token = int(token)
        if not 0 <= token < vocab_size:
            raise ValueError(f"{who}: id {token} at position {position} is outside the vocabulary [0, {vocab_size})")
        text = special_text(token)
        if text is None:
            run.append(token)
            continue
        out.append(decode_run(run) if run else "")
        run = []
        if not skip_special:
            out.append(text)
    if run:
        out.append(decode_run(run))
    return "".join(out)


__all__ = ["FORMAT", "SPECIALS", "SubwordTokenizer", "decode_runs"]
