"""Streaming CSV records with their line numbers, for the readers of published tables (tweets, Reddit comments).

``csv_records(path, error_cls)`` yields ``(first line, fields or None, error)`` per record: a record the
``csv`` module cannot parse gives ``None`` and the error text (the caller counts it). A missing or 0-byte
file, or a line that is not UTF-8, raises ``error_cls`` naming the file and the exact line (lines are
decoded one at a time by ``rlds_lang.input_errors.decoded_lines``; a leading byte-order mark is dropped).
Fields may hold newlines and quotes; the field size limit is lifted (a long comment is data, not an error).

A quote that is opened and never closed makes the csv module read the rest of the file as one field: every
record after it would vanish into one rejected (or, mended, accepted) record, and the damage would surface
somewhere else, if at all. When the lines such a field swallowed hold a record as wide as the header, the
quote is an error naming the file and the line where it opened. Otherwise it is a file cut inside its last
record (a truncated download), and that record gets an error like any malformed one.
"""

from __future__ import annotations

import csv
import sys
from typing import Iterator

from rlds_lang.input_errors import input_error, read_lines

#: a line put after the file's last one: read inside a field, it shows that a quote ran to the end of the file.
_END = "\ue000rlds-lang: end of the CSV file\ue000"


def csv_records(path: str, error_cls: type[Exception], strict: bool = True) -> Iterator[tuple[int, list[str] | None, str]]:
    """``(first line, fields or None, error)`` per CSV record of ``path`` (see the module docstring).

    ``strict`` makes bad quoting a malformed record instead of letting the csv module mend it.
    """
    csv.field_size_limit(sys.maxsize)
    current: list[str] = []  # the lines of the record being read
    ended = False  # whether every line of the file was read

    def source() -> Iterator[str]:
        nonlocal ended
        for _, text in read_lines(path, error_cls, "CSV file"):
            current.append(text)
            yield text
        ended = True
        yield _END + "\n"  # the csv module ends a record at the end of each string it is given

    reader = csv.reader(source(), strict=strict)
    line, width = 1, None
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            if ended:  # the end of the file came inside the record
                _refuse_swallowed(path, error_cls, line, current, width)
                yield line, None, f"a quoted field is not closed before the end of the file ({e})"
                return
            yield line, None, str(e)
        else:
            if fields == [_END]:
                return
            if ended and any(_END in field for field in fields):
                _refuse_swallowed(path, error_cls, line, current, width)
                yield line, None, "a quoted field is not closed before the end of the file"
                return
            width = len(fields) if width is None else width
            yield line, fields, ""
        current.clear()
        line = reader.line_num + 1


def _refuse_swallowed(path: str, error_cls: type[Exception], line: int, lines: list[str], width: int | None) -> None:
    """Raises ``error_cls`` when the ``lines`` after ``line`` that an unclosed quote swallowed hold a record as wide
    as the header (``width``): whole records would be lost in one field."""
    swallowed = [text for text in lines[1:] if _END not in text]
    if width is None or not swallowed:
        return
    whole = sum(1 for fields in csv.reader(swallowed) if len(fields) >= width)
    if whole:
        raise input_error(error_cls, path, f"a quoted field opened on this line is never closed: the csv module would "
                          f"read the {len(swallowed):,} lines after it, to the end of the file, as part of this one "
                          f"record, {whole:,} of them records of their own (a missing or stray '\"'?)", line=line)


__all__ = ["csv_records"]
