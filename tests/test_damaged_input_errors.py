"""The one helper every raw-data reader reports damaged input through (``rlds_lang/input_errors.py``), and the
one family of errors the readers raise. The tests of each reader are the other ``tests/test_damaged_*.py``
files (see ``tests/damaged_helpers.py``); ``docs/guides/damaged_input.md`` is the guide to what each reader does."""

from __future__ import annotations

import io

import pytest

from rlds_lang.input_errors import VALUE_LIMIT, decoded_lines, input_error, shorten
from rlds_lang.reddit.data import RedditDataError
from rlds_lang.visdial.data import VisDialDataError
from rlds_lang.wordle.retrofit import AnswerTableError
from rlds_lang.wordle.tweets import TweetsCsvError
from rlds_lang.wordle.words import WordListError
from tests.damaged_helpers import MEGABYTE


def test_shorten_cuts_long_values_and_gives_their_length():
    assert shorten("abc") == "'abc'"
    long = shorten("x" * MEGABYTE)
    assert long.startswith("'xxx") and long.endswith(f"... ({MEGABYTE:,} chars)") and len(long) < VALUE_LIMIT + 30
    assert shorten(list(range(100000))).endswith("(100,000 items)")


def test_input_error_names_file_line_record_field_and_value():
    error = input_error(ValueError, "f.csv", "bad score", line=7, record="record 3", field="score", value="y" * 500)
    assert str(error).startswith("f.csv:7, record 3, field 'score': bad score: 'yyy")
    assert "(500 chars)" in str(error)


def test_decoded_lines_counts_lines_across_chunks_and_drops_a_bom():
    chunks = [b"\xef\xbb\xbfab", b"c\r\nde", b"f\rgh\n", b"tail"]
    assert list(decoded_lines(chunks, "x", ValueError)) == [(1, "abc\r\n"), (2, "def\r"), (3, "gh\n"), (4, "tail")]
    with pytest.raises(ValueError, match=r"^x:3: not UTF-8 at byte 2"):
        list(decoded_lines([b"a\nb\n", b"c\xe9\n"], "x", ValueError))


@pytest.mark.parametrize("size", [1, 3, 7, 64, 1 << 20])
def test_decoded_lines_match_python_text_lines_whatever_the_chunk_size(size):
    text = "é one\r\ntwo\rthree\n\nfour 😀\r\n\rfive"
    data = text.encode("utf-8")
    chunks = [data[i:i + size] for i in range(0, len(data), size)]
    expected = list(enumerate(io.StringIO(text, newline=""), start=1))
    assert list(decoded_lines(chunks, "x", ValueError)) == expected
    bad = data.replace(b"four", b"fo\xffr")
    lines = []
    with pytest.raises(ValueError, match=r"^x:5: not UTF-8 at byte 3 of the line"):
        for number, line in decoded_lines([bad[i:i + size] for i in range(0, len(bad), size)], "x", ValueError):
            lines.append((number, line))
    assert lines == expected[:4]  # every line before the bad one


def test_every_reader_error_class_is_a_value_error():
    """Callers catch one family: every reader's error is a ``ValueError`` with the location in its message."""
    from loggers import DamagedLogError

    for cls in (RedditDataError, VisDialDataError, WordListError, AnswerTableError, TweetsCsvError, DamagedLogError):
        assert issubclass(cls, ValueError)
