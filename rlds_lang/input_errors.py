"""Damaged input, said once: where (file, line, record, field) and what (the bad value, shortened).

Every reader of raw data (Reddit CSVs and dumps, VisDial JSON and HDF5, word lists, answer tables, tweets)
reports a file it cannot read through ``input_error``, so each message names the file and the place in it
and never echoes a megabyte of bad value: ``shorten`` cuts a value to ``VALUE_LIMIT`` characters and says
its full length. ``decoded_lines`` turns the bytes of a file into numbered text lines and names the exact
line of a byte that is not UTF-8 (a text wrapper's buffered decoding cannot) and, given ``max_line_bytes``,
stops at the first line longer than that before holding it whole; ``require_nonempty`` names a 0-byte input
before it becomes an empty dataset. A UTF-8 byte-order mark at the start of a file is not data and is dropped.

JSON from raw data is decoded by ``STRICT_JSON`` (``loads_strict``): an object that names a key twice raises
``DuplicateKeyError`` (Python's decoder would keep the last value without a word), and nesting deeper than
Python's decoder can follow raises ``JsonNestingError`` instead of a ``RecursionError``; both are
``ValueError`` subclasses that the readers turn into their own located error or a counted rejection.
No TensorFlow.

Example::

    raise input_error(MyDataError, "words.txt", "not a five-letter word", line=3, value=line)
    # MyDataError("words.txt:3: not a five-letter word: 'abcdefg'")
"""

from __future__ import annotations

import io
import itertools
import json
import os
import re
from typing import Any, Iterable, Iterator

#: characters of a bad value echoed in a message (the rest is replaced by its length).
VALUE_LIMIT = 80
_BOM = b"\xef\xbb\xbf"
_UNSET = object()


def shorten(value: Any, limit: int = VALUE_LIMIT) -> str:
    """``repr(value)``, cut to ``limit`` characters and followed by the value's full length when longer."""
    text = repr(value)
    if len(text) <= limit:
        return text
    size = len(value) if isinstance(value, (str, bytes, list, tuple, dict)) else len(text)
    unit = "bytes" if isinstance(value, bytes) else "items" if isinstance(value, (list, tuple, dict)) else "chars"
    return f"{text[:limit]}... ({size:,} {unit})"


def location(path: str | os.PathLike, *, line: int | None = None, record: str | int | None = None,
             field: str | None = None) -> str:
    """``"path:3, dialogue 7, field 'score'"``: the file and its line (the editors' ``file:line``), then the
    record and the field, as far as they are known.

    ``record`` is a number (``record 7``) or a phrase naming the record (``"dialogue 7"``).
    """
    parts = [os.fspath(path) if line is None else f"{os.fspath(path)}:{line}"]
    if record is not None:
        parts.append(f"record {record:,}" if isinstance(record, int) else str(record))
    if field is not None:
        parts.append(f"field {field!r}")
    return ", ".join(parts)


def input_error(error_cls: type[Exception], path: str | os.PathLike, problem: str, *, line: int | None = None,
                record: str | int | None = None, field: str | None = None, value: Any = _UNSET) -> Exception:
    """An ``error_cls`` whose message is ``location(...)``, the problem, and the value shortened (if given)."""
    message = f"{location(path, line=line, record=record, field=field)}: {problem}"
    if value is not _UNSET:
        message += f": {shorten(value)}"
    return error_cls(message)


def require_nonempty(path: str | os.PathLike, error_cls: type[Exception], what: str = "file") -> None:
    """Raises ``error_cls`` naming ``path`` when it does not exist or holds 0 bytes."""
    if not os.path.exists(path):
        raise input_error(error_cls, path, f"{what} not found")
    if os.path.isfile(path) and os.path.getsize(path) == 0:
        raise input_error(error_cls, path, f"{what} is empty (0 bytes)")


class DuplicateKeyError(ValueError):
    """A JSON object names ``key`` twice (which value is meant is undefined; Python's decoder keeps the last)."""

    def __init__(self, key: str):
        super().__init__(f"duplicate key {shorten(key)} in one object")
        self.key = key


class JsonNestingError(ValueError):
    """JSON nested deeper than Python's decoder can follow (it would raise ``RecursionError``)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The object of ``pairs``; ``DuplicateKeyError`` naming the first key given twice."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return value


class StrictJSONDecoder(json.JSONDecoder):
    """A ``json.JSONDecoder`` that refuses duplicate keys (``DuplicateKeyError``) and reports nesting too deep
    for Python as ``JsonNestingError``; otherwise what ``json.loads`` returns."""

    def __init__(self) -> None:
        super().__init__(object_pairs_hook=_unique_keys)

    def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
        """``json.JSONDecoder.raw_decode`` with the two refusals above."""
        try:
            return super().raw_decode(s, idx)
        except RecursionError:
            raise JsonNestingError("nested deeper than Python's JSON decoder can follow") from None


#: the decoder of every JSON file or line read from raw data.
STRICT_JSON = StrictJSONDecoder()


def loads_strict(text: str) -> Any:
    """``json.loads(text)`` through ``STRICT_JSON`` (``DuplicateKeyError``, ``JsonNestingError``,
    ``json.JSONDecodeError``; all ``ValueError``)."""
    return STRICT_JSON.decode(text)


#: bytes decoded at a time by ``read_lines``.
CHUNK = 1 << 20


#: one line of a byte block: up to and with its end (``\\r\\n``, ``\\r`` or ``\\n``), or the unfinished rest.
_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def _check_lengths(block: bytes, limit: int | None, number: int, path: str | os.PathLike,
                   error_cls: type[Exception]) -> None:
    """Raises ``error_cls`` naming the first line of ``block`` longer than ``limit`` bytes (``number`` lines came
    before the block). Cheap when the block itself is no longer than the limit (the usual case)."""
    if limit is None or len(block) <= limit:
        return
    for k, match in enumerate(_LINE.finditer(block)):
        if match.end() - match.start() > limit:
            raise input_error(error_cls, path, f"line longer than {limit:,} bytes, the reader's max_line_bytes "
                              f"(stopped after reading {match.end() - match.start():,} bytes of it)",
                              line=number + k + 1)


def decoded_lines(chunks: Iterable[bytes], path: str | os.PathLike, error_cls: type[Exception],
                  max_line_bytes: int | None = None) -> Iterator[tuple[int, str]]:
    """``(line number, text with its line end)`` of a byte stream given as chunks of any size. Lines end at
    ``\\n``, ``\\r\\n`` or a lone ``\\r`` (as Python's text files with ``newline=""``). A leading UTF-8
    byte-order mark is dropped. A line that is not UTF-8 raises ``error_cls`` naming ``path``, the line and
    the byte's column, after every line before it was yielded. With ``max_line_bytes``, a line longer than
    that raises ``error_cls`` naming ``path`` and the line once that much of it (and at most one more chunk)
    was read, so memory stays bounded by the limit and the chunk size, never by the line; lines before it in
    the same block are not yielded.

    Whole blocks (up to the last ``\\n`` of what was read) are decoded at once; only a block holding a bad
    byte is looked at line by line, so the exact line costs nothing on good files.
    """
    number, pending, waiting, first = 0, [], 0, True  # pending: the bytes after the last line end, in pieces
    for chunk in itertools.chain(chunks, [None]):
        if chunk is None:
            block, pending = b"".join(pending), []
        else:
            cut = chunk.rfind(b"\n") + 1
            if not cut:
                pending.append(chunk)
                waiting += len(chunk)
                if max_line_bytes is not None and waiting > max_line_bytes:
                    pending = [b"".join(pending)]
                    _check_lengths(pending[0], max_line_bytes, number, path, error_cls)
                continue
            block, pending, waiting = b"".join([*pending, chunk[:cut]]), [chunk[cut:]], len(chunk) - cut
        if first and block.startswith(_BOM):
            block = block[len(_BOM):]
        first = False
        _check_lengths(block, max_line_bytes, number, path, error_cls)
        try:
            text = block.decode("utf-8")
        except UnicodeDecodeError as e:
            for line in io.StringIO(block[:e.start].decode("utf-8"), newline=""):
                if not line.endswith(("\n", "\r")):  # the start of the bad line
                    break
                number += 1
                yield number, line
            column = e.start - max(block.rfind(b"\n", 0, e.start), block.rfind(b"\r", 0, e.start))
            raise input_error(error_cls, path, f"not UTF-8 at byte {column} of the line "
                              f"({block[e.start:e.start + 4]!r}; the file must be UTF-8)", line=number + 1) from None
        for line in io.StringIO(text, newline=""):
            number += 1
            yield number, line


def read_lines(path: str | os.PathLike, error_cls: type[Exception], what: str = "file") -> Iterator[tuple[int, str]]:
    """``decoded_lines`` of a text file, after ``require_nonempty``."""
    require_nonempty(path, error_cls, what)
    with open(path, "rb") as f:
        yield from decoded_lines(iter(lambda: f.read(CHUNK), b""), path, error_cls)


__all__ = ["STRICT_JSON", "VALUE_LIMIT", "DuplicateKeyError", "JsonNestingError", "StrictJSONDecoder",
           "decoded_lines", "input_error", "loads_strict", "location", "read_lines", "require_nonempty", "shorten"]
