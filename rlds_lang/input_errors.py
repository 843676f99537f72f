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

import io
import itertools
import os
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


#: bytes decoded at a time by ``read_lines``.
CHUNK = 1 << 20


def decoded_lines(chunks: Iterable[bytes], path: str | os.PathLike,
                  error_cls: type[Exception]) -> Iterator[tuple[int, str]]:
    """``(line number, text with its line end)`` of a byte stream given as chunks of any size. Lines end at
    ``\\n``, ``\\r\\n`` or a lone ``\\r`` (as Python's text files with ``newline=""``). A leading UTF-8
    byte-order mark is dropped. A line that is not UTF-8 raises ``error_cls`` naming ``path``, the line and
    the byte's column, after every line before it was yielded.

    Whole blocks (up to the last ``\\n`` of what was read) are decoded at once; only a block holding a bad
    byte is looked at line by line, so the exact line costs nothing on good files.
    """
    number, pending, first = 0, [], True  # pending: the bytes after the last line end, in pieces
    for chunk in itertools.chain(chunks, [None]):
        if chunk is None:
            block, pending = b"".join(pending), []
        else:
            cut = chunk.rfind(b"\n") + 1
            if not cut:
                pending.append(chunk)
                continue
            block, pending = b"".join([*pending, chunk[:cut]]), [chunk[cut:]]
        if first and block.startswith(_BOM):
            block = block[len(_BOM):]
        first = False
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


__all__ = ["VALUE_LIMIT", "decoded_lines", "input_error", "location", "read_lines", "require_nonempty", "shorten"]
