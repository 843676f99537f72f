"""Shared Wordle results (the coloured-square text people tweet): parsing, rendering, and the tweets CSV.

``parse_share(text)`` finds the header ``Wordle <day> <n>/6`` (or ``X/6`` for a failed game, ``*`` after
it for hard mode; the day may carry a thousands separator, ``Wordle 1,234 3/6``) and the block of square
rows that follows, and returns a ``ShareGame`` -- or a ``Rejected`` value with a ``Reason`` when the text
is not a valid game. Data errors never raise.

Accepted squares: 🟩 green, 🟨 yellow, ⬛ and ⬜ absent (dark and light theme), and the high-contrast
🟧 green and 🟦 yellow. Variation selectors (U+FE0F/U+FE0E), zero-width joiners and spaces, ``\\r\\n``,
text around the grid and words typed after a row (``🟨⬛⬛⬛⬛ CRANE``) are tolerated; several rows on
one line separated by spaces count as separate rows. Other coloured squares or circles (🟥, 🟢, ...)
reject the game (``unknown_square``).

A valid game has 1-6 rows of five squares; a claimed ``n/6`` has exactly ``n`` rows, the last all green;
``X/6`` has six rows, none all green; an all-green row anywhere but last is rejected.

``read_tweets_csv(path, rejections)`` streams the Kaggle "Wordle Tweets" table (columns
``wordle_id,tweet_id,tweet_date,tweet_username,tweet_text``) and yields a ``TweetGame`` per valid row,
adding every rejected row to the ``rejections`` counter by reason. No TensorFlow here.

Example::

    >>> game = parse_share("Wordle 1,234 3/6*\\n\\n⬛🟨⬛⬛⬛\\n🟩🟩⬛⬛🟩\\n🟩🟩🟩🟩🟩")
    >>> game.day, game.claimed_result, game.hard_mode, game.rows[0]
    (1234, '3/6', True, (0, 1, 0, 0, 0))
    >>> parse_share("Wordle 210 2/6\\n🟩🟩🟩🟩🟩\\n🟩🟩🟩🟩🟩").reason.value
    'win_not_last'
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import logging
import os
import re
from typing import Iterator, Sequence

from rlds_lang.csv_records import csv_records
from rlds_lang.input_errors import shorten
from rlds_lang.wordle.game import BLACK, GREEN, YELLOW, pattern_id
from rlds_lang.wordle.words import WORD_LENGTH

MAX_ROWS = 6
CSV_COLUMNS = ("wordle_id", "tweet_id", "tweet_date", "tweet_username", "tweet_text")

#: square character -> colour, for every scheme people post.
SQUARE_COLOURS = {"🟩": GREEN, "🟧": GREEN, "🟨": YELLOW, "🟦": YELLOW, "⬛": BLACK, "⬜": BLACK}

#: colour schemes for ``share_text``: colour -> square.
SCHEMES: dict[str, dict[int, str]] = {
    "dark": {BLACK: "⬛", YELLOW: "🟨", GREEN: "🟩"},
    "light": {BLACK: "⬜", YELLOW: "🟨", GREEN: "🟩"},
    "high_contrast_dark": {BLACK: "⬛", YELLOW: "🟦", GREEN: "🟧"},
    "high_contrast_light": {BLACK: "⬜", YELLOW: "🟦", GREEN: "🟧"},
}

_INVISIBLE = dict.fromkeys(map(ord, "\ufe0f\ufe0e\u200d\u200b\u200c\u2060\ufeff"))
_HEADER = re.compile(r"wordle\s*#?\s*(?P<day>\d{1,3}(?:[,.'\u00a0\u202f]\d{3})+|\d+)\s+"
                     r"(?P<result>[1-6xX])\s*/\s*6(?P<hard>\*)?", re.IGNORECASE)


class Reason(str, enum.Enum):
    """Why a tweet (or CSV row) gave no game; the value is the key in rejection counts."""

    NO_HEADER = "no_header"                    # no "Wordle <day> <n>/6" header
    NO_ROWS = "no_rows"                        # a header but no square rows after it
    UNKNOWN_SQUARE = "unknown_square"          # a coloured square/circle that is no Wordle colour
    ROW_WIDTH = "row_width"                    # a row without exactly five squares
    TOO_MANY_ROWS = "too_many_rows"            # more than six rows
    WIN_NOT_LAST = "win_not_last"              # an all-green row followed by more rows
    RESULT_MISMATCH = "result_mismatch"        # n/6 or X/6 disagrees with the rows
    MALFORMED_CSV = "malformed_csv"            # a CSV record with missing/extra fields or a bad wordle_id
    DAY_MISMATCH = "day_mismatch"              # the wordle_id column disagrees with the header's day
    DUPLICATE_TWEET = "duplicate_tweet"        # a tweet id seen before in the same file
    DAY_NOT_IN_TABLE = "day_not_in_answer_table"    # use_true_word: the day has no answer in the table
    ANSWER_NOT_IN_LIST = "answer_not_in_word_list"  # use_true_word: the day's answer is not in the answer list
    NO_GUESS_FOR_ROW = "no_guess_for_row"      # use_true_word: a row no guess produces against the answer
    NO_CONSISTENT_ANSWER = "no_consistent_answer"   # any answer: no answer gives every row a guess


@dataclasses.dataclass(frozen=True)
class Rejected:
    """A text or record that is not a valid game: the reason and a human detail."""

    reason: Reason
    detail: str = ""


@dataclasses.dataclass(frozen=True)
class ShareGame:
    """One parsed shared result.

    Attributes:
      day: the Wordle day number from the header.
      result: claimed number of guesses, ``None`` for ``X/6`` (not solved).
      hard_mode: the header carried ``*``.
      rows: the colour rows, each five colours 0 (absent), 1 (yellow), 2 (green).
    """

    day: int
    result: int | None
    hard_mode: bool
    rows: tuple[tuple[int, ...], ...]

    @property
    def solved(self) -> bool:
        """Whether the player found the word."""
        return self.result is not None

    @property
    def claimed_result(self) -> str:
        """The header's result as written: ``"3/6"`` or ``"X/6"``."""
        return f"{self.result if self.solved else 'X'}/{MAX_ROWS}"

    @property
    def pattern_ids(self) -> tuple[int, ...]:
        """The rows as ``game.pattern_id`` integers."""
        return tuple(pattern_id(row) for row in self.rows)


def _row_tokens(line: str) -> list[tuple[int, ...]] | Rejected:
    """The square rows on one line (see the module docstring); ``[]`` if it does not start with a square."""
    rows: list[tuple[int, ...]] = []
    for token in line.split():
        row: list[int] = []
        for ch in token:
            if ch in SQUARE_COLOURS:
                row.append(SQUARE_COLOURS[ch])
            elif "\U0001f7e0" <= ch <= "\U0001f7eb":  # other coloured circles and squares
                return Rejected(Reason.UNKNOWN_SQUARE, f"{ch!r} (U+{ord(ch):04X}) is not a Wordle colour")
            else:
                break
        if row:
            rows.append(tuple(row))
        if len(row) < len(token):  # words after the squares: the rest of the line is text
            break
    return rows


def _grid(text: str) -> list[tuple[int, ...]] | Rejected:
    """The first block of consecutive square lines in ``text`` (blank lines before it are skipped)."""
    rows: list[tuple[int, ...]] = []
    for line in text.split("\n"):
        found = _row_tokens(line)
        if isinstance(found, Rejected):
            return found
        if found:
            rows.extend(found)
        elif rows:
            break
    return rows


def normalise(text: str) -> str:
    """Drops variation selectors and zero-width characters and turns ``\\r\\n``/``\\r`` into ``\\n``."""
    return text.translate(_INVISIBLE).replace("\r\n", "\n").replace("\r", "\n")


def parse_share(text: str) -> ShareGame | Rejected:
    """Parses one shared result (see the module docstring); never raises on bad data."""
    text = normalise(text)
    header = _HEADER.search(text)
    if header is None:
        return Rejected(Reason.NO_HEADER, "no 'Wordle <day> <n>/6' header")
    day = int(re.sub(r"\D", "", header["day"]))
    result = None if header["result"] in "xX" else int(header["result"])
    rows = _grid(text[header.end():])
    if isinstance(rows, Rejected):
        return rows
    if not rows:
        return Rejected(Reason.NO_ROWS, "no rows of squares after the header")
    for i, row in enumerate(rows):
        if len(row) != WORD_LENGTH:
            return Rejected(Reason.ROW_WIDTH, f"row {i + 1} has {len(row)} squares, expected {WORD_LENGTH}")
    if len(rows) > MAX_ROWS:
        return Rejected(Reason.TOO_MANY_ROWS, f"{len(rows)} rows, at most {MAX_ROWS}")
    wins = [i for i, row in enumerate(rows) if all(c == GREEN for c in row)]
    if wins and wins[0] != len(rows) - 1:
        return Rejected(Reason.WIN_NOT_LAST, f"row {wins[0] + 1} is all green but {len(rows)} rows follow the header")
    claimed = header.group("result").upper() + "/6"
    if result is None and (len(rows) != MAX_ROWS or wins):
        return Rejected(Reason.RESULT_MISMATCH, f"{claimed} needs {MAX_ROWS} rows without a win, got {len(rows)} "
                        f"rows{' ending in a win' if wins else ''}")
    if result is not None and (len(rows) != result or not wins):
        return Rejected(Reason.RESULT_MISMATCH, f"{claimed} needs {result} rows ending all green, got {len(rows)} "
                        f"rows{'' if wins else ' without a win'}")
    return ShareGame(day=day, result=result, hard_mode=header["hard"] is not None, rows=tuple(rows))


def share_text(day: int, rows: Sequence[Sequence[int]], hard_mode: bool = False, scheme: str = "dark",
               thousands: bool = True) -> str:
    """The text the game shares for these colour rows (inverse of ``parse_share``), e.g. for test data.

    >>> print(share_text(1234, [(0, 1, 0, 0, 0), (2, 2, 2, 2, 2)], scheme="high_contrast_light"))
    Wordle 1,234 2/6
    <BLANKLINE>
    ⬜🟦⬜⬜⬜
    🟧🟧🟧🟧🟧
    """
    squares = SCHEMES[scheme]
    solved = bool(rows) and all(c == GREEN for c in rows[-1])
    result = str(len(rows)) if solved else "X"
    day_text = f"{day:,}" if thousands else str(day)
    grid = "\n".join("".join(squares[int(c)] for c in row) for row in rows)
    return f"Wordle {day_text} {result}/6{'*' if hard_mode else ''}\n\n{grid}"


@dataclasses.dataclass(frozen=True)
class TweetGame:
    """A valid game from one CSV record: the tweet's identity and the parsed share (no username kept)."""

    tweet_id: str
    tweet_date: str
    game: ShareGame
    line: int


class TweetsCsvError(ValueError):
    """The tweets file itself is unusable (missing columns, not UTF-8); the message names file and line."""


def _csv_records(path: str) -> Iterator[tuple[int, list[str] | None, str]]:
    """``(first line, fields or None, error)`` per CSV record; bad quoting is a malformed record, not silently mended."""
    return csv_records(path, TweetsCsvError, strict=True)


#: the most digits a Wordle day number may have.
_DAY_DIGITS = 9


def _record_problem(fields: list[str], width: int, day_column: int) -> str:
    """Why a CSV record cannot be read as a tweet (``""`` if it can)."""
    if len(fields) != width:
        return f"{len(fields)} fields, expected {width}"
    if not fields[day_column].strip().isdigit() or len(fields[day_column].strip()) > _DAY_DIGITS:
        return f"wordle_id {shorten(fields[day_column])} is not a day number"
    return ""


def read_tweets_csv(path: str | os.PathLike, rejections: collections.Counter) -> Iterator[TweetGame]:
    """Streams the tweets table, yielding valid games and counting every rejected record by reason.

    Malformed records (wrong field count, a non-integer ``wordle_id``, csv syntax errors) are counted
    as ``malformed_csv`` and logged with their line number; nothing is dropped without a count.
    """
    path = os.fspath(path)
    records = _csv_records(path)
    first = next(records, None)
    if first is None or first[1] is None:
        raise TweetsCsvError(f"{path}: empty file or unreadable header; expected columns {','.join(CSV_COLUMNS)}")
    header = [name.strip().lstrip("\ufeff") for name in first[1]]
    missing = [c for c in CSV_COLUMNS if c not in header]
    if missing:
        raise TweetsCsvError(f"{path}:1: header lacks columns {missing}; expected {','.join(CSV_COLUMNS)}")
    col = {name: header.index(name) for name in CSV_COLUMNS}
    seen: set[str] = set()
    for line, fields, error in records:
        if fields is not None and not fields:
            continue  # a blank line between records
        problem = error or _record_problem(fields, len(header), col["wordle_id"])
        if problem:
            logging.warning("%s:%d: malformed record skipped (%s)", path, line, problem)
            rejections[Reason.MALFORMED_CSV.value] += 1
            continue
        parsed = parse_share(fields[col["tweet_text"]])
        tweet_id = fields[col["tweet_id"]].strip()
        if isinstance(parsed, Rejected):
            rejections[parsed.reason.value] += 1
        elif parsed.day != int(fields[col["wordle_id"]]):
            rejections[Reason.DAY_MISMATCH.value] += 1
        elif tweet_id in seen:
            rejections[Reason.DUPLICATE_TWEET.value] += 1
        else:
            seen.add(tweet_id)
            yield TweetGame(tweet_id, fields[col["tweet_date"]].strip(), parsed, line)


def rejection_report(rejections: collections.Counter, accepted: int) -> str:
    """A one-paragraph summary of the counts, e.g. for the build log."""
    total = accepted + sum(rejections.values())
    parts = ", ".join(f"{reason}: {n}" for reason, n in sorted(rejections.items()))
    return f"{accepted} of {total} records became games; rejected {sum(rejections.values())} ({parts or 'none'})"


__all__ = ["CSV_COLUMNS", "MAX_ROWS", "Reason", "Rejected", "SCHEMES", "SQUARE_COLOURS", "ShareGame", "TweetGame",
           "TweetsCsvError", "normalise", "parse_share", "read_tweets_csv", "rejection_report", "share_text"]
