"""Damaged input, said once: where (file, line, record, field) and what (the bad value, shortened).

Every reader of raw data (Reddit CSVs and dumps, VisDial JSON and HDF5, word lists, answer tables, tweets)
reports a file it cannot read through ``input_error``, so each message names the file and the place in it
and never echoes a megabyte of bad value: ``shorten`` cuts a value to ``VALUE_LIMIT`` characters and says
its full length. ``decoded_lines`` turns the bytes of a file into numbered text lines and names the exact
line of a byte that is not UTF-8 (a text wrapper's buffered decoding cannot); ``require_nonempty`` names a
0-byte input before it becomes an empty dataset. A UTF-8 byte-order mark at the start of a file is not
data and is dropped. No TensorFlow.

Example::

    raise input_error(MyDataError, "words.txt", "not a five-letter word", line=3, value=line)
    # MyDataError("words.txt:3: not a five-letter word: 'abcdefg'")
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable, Iterator

#: characters of a bad value echoed in a message (the rest is replaced by its length).
VALUE_LIMIT = 80
_BOM = b"\xef\xbb\xbf"
_LONE_CR = re.compile(rb"(?<=\r)(?!\n|$)")
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


def _split_lone_cr(line: bytes) -> list[bytes]:
    """A line split after every ``\\r`` not followed by ``\\n`` (old Mac line ends count as lines)."""
    return _LONE_CR.split(line) if b"\r" in line else [line]


def decoded_lines(chunks: Iterable[bytes], path: str | os.PathLike,
                  error_cls: type[Exception]) -> Iterator[tuple[int, str]]:
    """``(line number, text with its line end)`` of a byte stream given as chunks (a binary file iterates
    as lines, which are chunks too). A leading UTF-8 byte-order mark is dropped; a line that is not UTF-8
    raises ``error_cls`` naming ``path``, the line and the byte's column."""
    number, tail, first = 0, b"", True
    for chunk in chunks:
        pieces = (tail + chunk).split(b"\n")
        tail = pieces.pop()
        for piece in pieces:
            for line in _split_lone_cr(piece + b"\n"):
                number += 1
                yield number, _decode(line, number, first, path, error_cls)
                first = False
    if tail:
        for line in _split_lone_cr(tail):
            number += 1
            yield number, _decode(line, number, first, path, error_cls)
            first = False


def _decode(line: bytes, number: int, first: bool, path: str | os.PathLike, error_cls: type[Exception]) -> str:
    if first and line.startswith(_BOM):
        line = line[len(_BOM):]
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise input_error(error_cls, path, f"not UTF-8 at byte {e.start + 1} of the line "
                          f"({line[e.start:e.start + 4]!r}; the file must be UTF-8)", line=number) from None


def read_lines(path: str | os.PathLike, error_cls: type[Exception], what: str = "file") -> Iterator[tuple[int, str]]:
    """``decoded_lines`` of a text file, after ``require_nonempty``."""
    require_nonempty(path, error_cls, what)
    with open(path, "rb") as f:
        yield from decoded_lines(f, path, error_cls)


__all__ = ["VALUE_LIMIT", "decoded_lines", "input_error", "location", "read_lines", "require_nonempty", "shorten"]
