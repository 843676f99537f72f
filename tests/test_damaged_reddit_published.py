"""Fault injection into the reader of the published Reddit CSV pair and its index files
(``rlds_lang.reddit.data.read_published``): header, columns, encoding, empty and truncated files, 1 MB fields.
``docs/guides/damaged_input.md`` ("Reddit") describes what it does; this module checks it."""

from __future__ import annotations

import collections
import os
import re
from pathlib import Path

import pytest

from builders.reddit_comments import make_dummy_data as reddit_dummy
from rlds_lang.reddit import data as reddit
from rlds_lang.reddit.data import RedditDataError
from tests.damaged_helpers import MEGABYTE, short_message


def _published(folder, pos=None, neg=None, header=None):
    """A published folder with the dummy records (or ``pos``/``neg``) under ``header`` (default: the published)."""
    pos = reddit_dummy.positives() if pos is None else pos
    neg = reddit_dummy.negatives() if neg is None else neg
    reddit_dummy.write_published(str(folder), pos, neg, reddit_dummy.published_splits(len(pos) + len(neg)),
                                 reddit_dummy.HEADER if header is None else header)
    return str(folder)


def _read_published(folder):
    rejections = collections.Counter()
    return list(reddit.read_published(folder, rejections)), rejections


def test_published_csv_without_link_id_is_refused_naming_missing_and_unexpected_columns(tmp_path):
    header = [c for c in reddit_dummy.HEADER if c != "link_id"]
    pos = [r[:3] + r[4:] for r in reddit_dummy.positives() if len(r) > 3]
    neg = [r[:3] + r[4:] for r in reddit_dummy.negatives()]
    folder = _published(tmp_path, pos, neg, header)
    with pytest.raises(RedditDataError) as e:
        _read_published(folder)
    message = short_message(e.value)
    assert re.search(r"comments_positive\.csv:1: header is not the published one: missing \['link_id'\], "
                     r"unexpected \[\"'parent_score'\"\]", message), message


def test_published_csv_with_an_extra_column_is_refused_naming_it(tmp_path):
    header = reddit_dummy.HEADER[:4] + ["flair"] + reddit_dummy.HEADER[4:]
    folder = _published(tmp_path, header=header)
    with pytest.raises(RedditDataError, match=r"comments_positive\.csv:1: .*missing \[\], unexpected \[\"'flair'\"\]"):
        _read_published(folder)


def test_published_csv_with_columns_swapped_is_refused(tmp_path):
    header = list(reddit_dummy.HEADER)
    header[4], header[5] = header[5], header[4]
    with pytest.raises(RedditDataError, match="out of order"):
        _read_published(_published(tmp_path, header=header))


def test_published_csv_trailing_columns_after_the_published_ones_are_allowed(tmp_path):
    comments, rejections = _read_published(_published(tmp_path, header=reddit_dummy.HEADER + ["more"]))
    assert len(comments) == reddit_dummy.EXPECTED["published"]["accepted"]
    assert rejections == reddit_dummy.EXPECTED["published"]["rejections"]


def test_published_record_with_more_fields_than_the_header_is_counted(tmp_path):
    pos = reddit_dummy.positives()
    pos[0] = pos[0][:4] + ["an, unquoted, comma"] + pos[0][4:]  # a shifted record
    comments, rejections = _read_published(_published(tmp_path, pos=pos))
    assert rejections["too_many_columns"] == 1
    assert len(comments) == reddit_dummy.EXPECTED["published"]["accepted"] - 1


def test_published_csv_not_utf8_names_the_exact_line(tmp_path):
    pos = [reddit_dummy.row(f"p{i}", f"comment {i}", 1, "parent") for i in range(3100)]
    folder = _published(tmp_path, pos=pos)
    path = os.path.join(folder, reddit.POSITIVE_FILE)
    lines = Path(path).read_bytes().split(b"\n")
    lines[3002] = lines[3002].replace(b"comment", b"caf\xe9 comment")  # line 3,003 of the file
    Path(path).write_bytes(b"\n".join(lines))
    with pytest.raises(RedditDataError, match=r"comments_positive\.csv:3003: not UTF-8"):
        _read_published(folder)


def test_published_csv_with_a_bom_reads(tmp_path):
    folder = _published(tmp_path)
    path = os.path.join(folder, reddit.POSITIVE_FILE)
    data = Path(path).read_bytes()
    Path(path).write_bytes(b"\xef\xbb\xbf" + data)
    comments, _ = _read_published(folder)
    assert len(comments) == reddit_dummy.EXPECTED["published"]["accepted"]
    assert comments[0].comment_id == "pos0"


@pytest.mark.parametrize("name", [reddit.POSITIVE_FILE, reddit.NEGATIVE_FILE, "train_idxs.json"])
def test_published_empty_file_is_named(tmp_path, name):
    folder = _published(tmp_path)
    Path(os.path.join(folder, name)).write_bytes(b"")
    with pytest.raises(RedditDataError, match=re.escape(name) + r".* is empty \(0 bytes\)"):
        _read_published(folder)


def test_published_truncated_csv_counts_the_cut_record_and_keeps_the_rest(tmp_path):
    folder = _published(tmp_path)
    path = os.path.join(folder, reddit.NEGATIVE_FILE)
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:data.rindex(b"\nnegempty") + 15])  # cut inside the last record
    comments, rejections = _read_published(folder)
    assert rejections == {"too_few_columns": 2, "non_integer_score": 1}  # the dummy's short row and the cut one
    assert len(comments) == reddit_dummy.EXPECTED["published"]["accepted"]


def test_published_megabyte_fields(tmp_path):
    pos = reddit_dummy.positives()
    pos[0][4] = "t" * MEGABYTE   # a long comment is data: kept byte for byte
    pos[1][5] = "9" * 10 + "x" * MEGABYTE  # a megabyte score: counted
    pos[2][5] = "9" * MEGABYTE              # a megabyte of digits is no 64-bit score either
    comments, rejections = _read_published(_published(tmp_path, pos=pos))
    assert comments[0].text == "t" * MEGABYTE
    assert rejections["non_integer_score"] == 3


def test_index_file_errors_are_short_and_located(tmp_path):
    folder = _published(tmp_path)
    path = os.path.join(folder, "eval_idxs.json")
    Path(path).write_text("[0,\n1,\n" + '"' + "z" * MEGABYTE + '"]')
    with pytest.raises(RedditDataError) as e:
        _read_published(folder)
    assert "eval_idxs.json, entry 2: not a record number" in short_message(e.value)
    Path(path).write_text("[0,\n1,\n}")
    with pytest.raises(RedditDataError, match=r"eval_idxs\.json:3: not JSON"):
        _read_published(folder)
    Path(path).write_text("[" + "1" * MEGABYTE + "]")
    with pytest.raises(RedditDataError) as e:
        _read_published(folder)
    assert "eval_idxs.json: not a JSON list of record numbers" in short_message(e.value)


def _quote_error(folder: str, line: int, before: str) -> str:
    """The error of reading ``folder`` once a ``"`` is put before ``before`` on ``line`` of the positives file."""
    path = Path(folder, reddit.POSITIVE_FILE)
    lines = path.read_text(encoding="utf-8").split("\n")
    assert before in lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(before, '"' + before, 1)
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(RedditDataError) as e:
        _read_published(folder)
    return str(e.value)


def test_an_unclosed_quote_is_reported_at_its_own_line_not_against_an_index_file(tmp_path):
    message = _quote_error(_published(tmp_path), 12, "good comment number 8")  # a quote opened, never closed
    assert re.match(r".*comments_positive\.csv:12: a quoted field opened on this line is never closed: the csv "
                    r"module would read the \d+ lines after it", message), message


def test_a_quote_closed_too_late_points_at_the_record_that_swallowed_others(tmp_path):
    pos = [reddit_dummy.row(f"p{i}", f"comment {i}", 1, "parent") for i in range(12)]
    pos[9][4] = "two\nlines"  # a quoted text, as published
    message = _quote_error(_published(tmp_path, pos=pos), 2, "comment 0")  # closed by line 11's opening quote
    assert re.search(r"_idxs\.json: entry \d+ is \d+, but the CSV pair holds \d+ records; .*records ran together: "
                     r"the record at \S*comments_positive\.csv:2 spans \d+ lines", message), message


def test_an_index_file_nested_too_deep_is_an_error_naming_it(tmp_path):
    folder = _published(tmp_path)
    Path(folder, "train_idxs.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(RedditDataError) as e:
        _read_published(folder)
    assert "train_idxs.json: not a JSON list of record numbers: \"nested deeper than Python's JSON decoder" \
        in short_message(e.value)
