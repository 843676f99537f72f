"""CharTokenizer and the Wordle tokenizer: round trips, errors, specials, JSON, the tf twin."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys

import numpy as np
import pytest

from rlds_lang import char_tokenizer, tokenizers
from rlds_lang.char_tokenizer import WORDLE_LETTERS, WORDLE_SQUARES, CharTokenizer
from rlds_lang.tokenizers import wordle_tokenizer

TEXTS = ["", "crane", "⬛🟨⬛⬛🟩", "🟩🟩🟩🟩🟩", "zz⬜🟧🟦a", "abcdefghijklmnopqrstuvwxyz"]


def test_round_trip_is_byte_for_byte():
    tok = wordle_tokenizer()
    for text in TEXTS:
        ids = tok.encode(text)
        assert len(ids) == len(text)  # one id per code point
        assert tok.decode(ids).encode("utf-8") == text.encode("utf-8")
    mixed = CharTokenizer("é二\x00 ab")
    assert mixed.decode(mixed.encode("a\x00é 二b")) == "a\x00é 二b"


def test_specials_are_distinct_first_and_pad_is_not_eos():
    tok = wordle_tokenizer()
    specials = [tok.pad_id, tok.bos_id, tok.eos_id, tok.eoo_id, tok.eoa_id, tok.unk_id]
    assert specials == list(range(6)) and len(set(specials)) == 6
    assert tok.pad_id != tok.eos_id
    assert CharTokenizer.SPECIALS == ("<pad>", "<bos>", "<eos>", "<eoo>", "<eoa>", "<unk>")
    assert min(tok.encode(WORDLE_LETTERS + WORDLE_SQUARES)) == 6  # no character shares an id with a special
    assert tok.decode(specials, skip_special=False) == "".join(CharTokenizer.SPECIALS)
    assert tok.decode(specials) == ""


def test_wordle_tokenizer_covers_letters_and_six_squares():
    tok = wordle_tokenizer()
    assert tok.vocab_size == 6 + 26 + 6
    squares = "⬛⬜🟨🟩🟧🟦"
    assert WORDLE_SQUARES == squares and all(len(s) == 1 for s in squares)  # single code points
    assert "\ufe0f" not in tok.alphabet
    ids = tok.encode(squares + WORDLE_LETTERS)
    assert len(set(ids)) == 32 and tok.unk_id not in ids
    # A square written with the emoji variation selector is refused in strict mode, not silently merged.
    with pytest.raises(ValueError, match="position 1"):
        tok.encode("⬛\ufe0f")


def test_strict_error_names_character_and_position():
    tok = wordle_tokenizer()
    with pytest.raises(ValueError, match=r"character 'X' \(U\+0058\) at position 2 of 'crXne'"):
        tok.encode("crXne")
    assert tok.encode("crXne", strict=False) == tok.encode("cr") + [tok.unk_id] + tok.encode("ne")


def test_bad_alphabet_and_ids_are_refused():
    with pytest.raises(ValueError, match=r"duplicate character 'a' .* positions 0 and 2"):
        CharTokenizer("aba")
    with pytest.raises(ValueError, match="non-empty"):
        CharTokenizer("")
    with pytest.raises(ValueError, match="id 99 at position 1 is outside"):
        wordle_tokenizer().decode([6, 99])


def test_json_save_load(tmp_path):
    tok = CharTokenizer("ab二🟩\x00", name="mixed")
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    assert json.loads(path.read_text(encoding="utf-8"))["alphabet"] == "ab二🟩\x00"
    loaded = CharTokenizer.load(path)
    assert loaded == tok and loaded.vocab_size == tok.vocab_size and loaded.name == "mixed"
    assert loaded.encode("🟩a\x00") == tok.encode("🟩a\x00")
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({**tok.to_dict(), "specials": ["<pad>"]}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken\.json: .*'specials'"):
        CharTokenizer.load(broken)
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken\.json: not JSON"):
        CharTokenizer.load(broken)


def test_tf_encode_equals_encode():
    import tensorflow as tf

    tok = wordle_tokenizer()
    texts = TEXTS + ["Crane?", "é⬛\ufe0f"]
    ragged = tok.tf_encode(tf.constant(texts))
    assert ragged.dtype == tf.int32
    assert ragged.to_list() == [tok.encode(t, strict=False) for t in texts]
    assert tok.tf_encode(tf.constant("ab")).numpy().tolist() == tok.encode("ab")
    assert tok.tf_encode(tf.constant([[b"\xff"]])).to_list() == [[[tok.unk_id]]]  # invalid UTF-8 -> unk


def test_encode_prompt_layout():
    tok = CharTokenizer("ab")
    b, o, a, e = tok.bos_id, tok.eoo_id, tok.eoa_id, tok.eos_id
    assert tok.encode_prompt(["a"], []) == [b, 6, o]
    assert tok.encode_prompt(["", "b"], ["ab"]) == [b, o, 6, 7, a, 7, o]
    assert e not in tok.encode_prompt(["", "b"], ["ab"])
    assert tok.encode_prompt(["c"], []) == [b, tok.unk_id, o]  # unknown text as in the tf layout
    with pytest.raises(ValueError, match="character 'c'"):
        tok.encode_prompt(["c"], [], strict=True)
    with pytest.raises(ValueError, match="one action fewer than observations, got 2 observations and 2"):
        tok.encode_prompt(["a", "b"], ["a", "b"])


def test_importing_does_not_import_tensorflow():
    code = "import sys, rlds_lang.tokenizers as t; t.wordle_tokenizer().encode('crane'); print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_docstring_examples_run():
    import tensorflow as tf

    for module, examples in ((tokenizers, 6), (char_tokenizer, 4)):
        result = doctest.testmod(module, extraglobs={"tf": tf, "np": np})
        assert result.failed == 0 and result.attempted >= examples, module.__name__


def test_lmrl_gym_word_tokenizer_makes_each_word_and_feedback_one_id(tmp_path):
    import itertools

    from rlds_lang.wordle.words import lmrl_gym_words

    tok = tokenizers.make_tokenizer("lmrl_gym_words")
    words = lmrl_gym_words().words
    ids = [tok.encode(w) for w in words]
    assert all(len(i) == 1 for i in ids) and len({i[0] for i in ids}) == 431
    patterns = ["".join(p) for p in itertools.product("⬛🟨🟩", repeat=5)]
    assert all(len(tok.encode(p)) == 1 for p in patterns) and len({tok.encode(p)[0] for p in patterns}) == 243
    assert tok == tokenizers.make_tokenizer("lmrl_gym_words")  # the same ids every time it is made
    prompt = tok.encode_prompt(["", patterns[5]], [words[0]])
    assert prompt == [tok.bos_id, tok.eoo_id, ids[0][0], tok.eoa_id, tok.encode(patterns[5])[0], tok.eoo_id]
    for text in ("zzzzz", "crane 🟧\r\n", "<eoa>"):  # anything else still round-trips, in several ids
        assert tok.decode(tok.encode(text)) == text
    tok.save(tmp_path / "tokenizer.json")
    assert tokenizers.load_tokenizer(tmp_path / "tokenizer.json") == tok


def test_word_tokenizer_names_a_word_that_cannot_be_one_id():
    with pytest.raises(ValueError, match="not one id"):
        tokenizers.word_tokenizer(["crane", "crane crane"], name="bad")  # a space splits before BPE merges


def test_the_bytes_tokenizer_takes_any_text_byte_for_byte_and_saves_as_the_others():
    tok = tokenizers.make_tokenizer("bytes")
    assert tok.vocab_size == 262 and tok == tokenizers.make_tokenizer("bytes")
    for text in ("apple", "é\x00\r\n", "二 🟩", "<eoa>", ""):
        assert tok.decode(tok.encode(text)) == text
        assert len(tok.encode(text)) == len(text.encode("utf-8"))  # one id per byte: no merge
