"""Fault injection into the Wordle tweets CSV reader (``rlds_lang.wordle.tweets``) and the ``wordle_tweets``
build: encoding, missing columns, empty and truncated files, 1 MB fields, damaged word lists and answer tables.
``docs/guides/damaged_input.md`` ("Wordle") describes what it does; this module checks it."""

from __future__ import annotations

import collections
import types

import pytest

from rlds_lang.wordle.retrofit import AnswerTableError
from rlds_lang.wordle.tweets import CSV_COLUMNS, TweetsCsvError, read_tweets_csv, share_text
from rlds_lang.wordle.words import WordListError
from tests.damaged_helpers import MEGABYTE


def _tweets(path, rows, header=CSV_COLUMNS):
    import csv

    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def _tweet(i: int, text: str | None = None) -> list[str]:
    return ["210", f"t{i}", "2022-01-15", "someone", share_text(210, ((0, 1, 0, 0, 0), (2, 2, 2, 2, 2))) if text is None
            else text]


def test_tweets_encoding_columns_empty_truncated_and_long_fields(tmp_path):
    path = tmp_path / "tweets.csv"
    _tweets(path, [_tweet(i) for i in range(3000)])
    data = path.read_bytes()
    at = data.index(b",t2500,")
    path.write_bytes(data[:at] + b",t\xe9" + data[at + 2:])
    line = data[:at].count(b"\n") + 1  # each tweet spans several lines
    assert line > 2500
    with pytest.raises(TweetsCsvError, match=rf"tweets\.csv:{line}: not UTF-8"):
        list(read_tweets_csv(path, collections.Counter()))

    _tweets(path, [_tweet(0)], header=CSV_COLUMNS[:-1])
    with pytest.raises(TweetsCsvError, match=r"tweets\.csv:1: header lacks columns \['tweet_text'\]"):
        list(read_tweets_csv(path, collections.Counter()))

    rows = [_tweet(0), _tweet(1) + ["extra"], ["2" * MEGABYTE] + _tweet(2)[1:], _tweet(3, "x" * MEGABYTE), _tweet(4)]
    _tweets(path, rows)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) - 30])  # the last record cut
    rejections = collections.Counter()
    games = list(read_tweets_csv(path, rejections))
    assert [g.tweet_id for g in games] == ["t0"]
    assert sum(rejections.values()) == 4 and rejections["malformed_csv"] == 3, rejections

    path.write_bytes(b"")
    with pytest.raises(TweetsCsvError, match=r"tweets\.csv: CSV file is empty \(0 bytes\)"):
        list(read_tweets_csv(path, collections.Counter()))


def test_wordle_tweets_build_names_a_damaged_word_list_answer_table_or_empty_tweets(tmp_path):
    from builders.wordle_tweets import wordle_tweets_dataset_builder as wtb

    (tmp_path / "answers.txt").write_bytes(b"cigar\nr\xe9but\n")
    with pytest.raises(WordListError, match=r"answers\.txt:2: not UTF-8"):
        wtb._word_list("answers.txt", tmp_path)
    _tweets(tmp_path / "tweets.csv", [])
    (tmp_path / "answers_by_day.csv").write_bytes(b"210,cigar\n211,r\xe9but\n")
    config = next(c for c in wtb.CONFIGS if c.name == "true_word")
    with pytest.raises(AnswerTableError, match=r"answers_by_day\.csv:2: not UTF-8"):
        wtb.retrofit_manual_dir(config, tmp_path)
    (tmp_path / "answers_by_day.csv").write_text("210,cigar\n")
    builder = wtb.Builder(config="true_word", data_dir=str(tmp_path / "out"))
    with pytest.raises(TweetsCsvError, match=r"tweets\.csv: no record became a game \(0 of 0 records"):
        builder._split_generators(types.SimpleNamespace(manual_dir=str(tmp_path)))


def test_a_quote_never_closed_is_an_error_at_its_line_not_one_malformed_record(tmp_path):
    path = tmp_path / "tweets.csv"
    _tweets(path, [_tweet(i, "a text on one line") for i in range(20)])  # no field needs quotes
    data = path.read_text(encoding="utf-8")
    at = data.index(",t5,")
    path.write_text(data[:at] + ',"t5,' + data[at + 4:], encoding="utf-8")  # opened, never closed
    line = data[:at].count("\n") + 1
    with pytest.raises(TweetsCsvError, match=rf"tweets\.csv:{line}: a quoted field opened on this line is never "
                                             r"closed: .* 14 of them records of their own"):
        list(read_tweets_csv(path, collections.Counter()))
