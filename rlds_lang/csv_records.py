"""Streaming CSV records with their line numbers, for the readers of published tables (tweets, Reddit comments).

``csv_records(path, error_cls)`` yields ``(first line, fields or None, error)`` per record: a record the
``csv`` module cannot parse gives ``None`` and the error text (the caller counts it). A missing or 0-byte
file, or a line that is not UTF-8, raises ``error_cls`` naming the file and the exact line (lines are
decoded one at a time by ``rlds_lang.input_errors.decoded_lines``; a leading byte-order mark is dropped).
Fields may hold newlines and quotes; the field size limit is lifted (a long comment is data, not an error).
"""

from __future__ import annotations

import csv
import sys
from typing import Iterator

from rlds_lang.input_errors import read_lines


def csv_records(path: str, error_cls: type[Exception], strict: bool = True) -> Iterator[tuple[int, list[str] | None, str]]:
    """``(first line, fields or None, error)`` per CSV record of ``path`` (see the module docstring).

    ``strict`` makes bad quoting a malformed record instead of letting the csv module mend it.
    """
    csv.field_size_limit(sys.maxsize)
    reader = csv.reader((text for _, text in read_lines(path, error_cls, "CSV file")), strict=strict)
    line = 1
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            yield line, None, str(e)
        else:
            yield line, fields, ""
        line = reader.line_num + 1


__all__ = ["csv_records"]
