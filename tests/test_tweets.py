"""Tests for rlds_lang.wordle.tweets: the share-text parser (every colour scheme, hard mode, X/6, noise,
every rejection reason) and the streaming CSV reader with its rejection counts."""

import collections
import csv

import pytest

from rlds_lang.wordle.tweets import (
    CSV_COLUMNS,
    SCHEMES,
    Reason,
    Rejected,
    ShareGame,
    TweetsCsvError,
    parse_share,
    read_tweets_csv,
    rejection_report,
    share_text,
)

ROWS = ((0, 1, 0, 0, 0), (2, 2, 0, 1, 2), (2, 2, 2, 2, 2))


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_every_colour_scheme_parses_to_the_same_rows(scheme):
    game = parse_share(share_text(210, ROWS, scheme=scheme))
    assert game == ShareGame(day=210, result=3, hard_mode=False, rows=ROWS)


@pytest.mark.parametrize("text, squares", [("⬛🟨🟩", (0, 1, 2)), ("⬜🟨🟩", (0, 1, 2)), ("⬛🟦🟧", (0, 1, 2)),
                                           ("⬜🟦🟧", (0, 1, 2))])
def test_square_meanings(text, squares):
    row = "".join(text[i] for i in (0, 1, 2, 0, 0))
    game = parse_share(f"Wordle 3 2/6\n{row}\n" + text[2] * 5)
    assert game.rows[0] == (squares[0], squares[1], squares[2], squares[0], squares[0])


def test_hard_mode_failed_game_and_claimed_result():
    rows = [(0, 1, 0, 0, 0)] * 6
    game = parse_share(share_text(7, rows, hard_mode=True))
    assert (game.hard_mode, game.solved, game.result, game.claimed_result) == (True, False, None, "X/6")
    assert parse_share("Wordle 7 x/6\n" + "⬛🟨⬛⬛⬛\n" * 6).claimed_result == "X/6"
    assert parse_share(share_text(7, ROWS)).claimed_result == "3/6"
    assert not parse_share(share_text(7, ROWS)).hard_mode


def test_noise_is_tolerated():
    text = ("Streak 12 🔥 Wordle\u00a01,234 3/6*\r\n\r\n⬛\ufe0f🟨\u200d⬛\ufe0f⬛⬛  \r\n🟩🟩⬛🟨🟩 SPEED\r\n"
            "  🟩🟩🟩🟩🟩\r\n\r\n#wordle https://example.org 🟥")
    game = parse_share(text)
    assert isinstance(game, ShareGame), game
    assert (game.day, game.result, game.hard_mode, game.rows) == (1234, 3, True, ROWS)
    assert parse_share("Wordle 1.234 1/6 🟩🟩🟩🟩🟩").day == 1234  # one line, European separator
    assert parse_share("WORDLE #12 2/6\n⬛🟨⬛⬛⬛ 🟩🟩🟩🟩🟩").rows == (ROWS[0], ROWS[2])  # rows on one line
    assert parse_share("I love Wordle! Wordle 5 1/6\n🟩🟩🟩🟩🟩").day == 5
    assert parse_share(share_text(99, ROWS)).pattern_ids == (3, 2 + 2 * 3 + 3**3 + 2 * 81, 242)


@pytest.mark.parametrize("text, reason", [
    ("Loving this game", Reason.NO_HEADER),
    ("Wordle 5 three/6\n🟩🟩🟩🟩🟩", Reason.NO_HEADER),
    ("Wordle 5 7/6\n🟩🟩🟩🟩🟩", Reason.NO_HEADER),
    ("Wordle 5 3/6 so close today", Reason.NO_ROWS),
    ("Wordle 5 2/6\n🟥🟨⬛⬛⬛\n🟩🟩🟩🟩🟩", Reason.UNKNOWN_SQUARE),
    ("Wordle 5 1/6\n🟢🟢🟢🟢🟢", Reason.UNKNOWN_SQUARE),
    ("Wordle 5 2/6\n⬛🟨⬛⬛\n🟩🟩🟩🟩🟩", Reason.ROW_WIDTH),
    ("Wordle 5 1/6\n🟩🟩🟩🟩🟩🟩", Reason.ROW_WIDTH),
    ("Wordle 5 2/6\n⬛🟨x⬛⬛\n🟩🟩🟩🟩🟩", Reason.ROW_WIDTH),  # junk inside a row
    ("Wordle 5 X/6\n" + "⬛🟨⬛⬛⬛\n" * 7, Reason.TOO_MANY_ROWS),
    ("Wordle 5 3/6\n🟩🟩🟩🟩🟩\n⬛🟨⬛⬛⬛\n🟩🟩🟩🟩🟩", Reason.WIN_NOT_LAST),
    ("Wordle 5 X/6\n" + "⬛🟨⬛⬛⬛\n" * 5 + "🟩🟩🟩🟩🟩", Reason.RESULT_MISMATCH),  # X/6 with a win
    ("Wordle 5 X/6\n⬛🟨⬛⬛⬛\n⬛🟨⬛⬛⬛", Reason.RESULT_MISMATCH),              # X/6 with 2 rows
    ("Wordle 5 4/6\n⬛🟨⬛⬛⬛\n🟩🟩🟩🟩🟩", Reason.RESULT_MISMATCH),             # 4/6 with 2 rows
    ("Wordle 5 2/6\n⬛🟨⬛⬛⬛\n⬛🟨⬛⬛⬛", Reason.RESULT_MISMATCH),              # n/6 without a win
])
def test_every_rejection_is_a_value_with_a_reason(text, reason):
    result = parse_share(text)
    assert isinstance(result, Rejected) and result.reason is reason, result
    assert result.detail


def _write_csv(path, rows, header=CSV_COLUMNS):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def test_csv_reader_streams_games_and_counts_every_rejection(tmp_path, caplog):
    path = tmp_path / "tweets.csv"
    good = share_text(210, ROWS)
    _write_csv(path, [
        ["210", "1", "2022-01-15", "alice", "Made it, phew, commas, \"quotes\"\n" + good],
        ["210", "2", "2022-01-15", "bob", "no game here"],
        ["211", "3", "2022-01-16", "carol", good],              # header says 210
        ["210", "1", "2022-01-15", "alice", good],              # duplicate tweet id
        ["abc", "4", "2022-01-15", "dave", good],               # malformed wordle_id
        ["210", "5", "2022-01-15"],                             # missing fields
        ["210", "6", "2022-01-15", "erin", share_text(210, [(2, 2, 2, 2, 2)] * 2)],
        ["210", "7", "2022-01-15", "frank", good.replace("\n", "\r\n")],
    ])
    with open(path, "a", encoding="utf-8") as f:
        f.write('\n210,8,2022-01-15,gina,"unterminated\n')
    counts = collections.Counter()
    games = list(read_tweets_csv(path, counts))
    assert [g.tweet_id for g in games] == ["1", "7"]
    assert games[0].game.rows == ROWS and games[0].tweet_date == "2022-01-15" and games[0].line == 2
    assert games[1].line == 29  # records span lines: each share text has five
    assert counts == {"no_header": 1, "day_mismatch": 1, "duplicate_tweet": 1, "malformed_csv": 3, "win_not_last": 1}
    assert "tweets.csv:19: malformed record skipped" in caplog.text  # the bad wordle_id, by line
    assert "tweets.csv:24: malformed record skipped (3 fields, expected 5)" in caplog.text
    report = rejection_report(counts, len(games))
    assert report.startswith("2 of 9 records became games; rejected 7") and "malformed_csv: 3" in report


def test_csv_reader_errors_name_the_file(tmp_path):
    bad_header = tmp_path / "bad.csv"
    _write_csv(bad_header, [["1", "2"]], header=("wordle_id", "tweet_id"))
    with pytest.raises(TweetsCsvError, match=r"bad\.csv:1: header lacks columns \['tweet_date'"):
        list(read_tweets_csv(bad_header, collections.Counter()))
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(TweetsCsvError, match=r"empty.csv: CSV file is empty \(0 bytes\)"):
        list(read_tweets_csv(empty, collections.Counter()))
    latin = tmp_path / "latin.csv"
    latin.write_bytes(",".join(CSV_COLUMNS).encode() + b"\n1,2,3,4,caf\xe9\n")
    with pytest.raises(TweetsCsvError, match="latin.csv:2: not UTF-8"):
        list(read_tweets_csv(latin, collections.Counter()))


def test_columns_in_any_order_and_bom(tmp_path):
    path = tmp_path / "t.csv"
    order = ("tweet_text", "tweet_username", "tweet_id", "wordle_id", "tweet_date")
    _write_csv(path, [[share_text(5, ROWS), "x", "42", "5", "2022-01-01"]], header=("\ufefftweet_text",) + order[1:])
    games = list(read_tweets_csv(path, collections.Counter()))
    assert [(g.tweet_id, g.game.day) for g in games] == [("42", 5)]
