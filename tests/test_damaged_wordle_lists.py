"""Fault injection into the Wordle word lists (``rlds_lang.wordle.words``) and answer tables
(``rlds_lang.wordle.retrofit``): encoding, empty and truncated files, columns, duplicates, 1 MB lines, a BOM.
``docs/guides/damaged_input.md`` ("Wordle") describes what they do; this module checks it."""

from __future__ import annotations

import re

import pytest

from rlds_lang.wordle.retrofit import AnswerTableError, load_answer_table
from rlds_lang.wordle.words import WordListError, load_word_list
from tests.damaged_helpers import MEGABYTE, short_message


def _refuses(load, path, content: bytes, error_cls, pattern: str) -> None:
    """Writes ``content`` to ``path`` and checks that ``load(path)`` raises ``error_cls`` with a short message
    matching ``pattern``."""
    path.write_bytes(content)
    with pytest.raises(error_cls) as e:
        load(path)
    assert re.search(pattern, short_message(e.value)), str(e.value)


@pytest.mark.parametrize("content, pattern", [
    (b"crane\nslate\ncaf\xe9s\n", r"answers\.txt:3: not UTF-8"),
    (b"", r"answers\.txt: word list is empty \(0 bytes\)"),
    (b"crane\nsla", r"answers\.txt:2: not a five-letter ASCII word: 'sla'$"),  # truncated
    (b"crane\n" + b"q" * MEGABYTE + b"\n", r"answers\.txt:2: not a five-letter ASCII word: 'qqq.*\(1,048,576 chars\)"),
    (b"crane\nslate\ncrane\n", r"answers\.txt:3: duplicate word 'crane' \(first on line 1\)"),
])
def test_word_list_damage_names_file_and_line(tmp_path, content, pattern):
    _refuses(load_word_list, tmp_path / "answers.txt", content, WordListError, pattern)


def test_word_list_bom_is_dropped_and_a_missing_file_named(tmp_path):
    path = tmp_path / "answers.txt"
    path.write_bytes(b"\xef\xbb\xbfcrane\nslate\n")
    assert load_word_list(path).words == ("crane", "slate")
    with pytest.raises(WordListError, match=r"nothere\.txt: word list not found"):
        load_word_list(tmp_path / "nothere.txt")


@pytest.mark.parametrize("content, pattern", [
    (b"day,answer\n0,cigar\n1,caf\xe9s\n", r"answers_by_day\.csv:3: not UTF-8"),
    (b"0,cigar\n1\n", r":2: expected 'day,answer': '1'$"),                      # a column missing
    (b"0,cigar\n1,rebut,extra\n", r":2: expected 'day,answer': '1,rebut,extra'"),  # a column too many
    (b"day,answer\n", r"answers_by_day\.csv: no 'day,answer' line"),
    (b"", r"answers_by_day\.csv: answer table is empty \(0 bytes\)"),
    (b"0," + b"a" * MEGABYTE + b"\n", r":1, field 'answer': answer is not five letters a-z: 'aaa.*\(1,048,576 chars\)"),
    (b"1" * MEGABYTE + b",cigar\n", r":1: expected 'day,answer': '111.*chars\)"),
])
def test_answer_table_damage_names_file_and_line(tmp_path, content, pattern):
    _refuses(load_answer_table, tmp_path / "answers_by_day.csv", content, AnswerTableError, pattern)


def test_answer_table_bom_is_dropped(tmp_path):
    path = tmp_path / "answers_by_day.csv"
    path.write_bytes(b"\xef\xbb\xbfday,answer\n0,cigar\n")
    assert load_answer_table(path) == {0: "cigar"}
