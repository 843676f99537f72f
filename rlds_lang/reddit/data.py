"""Reading Reddit comments: the published CSV pair with its index splits, and Reddit's own comment dumps.

Published layout (the ILQL paper's, a Kaggle "reddit comment score prediction" export): a folder with
``comments_positive.csv`` and ``comments_negative.csv``. Each file's first record is a header and is
checked against ``PUBLISHED_HEADER`` (a missing, renamed or moved column shifts every field, so it is an
error naming the file, the missing and the unexpected columns; columns after the published eleven are
allowed and not read) and skipped; records are numbered from 0 over the concatenation *positives first*, and
``train_idxs.json`` / ``eval_idxs.json`` / ``test_idxs.json`` are JSON lists of those numbers. Columns
are used by position, as the reference code does: 0 = comment id, 1 = parent id, 2 = subreddit id,
4 = the comment text, 5 = its score (an integer), 10 = the parent comment's text. Every record keeps
its number even when it is rejected (a blank line included), so the index files stay aligned with the
reference's numbering. A record with more fields than the header is rejected (``too_many_columns``): its
fields are shifted.

Reddit dump layout (pushshift-style ``RC_*`` files): one JSON object per line, plain or
Zstandard-compressed (``.zst``, streamed), with ``body``, ``score``, ``parent_id``, ``id``, ``link_id``
and ``subreddit``. A comment whose ``parent_id`` starts with ``t1_`` answers another comment: its parent
text is that comment's ``body``, looked up in every dump file of the build (rejected as
``parent_not_in_dump`` when none holds it). A ``t3_`` parent is the post itself, whose text a comment dump does not hold: the parent
text is then ``""`` (the environment shows an empty observation, as with ``include_parent=False``).
Splits of a dump come from a stable hash of the comment id (``hash_split``). The dumps are read three
times (ids referenced as parents, their bodies, then the comments), so memory holds only parent texts
and the ids of accepted comments: a comment whose id was already accepted (the same comment in two dump
files, or twice in one) is dropped and counted as ``duplicate_comment``; a line whose object names a key twice
(which value is meant?) as ``duplicate_key``. A ``.zst`` file that ends inside a Zstandard frame (a truncated
download) or is corrupt is an error naming the file, as is a 0-byte file, a line that is not UTF-8 (with its
line number) or a line longer than ``max_line_bytes`` (``MAX_DUMP_LINE_BYTES`` by default; found without
holding the line whole, and ``.zst`` files are decompressed a megabyte at a time, so memory stays bounded
whatever a file holds).

Every rejected record is counted by reason in a ``collections.Counter`` the caller passes (the keys are
``Reason`` values) and logged with its file and line; nothing is dropped without a count. No TensorFlow.

Example::

    import collections
    from rlds_lang.reddit.data import read_published

    rejections = collections.Counter()
    for comment in read_published("manual_dir", rejections):
        print(comment.split, comment.score, comment.text[:40])
    print(rejection_report(rejections, accepted=...))

Size: both sources of one comment record (the published CSV pair and the dumps) with the record, the rejection
reasons and the score parsing they share, and ``read_folder``, which chooses between them; the dump reader
(about 140 lines) is the part that could live apart.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import hashlib
import json
import logging
import os
from typing import Any, Iterator, Mapping

from rlds_lang.csv_records import csv_records
from rlds_lang.input_errors import (
    DuplicateKeyError,
    decoded_lines,
    input_error,
    loads_strict,
    read_lines,
    require_nonempty,
    shorten,
)
from rlds_lang.reddit.zstd_stream import zstd_chunks

POSITIVE_FILE = "comments_positive.csv"
NEGATIVE_FILE = "comments_negative.csv"
SPLITS = ("train", "eval", "test")
#: the index file of each split in the published layout.
INDEX_FILES = {split: f"{split}_idxs.json" for split in SPLITS}
#: column positions of the published CSVs (the reference code reads text, score and parent text by position).
COLUMNS = {"id": 0, "parent_id": 1, "subreddit_id": 2, "text": 4, "score": 5, "parent_text": 10}
MIN_COLUMNS = max(COLUMNS.values()) + 1
#: the published files' first columns, in order (the reference reads them by position); more may follow.
PUBLISHED_HEADER = ("id", "parent_id", "subreddit_id", "link_id", "text", "score", "ups", "author",
                    "controversiality", "parent_link_id", "parent_text")
#: the fields a dump record needs.
DUMP_FIELDS = ("body", "score", "parent_id", "id", "link_id", "subreddit")
#: the most digits a score may have (a 64-bit integer has 19).
_SCORE_DIGITS = 20
#: bodies Reddit puts in place of a removed comment's text.
DELETED_BODIES = ("[deleted]", "[removed]")


class Reason(str, enum.Enum):
    """Why a record gave no comment; the value is the key in rejection counts."""

    TOO_FEW_COLUMNS = "too_few_columns"        # a CSV record (or blank line) with fewer than 11 fields
    TOO_MANY_COLUMNS = "too_many_columns"      # a CSV record with more fields than its file's header
    NON_INTEGER_SCORE = "non_integer_score"    # the score is not an integer
    EMPTY_TEXT = "empty_text"                  # the comment text is empty or only whitespace
    MALFORMED_CSV = "malformed_csv"            # the csv module cannot parse the record
    NOT_IN_SPLIT = "not_in_split"              # a published record no index file names
    INVALID_JSON = "invalid_json"              # a dump line that is no JSON object
    MISSING_FIELD = "missing_field"            # a dump record lacking one of DUMP_FIELDS
    DELETED_TEXT = "deleted_text"              # a dump body "[deleted]" / "[removed]"
    PARENT_NOT_IN_DUMP = "parent_not_in_dump"  # a t1_ parent no dump file of the build contains
    DUPLICATE_COMMENT = "duplicate_comment"    # a dump comment whose id was already accepted
    DUPLICATE_KEY = "duplicate_key"            # a dump line whose JSON object names a key twice


class RedditDataError(ValueError):
    """The data cannot be read at all (missing file, bad index file); the message names the file."""


@dataclasses.dataclass(frozen=True)
class RedditComment:
    """One comment with its parent's text.

    Attributes:
      index: number of the record (published layout: over positives then negatives; dumps: line order).
      comment_id: Reddit's id (published: column 0; ``row<index>`` when that column is empty).
      parent_id: Reddit's parent id (``t1_...`` a comment, ``t3_...`` the post).
      subreddit: subreddit name (dumps) or id (published layout, column 2).
      text: the comment, exactly as stored.
      score: its Reddit score.
      parent_text: the parent comment's text (``""`` for a post parent in dumps).
      split: ``train``, ``eval`` or ``test``.
      source: ``file:line`` where the record starts.
    """

    index: int
    comment_id: str
    parent_id: str
    subreddit: str
    text: str
    score: int
    parent_text: str
    split: str
    source: str


def rejection_report(rejections: Mapping[str, int], accepted: int) -> str:
    """A one-line summary of the counts, e.g. for the build log."""
    total = accepted + sum(rejections.values())
    parts = ", ".join(f"{reason}: {n}" for reason, n in sorted(rejections.items()))
    return f"{accepted} of {total} records became comments; rejected {sum(rejections.values())} ({parts or 'none'})"


def _parse_score(value: Any) -> int | None:
    """The score as an int, or None when it is not an integer of 64 bits (``"3"``, ``3`` and ``3.0`` are;
    ``"3.5"`` and a thousand-digit number are not)."""
    if isinstance(value, bool):
        return None
    score = None
    if isinstance(value, int):
        score = value
    elif isinstance(value, float):
        score = int(value) if value.is_integer() else None
    elif isinstance(value, str):
        text = value.strip()
        if text.lstrip("+-").isdigit() and len(text) <= _SCORE_DIGITS:
            score = int(text)
    return score if score is not None and -2 ** 63 <= score < 2 ** 63 else None


def _reject(rejections: collections.Counter, reason: Reason, where: str, detail: str = "") -> None:
    rejections[reason.value] += 1
    logging.debug("%s: record rejected (%s%s)", where, reason.value, f": {detail}" if detail else "")


# -- the published CSV pair --------------------------------------------------------------------------------------
def load_index_splits(folder: str | os.PathLike, size: int | None = None) -> dict[int, str]:
    """Record number -> split from the three index files of ``folder``.

    Raises ``RedditDataError`` naming the file when one is missing, not a JSON list of integers, names an
    index twice or an index ``>= size`` (when ``size`` is given).
    """
    split_of: dict[int, str] = {}
    for split, name in INDEX_FILES.items():
        path = os.path.join(os.fspath(folder), name)
        if not os.path.exists(path):
            raise RedditDataError(f"{path} not found: the published layout needs {', '.join(INDEX_FILES.values())}")
        text = "".join(line for _, line in read_lines(path, RedditDataError, "index file"))
        try:
            indices = loads_strict(text)
        except json.JSONDecodeError as e:
            raise input_error(RedditDataError, path, f"not JSON: {e.msg} (column {e.colno})", line=e.lineno) from None
        except ValueError as e:  # an integer of thousands of digits, nesting too deep
            raise input_error(RedditDataError, path, "not a JSON list of record numbers", value=str(e)) from None
        if not isinstance(indices, list):
            raise RedditDataError(f"{path}: expected a JSON list of record numbers, got {type(indices).__name__}")
        for k, i in enumerate(indices):
            if isinstance(i, bool) or not isinstance(i, int) or i < 0:
                raise input_error(RedditDataError, path, "not a record number (an integer >= 0)", record=f"entry {k}",
                                  value=i)
            if size is not None and i >= size:
                raise RedditDataError(f"{path}: entry {k} is {i}, but the CSV pair holds {size} records"
                                      f"{_run_together(os.fspath(folder))}")
            if i in split_of:
                raise RedditDataError(f"{path}: record {i} is also in {INDEX_FILES[split_of[i]]}")
            split_of[i] = split
    return split_of


def _run_together(folder: str) -> str:
    """A hint for CSV files that hold fewer records than their index files name: the record that spans the most
    lines (a quote closed too late makes records run together), or ``""`` when every record is one line."""
    where, span = "", 1
    for name in (POSITIVE_FILE, NEGATIVE_FILE):
        path, previous = os.path.join(folder, name), None
        for line, _, _ in csv_records(path, RedditDataError, strict=False):
            if previous is not None and line - previous > span:
                where, span = f"{path}:{previous}", line - previous
            previous = line
    if not where:
        return ""
    return (f"; if the CSV files should hold that many, records ran together: the record at {where} spans {span} "
            "lines (a quote that is not closed where it should be?)")


def _published_records(folder: str) -> Iterator[tuple[str, list[str] | None, str]]:
    """``(where, fields, error)`` of every data record, positives then negatives, headers checked and skipped.

    A record with more fields than its header gets the error ``too_many_columns``."""
    for name in (POSITIVE_FILE, NEGATIVE_FILE):
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            raise RedditDataError(f"{path} not found: the published layout needs {POSITIVE_FILE} and {NEGATIVE_FILE}")
        # not strict: the csv module mends bad quoting as the reference's csv.reader did, keeping record numbers aligned
        records = csv_records(path, RedditDataError, strict=False)
        width = len(check_published_header(path, next(records, None)))
        for line, fields, error in records:
            if fields is not None and len(fields) > width:
                fields, error = None, Reason.TOO_MANY_COLUMNS.value
            yield f"{path}:{line}", fields, error


def check_published_header(path: str, first: tuple[int, list[str] | None, str] | None) -> list[str]:
    """The header of a published CSV (``csv_records``' first record), or ``RedditDataError`` naming the file,
    the missing and the unexpected columns when its first columns are not ``PUBLISHED_HEADER``."""
    if first is None or first[1] is None:
        raise input_error(RedditDataError, path, f"no readable header; expected {','.join(PUBLISHED_HEADER)}", line=1)
    header = [name.strip() for name in first[1]]
    leading = header[:len(PUBLISHED_HEADER)]
    if tuple(leading) != PUBLISHED_HEADER:
        missing = [c for c in PUBLISHED_HEADER if c not in header]
        unexpected = [c for c in leading if c not in PUBLISHED_HEADER]
        moved = "" if missing or unexpected else "; the columns are all there but out of order"
        raise input_error(RedditDataError, path, f"header is not the published one: missing {missing}, unexpected "
                          f"{[shorten(c) for c in unexpected]}{moved}; the first columns must be "
                          f"{','.join(PUBLISHED_HEADER)} (fields are read by position)", line=1)
    return header


def _published_comment(index: int, where: str, fields: list[str], split: str,
                       rejections: collections.Counter) -> RedditComment | None:
    """The comment of one published record, or None after counting why it is rejected."""
    if len(fields) < MIN_COLUMNS:
        _reject(rejections, Reason.TOO_FEW_COLUMNS, where, f"{len(fields)} fields, need {MIN_COLUMNS}")
        return None
    score = _parse_score(fields[COLUMNS["score"]])
    if score is None:
        _reject(rejections, Reason.NON_INTEGER_SCORE, where, shorten(fields[COLUMNS["score"]]))
        return None
    text = fields[COLUMNS["text"]]
    if not text.strip():
        _reject(rejections, Reason.EMPTY_TEXT, where)
        return None
    return RedditComment(index, fields[COLUMNS["id"]].strip() or f"row{index}", fields[COLUMNS["parent_id"]].strip(),
                         fields[COLUMNS["subreddit_id"]].strip(), text, score, fields[COLUMNS["parent_text"]], split,
                         where)


def count_published_records(folder: str | os.PathLike) -> int:
    """How many data records (header excluded, blank lines included) the CSV pair holds."""
    return sum(1 for _ in _published_records(os.fspath(folder)))


def read_published(folder: str | os.PathLike, rejections: collections.Counter,
                   split_of: Mapping[int, str] | None = None) -> Iterator[RedditComment]:
    """Streams the published CSV pair of ``folder``, yielding valid comments and counting every rejected record.

    ``split_of`` (record number -> split) defaults to ``load_index_splits(folder)``; records no index file
    names are counted as ``not_in_split``.
    """
    folder = os.fspath(folder)
    if split_of is None:
        split_of = load_index_splits(folder, count_published_records(folder))
    for index, (where, fields, error) in enumerate(_published_records(folder)):
        if error:
            reason = Reason.TOO_MANY_COLUMNS if error == Reason.TOO_MANY_COLUMNS.value else Reason.MALFORMED_CSV
            _reject(rejections, reason, where, error)
            continue
        comment = _published_comment(index, where, fields, split_of.get(index, ""), rejections)
        if comment is None:
            continue
        if not comment.split:
            _reject(rejections, Reason.NOT_IN_SPLIT, where)
            continue
        yield comment


# -- Reddit's dumps ----------------------------------------------------------------------------------------------
def hash_split(comment_id: str, eval_fraction: float = 0.05, test_fraction: float = 0.05, salt: str = "reddit") -> str:
    """The split of a comment by a stable hash of its id: ``test`` below ``test_fraction``, then ``eval``, else ``train``.

    The position is the first 8 bytes of SHA-256(``salt:comment_id``) as a fraction of 2**64, so a comment
    keeps its split as the dump grows and on every machine.
    """
    digest = hashlib.sha256(f"{salt}:{comment_id}".encode("utf-8")).digest()
    u = int.from_bytes(digest[:8], "big") / 2.0 ** 64
    if u < test_fraction:
        return "test"
    if u < test_fraction + eval_fraction:
        return "eval"
    return "train"


#: bytes read (or decompressed) from a dump file at a time.
_DUMP_CHUNK = 1 << 20
#: the longest dump line read by default (a Reddit comment's JSON is a few KB; a body holds at most 10,000
#: characters). A longer line is an error naming the file and the line, found without holding the line whole:
#: a file whose line ends were lost would otherwise be one line of the whole file. ``max_line_bytes`` of the
#: readers (and of the ``reddit_comments`` build config) raises it.
MAX_DUMP_LINE_BYTES = 4 << 20


def _dump_lines(path: str, max_line_bytes: int | None = MAX_DUMP_LINE_BYTES) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of the non-blank lines of a newline-delimited dump, ``.zst`` decompressed as a
    stream; a missing, empty, truncated or non-UTF-8 file, or a line longer than ``max_line_bytes``, raises
    ``RedditDataError`` naming it."""
    require_nonempty(path, RedditDataError, "dump file")
    with open(path, "rb") as raw:
        chunks = zstd_chunks(raw, path, RedditDataError, _DUMP_CHUNK) if path.endswith(".zst") \
            else iter(lambda: raw.read(_DUMP_CHUNK), b"")
        for number, line in decoded_lines(chunks, path, RedditDataError, max_line_bytes):
            if line.strip():
                yield number, line


def _dump_objects(paths: list[str], rejections: collections.Counter | None,
                  max_line_bytes: int | None = MAX_DUMP_LINE_BYTES) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, record)`` of every dump line holding a JSON object with ``DUMP_FIELDS`` (others counted if asked:
    a key given twice in one object as ``duplicate_key``, JSON that does not parse, nests too deep or is no
    object as ``invalid_json``)."""
    for path in paths:
        for number, line in _dump_lines(path, max_line_bytes):
            where = f"{path}:{number}"
            try:
                record = loads_strict(line)
            except DuplicateKeyError as e:
                if rejections is not None:
                    _reject(rejections, Reason.DUPLICATE_KEY, where, str(e))
                continue
            except ValueError as e:  # a JSONDecodeError, nesting too deep, or an integer of thousands of digits
                if rejections is not None:
                    detail = f"{e.msg} at column {e.colno}" if isinstance(e, json.JSONDecodeError) else shorten(str(e))
                    _reject(rejections, Reason.INVALID_JSON, where, detail)
                continue
            if not isinstance(record, dict):
                if rejections is not None:
                    _reject(rejections, Reason.INVALID_JSON, where, "not an object")
                continue
            missing = [k for k in DUMP_FIELDS if k not in record]
            if missing:
                if rejections is not None:
                    _reject(rejections, Reason.MISSING_FIELD, where, f"lacks {missing}")
                continue
            yield where, record


def read_dumps(paths: list[str | os.PathLike], rejections: collections.Counter, eval_fraction: float = 0.05,
               test_fraction: float = 0.05, salt: str = "reddit",
               max_line_bytes: int | None = MAX_DUMP_LINE_BYTES) -> Iterator[RedditComment]:
    """Streams the Reddit comment dumps of one build (plain or ``.zst``), joining each comment to its parent's
    text found in any of them; comments are numbered over all files in order.

    Splits come from ``hash_split(id, eval_fraction, test_fraction, salt)``; see the module docstring for
    parents, duplicates and rejections. A line longer than ``max_line_bytes`` (``None``: no limit) is an error.
    """
    files = [os.fspath(p) for p in paths]
    wanted = {str(r["parent_id"])[3:] for _, r in _dump_objects(files, None, max_line_bytes)
              if str(r["parent_id"]).startswith("t1_")}
    parents: dict[str, str] = {}
    for _, r in _dump_objects(files, None, max_line_bytes):
        if str(r["id"]) in wanted:
            parents.setdefault(str(r["id"]), str(r["body"]))
    accepted: set[str] = set()
    for index, (where, record) in enumerate(_dump_objects(files, rejections, max_line_bytes)):
        score = _parse_score(record["score"])
        body = record["body"]
        parent_id = str(record["parent_id"])
        comment_id = str(record["id"])
        if score is None:
            _reject(rejections, Reason.NON_INTEGER_SCORE, where, shorten(record["score"]))
        elif not isinstance(body, str) or not body.strip():
            _reject(rejections, Reason.EMPTY_TEXT, where)
        elif body in DELETED_BODIES:
            _reject(rejections, Reason.DELETED_TEXT, where)
        elif parent_id.startswith("t1_") and parent_id[3:] not in parents:
            _reject(rejections, Reason.PARENT_NOT_IN_DUMP, where, shorten(parent_id))
        elif comment_id in accepted:
            _reject(rejections, Reason.DUPLICATE_COMMENT, where, shorten(comment_id))
        else:
            accepted.add(comment_id)
            parent_text = parents[parent_id[3:]] if parent_id.startswith("t1_") else ""
            yield RedditComment(index, comment_id, parent_id, str(record["subreddit"]), body, score, parent_text,
                                hash_split(comment_id, eval_fraction, test_fraction, salt), where)


def read_dump(path: str | os.PathLike, rejections: collections.Counter, eval_fraction: float = 0.05,
              test_fraction: float = 0.05, salt: str = "reddit",
              max_line_bytes: int | None = MAX_DUMP_LINE_BYTES) -> Iterator[RedditComment]:
    """``read_dumps`` of one file."""
    return read_dumps([path], rejections, eval_fraction, test_fraction, salt, max_line_bytes)


#: file name endings recognised as Reddit dumps in a folder.
DUMP_SUFFIXES = (".zst", ".ndjson", ".jsonl", ".json")


def find_dumps(folder: str | os.PathLike) -> list[str]:
    """The dump files of ``folder`` (names ending in ``DUMP_SUFFIXES``, index files excluded), sorted."""
    folder = os.fspath(folder)
    names = sorted(n for n in os.listdir(folder) if n.endswith(DUMP_SUFFIXES) and n not in INDEX_FILES.values())
    return [os.path.join(folder, n) for n in names]


def read_folder(folder: str | os.PathLike, rejections: collections.Counter, eval_fraction: float = 0.05,
                test_fraction: float = 0.05, salt: str = "reddit",
                max_line_bytes: int | None = MAX_DUMP_LINE_BYTES) -> Iterator[RedditComment]:
    """Comments of a folder in either layout: the published CSV pair when ``comments_positive.csv`` is there,
    else every dump file (``find_dumps``) in name order, read as one build (``read_dumps``), with hash splits."""
    folder = os.fspath(folder)
    if os.path.exists(os.path.join(folder, POSITIVE_FILE)):
        yield from read_published(folder, rejections)
        return
    dumps = find_dumps(folder) if os.path.isdir(folder) else []
    if not dumps:
        raise RedditDataError(f"{folder}: neither {POSITIVE_FILE} + {NEGATIVE_FILE} (+ *_idxs.json) nor a Reddit dump "
                              f"(a file ending in {', '.join(DUMP_SUFFIXES)})")
    yield from read_dumps(dumps, rejections, eval_fraction, test_fraction, salt, max_line_bytes)


__all__ = ["COLUMNS", "DUMP_FIELDS", "INDEX_FILES", "MAX_DUMP_LINE_BYTES", "NEGATIVE_FILE", "POSITIVE_FILE", "Reason",
           "RedditComment", "PUBLISHED_HEADER", "RedditDataError", "SPLITS", "check_published_header",
           "count_published_records", "find_dumps", "hash_split", "load_index_splits", "read_dump", "read_dumps",
           "read_folder", "read_published", "rejection_report"]
