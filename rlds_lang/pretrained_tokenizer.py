"""A pretrained language model's own tokenizer as a task's token view: ``PretrainedTokenizer`` gives a Hugging Face
fast tokenizer (its ``tokenizers.Tokenizer`` backend, e.g. GPT-2's byte-level BPE) the interface of
``rlds_lang.tokenizers.CharTokenizer``, so ``transforms.token_layout``, the trainers and the agents use it unchanged.

The token MDP needs six roles: ``pad``, ``bos``, ``eos``, ``eoo`` (end of observation), ``eoa`` (end of action)
and ``unk``. The model's own ``bos`` (or, lacking one, its ``eos``: GPT-2's ``<|endoftext|>``) starts every episode,
as a document start in its pretraining; its ``eos`` ends it when that is another token, and a ``pad`` of its own is
kept when it is none of those. Every role still missing is added as a new special token (``ADDED``), so the five
ids the layout writes are distinct (a Decision Transformer finds its BOS by id; padding is never EOS). A model
trained with these ids has its embedding table grown to ``vocab_size`` (``trainers.core.pretrained``).

Every text is encoded on its own (``encode``/``encode_batch``; no special token is added), so a BPE merge never
crosses from an observation into the action after it: ``"cr"`` then ``"ane"`` are the tokens of ``"cr"`` and of
``"ane"``, never the single token that ``"crane"`` may be. Text that spells a special token (``"<|eoa|>"``,
``"<|endoftext|>"``) is text, never the special, and for a byte-level tokenizer ``decode(encode(t)) == t`` byte for
byte. No ``transformers`` here: loading a model folder with ``AutoTokenizer`` is ``trainers.core.pretrained``'s
work; the saved form (``save``/``load``, one JSON file holding the backend's own JSON) needs ``tokenizers`` only.

Example::

    from tokenizers import Tokenizer
    from rlds_lang.pretrained_tokenizer import PretrainedTokenizer

    tok = PretrainedTokenizer(Tokenizer.from_file("gpt2/tokenizer.json"), {"bos": "<|endoftext|>"}, name="gpt2")
    ids = tok.encode_prompt(["", "⬛🟨⬛⬛🟩"], ["crane"])   # [BOS] [EOO] crane [EOA] ⬛🟨⬛⬛🟩 [EOO]
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Mapping, Sequence

FORMAT = "rlds_lang.PretrainedTokenizer"
FORMAT_VERSION = 1
#: the token MDP's roles, in ``CharTokenizer.SPECIALS`` order.
ROLES = ("pad", "bos", "eos", "eoo", "eoa", "unk")
#: the special tokens added for the roles a pretrained tokenizer lacks (``unk``: none is needed, see ``unk_id``).
ADDED = {"pad": "<|pad|>", "bos": "<|bos|>", "eos": "<|eos|>", "eoo": "<|eoo|>", "eoa": "<|eoa|>"}


def role_tokens(bos: str | None = None, eos: str | None = None, pad: str | None = None,
                unk: str | None = None) -> dict[str, str | None]:
    """The text of each role's token given a tokenizer's own special tokens (None where it has none): its ``bos``
    (else its ``eos``) begins episodes, its ``eos`` ends them when distinct, its ``pad`` pads when distinct from
    both; ``ADDED`` fills the rest. ``unk`` stays the tokenizer's own (None: a byte-level BPE has no unknown text).

    >>> role_tokens(bos="<|endoftext|>", eos="<|endoftext|>", unk="<|endoftext|>")["eos"]
    '<|eos|>'
    """
    begin = bos or eos
    roles: dict[str, str | None] = {"bos": begin or ADDED["bos"]}
    roles["eos"] = eos if eos and eos != roles["bos"] else ADDED["eos"]
    roles["pad"] = pad if pad and pad not in (roles["bos"], roles["eos"]) else ADDED["pad"]
    roles["eoo"], roles["eoa"], roles["unk"] = ADDED["eoo"], ADDED["eoa"], unk
    return {role: roles[role] for role in ROLES}


class PretrainedTokenizer:
    """A ``tokenizers.Tokenizer`` (a pretrained model's) with the ``CharTokenizer`` interface and the token MDP's
    special tokens (see the module docstring).

    ``roles`` maps ``bos``/``eos``/``pad``/``unk`` to the tokenizer's own special tokens (missing or None: it has
    none); the backend is copied, never changed in place. ``source`` says where it was loaded from (a folder or a
    model name), for messages and the saved description.
    """

    def __init__(self, backend: Any, roles: Mapping[str, str | None] | None = None, name: str = "pretrained",
                 source: str = ""):
        from tokenizers import AddedToken, Tokenizer

        roles = dict(roles or {})
        unknown = sorted(set(roles) - set(ROLES))
        if unknown:
            raise ValueError(f"PretrainedTokenizer {name!r}: unknown roles {unknown}; the roles are {list(ROLES)}")
        if set(roles) != set(ROLES) or len({roles[r] for r in ROLES[:5]}) < 5:
            roles = role_tokens(roles.get("bos"), roles.get("eos"), roles.get("pad"), roles.get("unk"))
        self.hf = Tokenizer.from_str(backend.to_str())
        missing = [roles[r] for r in ROLES if roles[r] is not None and self.hf.token_to_id(roles[r]) is None]
        if missing:
            self.hf.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in missing])
        self.hf.encode_special_tokens = True  # "<|eoa|>" typed in a text is text, never the special
        self.roles: dict[str, str | None] = {role: roles[role] for role in ROLES}
        self.name = name
        self.source = source
        ids = {role: (None if token is None else self.hf.token_to_id(token)) for role, token in self.roles.items()}
        self.pad_id, self.bos_id, self.eos_id, self.eoo_id, self.eoa_id = (int(ids[r]) for r in ROLES[:5])
        #: the tokenizer's own unknown token, or None (byte-level BPE encodes every text).
        self.unk_id = ids["unk"]
        self.vocab_size = int(self.hf.get_vocab_size(with_added_tokens=True))
        added = self.hf.get_added_tokens_decoder()
        #: ids ``decode`` leaves out with ``skip_special``: the roles' and every special token of the backend.
        self.special_ids = frozenset({i for i, token in added.items() if token.special}
                                     | {i for i in ids.values() if i is not None})

    def encode(self, text: str, strict: bool = True) -> list[int]:
        """The ids of ``text`` alone (no special token added). With ``strict`` a text the tokenizer cannot give back
        exactly (``decode(encode(text)) != text``: an unknown character, a normalizer) raises ``ValueError``
        naming it; a byte-level BPE gives every text back."""
        ids = self.encode_batch([text])[0]
        if strict and self.decode(ids) != text:
            raise ValueError(f"PretrainedTokenizer {self.name!r}: {text!r} does not come back from its ids "
                             f"(it decodes to {self.decode(ids)!r})")
        return ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """``encode(..., strict=False)`` of many texts in one call, each text on its own (the backend's batch
        encoder): what ``transforms.token_layout`` tokenizes observations and actions with."""
        return [list(e.ids) for e in self.hf.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids: Iterable[int], skip_special: bool = True) -> str:
        """The text of ``ids``; special tokens are dropped (``skip_special``) or written as their text.

        An id outside the vocabulary raises ``ValueError`` naming it and its position.
        """
        from rlds_lang.subword import decode_runs

        return decode_runs(ids, self.vocab_size,
                           lambda token: self.hf.id_to_token(token) if token in self.special_ids else None,
                           lambda run: self.hf.decode(run, skip_special_tokens=False), skip_special,
                           f"PretrainedTokenizer {self.name!r}")

    def encode_prompt(self, observations: Sequence[str], actions: Sequence[str], strict: bool = False) -> list[int]:
        """The ids of ``[BOS] o_0 [EOO] a_0 [EOA] ... o_t [EOO]``, every text encoded on its own: the token MDP's
        prefix (``transforms.token_layout``) from which an agent generates ``a_t``."""
        if len(actions) != len(observations) - 1:
            raise ValueError(f"encode_prompt needs one action fewer than observations, got {len(observations)} "
                             f"observations and {len(actions)} actions")
        texts = [text for pair in zip(observations, list(actions) + [""]) for text in pair][:-1]
        rows = [self.encode(text, strict) for text in texts] if strict else self.encode_batch(texts)
        ids = [self.bos_id]
        for i, row in enumerate(rows):
            ids += row + [self.eoo_id if i % 2 == 0 else self.eoa_id]
        return ids

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (``save`` writes it, ``from_dict`` reads it): the roles' tokens and the
        backend's own JSON (its added special tokens included)."""
        return {"format": FORMAT, "version": FORMAT_VERSION, "name": self.name, "source": self.source,
                "roles": self.roles, "hf_tokenizer": json.loads(self.hf.to_str())}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "PretrainedTokenizer":
        """The tokenizer ``to_dict`` described; a wrong format, version or role set raises ``ValueError``."""
        from tokenizers import Tokenizer

        from rlds_lang.char_tokenizer import check_format

        check_format(d, FORMAT, FORMAT_VERSION, "PretrainedTokenizer")
        roles = d.get("roles")
        if not isinstance(roles, dict) or set(roles) != set(ROLES):
            raise ValueError(f"PretrainedTokenizer description: field 'roles' must map {list(ROLES)}, got {roles!r}")
        if not isinstance(d.get("hf_tokenizer"), dict):
            raise ValueError("PretrainedTokenizer description: field 'hf_tokenizer' must be the tokenizer's JSON object")
        backend = Tokenizer.from_str(json.dumps(d["hf_tokenizer"]))
        return cls(backend, roles, str(d.get("name", "pretrained")), str(d.get("source", "")))

    def save(self, path: str | os.PathLike) -> None:
        """Writes the tokenizer as UTF-8 JSON to ``path`` (a checkpoint's ``tokenizer.json``)."""
        from rlds_lang.char_tokenizer import write_json_object

        write_json_object(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike) -> "PretrainedTokenizer":
        """The tokenizer ``save`` wrote to ``path``; errors name the file."""
        from rlds_lang.char_tokenizer import from_json_file

        return from_json_file(cls.from_dict, path)

    def __eq__(self, other: object) -> bool:
        """Equal: the same description (``to_dict``: vocabulary, merges, roles, name and source)."""
        return isinstance(other, PretrainedTokenizer) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.name, self.source, self.vocab_size))

    def __repr__(self) -> str:
        return f"PretrainedTokenizer(name={self.name!r}, vocab_size={self.vocab_size}, source={self.source!r})"


__all__ = ["FORMAT", "ROLES", "ADDED", "role_tokens", "PretrainedTokenizer"]
