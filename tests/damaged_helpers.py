"""What the ``tests/test_damaged_*.py`` files share: the 1 MB field they inject and the check that an error about
it stays short (the echoed value cut to ``rlds_lang.input_errors.VALUE_LIMIT`` characters).

Those files inject faults into every raw-data reader: truncation, wrong encoding, missing and extra columns, empty
files, 1 MB fields, malformed JSON (lines), a byte-order mark, duplicates, NaN features. Each damaged input must
either raise an error naming the file and the line, record or field (with any echoed value shortened), or be
counted as a rejection by reason with the rest kept."""

from __future__ import annotations

MEGABYTE = 1 << 20
#: the longest message an error about a 1 MB value may have (the value is cut to VALUE_LIMIT characters).
SHORT_MESSAGE = 600


def short_message(error: BaseException) -> str:
    """The error's message, checked to be short (no megabyte echoed)."""
    message = str(error)
    assert len(message) < SHORT_MESSAGE, message[:SHORT_MESSAGE]
    return message
