"""Streaming CSV records with their line numbers, for the readers of published tables (tweets, Reddit comments).

``csv_records(path, error_cls)`` yields ``(first line, fields or None, error)`` per record: a record the
``csv`` module cannot parse gives ``None`` and the error text (the caller counts it), a file that is not
UTF-8 raises ``error_cls`` naming the file and line. Fields may hold newlines and quotes; the field size
limit is lifted (a long comment is data, not an error).
"""

from __future__ import annotations

import csv
import sys
from typing import Iterator


def csv_records(path: str, error_cls: type[Exception], strict: bool = True) -> Iterator[tuple[int, list[str] | None, str]]:
    """``(first line, fields or None, error)`` per CSV record of ``path`` (see the module docstring).

    ``strict`` makes bad quoting a malformed record instead of letting the csv module mend it.
    """
    csv.field_size_limit(sys.maxsize)
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f, strict=strict)
        line = 1
        while True:
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                yield line, None, str(e)
            except UnicodeDecodeError as e:
                raise error_cls(f"{path}: not UTF-8 near line {reader.line_num + 1}: {e}") from None
            else:
                yield line, fields, ""
            line = reader.line_num + 1


__all__ = ["csv_records"]
