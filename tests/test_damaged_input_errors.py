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


def test_strict_json_refuses_a_key_twice_and_too_deep_nesting_and_reads_the_rest_like_json():
    import json

    from rlds_lang.input_errors import DuplicateKeyError, JsonNestingError, loads_strict

    text = '{"a": [1, {"b": null, "c": "é"}], "d": {"e": 1.5}, "f": []}'
    assert loads_strict(text) == json.loads(text)
    with pytest.raises(DuplicateKeyError, match=r"^duplicate key 'b' in one object$") as e:
        loads_strict('{"a": [{"b": 1, "c": 2, "b": 3}]}')
    assert e.value.key == "b"
    with pytest.raises(JsonNestingError):
        loads_strict("[" * 100_000 + "]" * 100_000)
    assert loads_strict("[" * 500 + "]" * 500)  # deep, but within what Python follows


@pytest.mark.parametrize("size", [1, 5, 64, 1 << 20])
def test_a_line_past_max_line_bytes_is_named_whatever_the_chunks(size):
    data = b"short\r\nok\rnext\n" + b"x" * 50 + b"\nafter\n"
    chunks = [data[i:i + size] for i in range(0, len(data), size)]
    with pytest.raises(ValueError, match=r"^f\.ndjson:4: line longer than 40 bytes, the reader's max_line_bytes"):
        list(decoded_lines(chunks, "f.ndjson", ValueError, max_line_bytes=40))
    assert [n for n, _ in decoded_lines(chunks, "f.ndjson", ValueError, max_line_bytes=51)] == [1, 2, 3, 4, 5]


def test_a_line_that_never_ends_is_refused_once_the_limit_is_read():
    read = []

    def endless():
        for _ in range(100_000):  # 100 MB with no line end (bounded, so that a reader without the limit fails)
            read.append(1000)
            yield b"y" * 1000

    with pytest.raises(ValueError, match=r"^f:1: line longer than 10,000 bytes"):
        list(decoded_lines(endless(), "f", ValueError, max_line_bytes=10_000))
    assert sum(read) <= 11_000  # it stopped as soon as the limit was passed


def test_csv_records_name_a_quote_that_swallows_the_records_after_it(tmp_path):
    from rlds_lang.csv_records import csv_records

    path = tmp_path / "t.csv"
    path.write_text('a,b,c\n1,2,3\n4,"5,6\n7,8,9\n10,11,12\n', encoding="utf-8")
    for strict in (True, False):
        with pytest.raises(ValueError, match=r"t\.csv:3: a quoted field opened on this line is never closed: .* 2 "
                                             r"lines after it, .* 2 of them records of their own"):
            list(csv_records(str(path), ValueError, strict=strict))
    path.write_text('a,b,c\n1,2,3\n4,"5,six\nseven\n', encoding="utf-8")  # a file cut inside its last record
    for strict in (True, False):
        records = list(csv_records(str(path), ValueError, strict=strict))
        assert [(line, fields) for line, fields, _ in records] == [(1, ["a", "b", "c"]), (2, ["1", "2", "3"]), (3, None)]
        assert "not closed before the end of the file" in records[-1][2]
    path.write_text('a,b,c\n1,"2\n2",3\n4,5,6', encoding="utf-8")  # a quoted newline, and no line end at the end
    assert [(line, fields) for line, fields, _ in csv_records(str(path), ValueError)] == \
        [(1, ["a", "b", "c"]), (2, ["1", "2\n2", "3"]), (4, ["4", "5", "6"])]
