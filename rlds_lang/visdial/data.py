"""Reading Visual Dialogue data: dialogue JSON (v0.5 and v1.0), image-feature HDF5 and reward caches.

Published layouts (see ``../shared/REFERENCE_TASKS.md``, "Visual Dialogue"):

- v0.5 dialogues (``visdial_0.5_<split>.json``): a JSON list, one entry per image,
  ``{"image_id", "caption", "dialog": [{"question", "answer", "options", "gt_index"}, ...]}`` with the
  strings inline (questions without a trailing ``?``).
- v1.0 dialogues (``visdial_1.0_<split>.json``): ``{"data": {"questions": [...], "answers": [...],
  "dialogs": [{"image_id", "caption", "dialog": [{"question": int, "answer": int, ...}]}]}}``; strings by
  index into the two tables. Other top-level keys (``version``, ``split``) are ignored.
- Image features (``data_img.h5``): dataset ``images_<split>`` of shape [N, 4096]; row i belongs to
  dialogue i. Rows are read one at a time (``FeatureStore``), L2-normalised by default.
- Reward caches (``<split>_rank_reward_cache1.json`` percentile rank, ``<split>_reward_cache2.json``
  distance): a JSON list with one row of 11 floats ``[v0, d1 .. d10]`` per dialogue.

JSON lists are streamed element by element (``stream_json_array``), so a dialogue file is never held in
memory whole (v1.0's question and answer tables are, as every dialogue needs them). Every error names the
file and, where there is one, the dialogue index; JSON that names a key twice in one object, or nests deeper
than Python's decoder can follow, is an error too (``rlds_lang.input_errors.STRICT_JSON``). No TensorFlow.

Example::

    from rlds_lang.visdial.data import read_dialogues, FeatureStore, read_reward_cache

    for d in read_dialogues("manual/visdial_0.5_val.json", "val"):
        print(d.index, d.image_id, d.caption, d.questions[0], d.answers[0])

Size: the readers of the one published layout (dialogues in two versions, reward caches, image features) with
the streaming JSON cursor the dialogue and cache readers share and the error type all of them raise; the cursor
(about 120 lines) and ``FeatureStore`` are the parts that could live apart.
"""

from __future__ import annotations

import codecs
import dataclasses
import itertools
import json
import math
import os
from typing import Any, Iterator, Sequence

import numpy as np

from rlds_lang.input_errors import (
    STRICT_JSON,
    DuplicateKeyError,
    JsonNestingError,
    input_error,
    require_nonempty,
    shorten,
)

SPLITS = ("train", "val", "test")
#: rounds of a complete dialogue, and floats per reward-cache row (v0 plus one change per round).
ROUNDS = 10
CACHE_ROW = ROUNDS + 1
FEATURES_FILE = "data_img.h5"
CHUNK = 1 << 20


class VisDialDataError(ValueError):
    """Data that cannot be read as published; the message names the file and, if any, the dialogue index."""


def dialogue_file(split: str, version: str = "0.5") -> str:
    """The published dialogue file name of a split (``visdial_0.5_train.json``)."""
    return f"visdial_{version}_{split}.json"


def cache_file(split: str, kind: str) -> str:
    """The published reward-cache file name: ``kind`` ``rank`` (cache 1) or ``distance`` (cache 2)."""
    if kind == "rank":
        return f"{split}_rank_reward_cache1.json"
    if kind == "distance":
        return f"{split}_reward_cache2.json"
    raise ValueError(f"unknown reward-cache kind {kind!r}; expected 'rank' or 'distance'")


@dataclasses.dataclass(frozen=True)
class Dialogue:
    """One image's dialogue: ``index`` is its position in the split (= its feature row and cache row)."""

    split: str
    index: int
    image_id: int
    caption: str
    questions: tuple[str, ...]
    answers: tuple[str, ...]

    @property
    def rounds(self) -> int:
        """Number of question/answer rounds."""
        return len(self.questions)


# -- streaming JSON ---------------------------------------------------------------------------------
#: a JSON decoding error further than this from the end of the buffer cannot be caused by the buffer's end
#: (the longest token that can be cut, ``-Infinity`` or ``\\uXXXX\\uXXXX``, is shorter), except an
#: unterminated string, which needs more text.
_LOOKAHEAD = 16


class _Cursor:
    """A forward-only reader of a UTF-8 file that decodes one JSON value at a time (``json.raw_decode``).

    It knows where it is in the whole file (line, character, byte) for error messages, and which record it
    is in (``record``, set by ``array``). A syntax error is reported as soon as it is seen; only a value cut
    by the end of the buffer makes the buffer grow, and it grows geometrically, so a damaged file costs
    linear time like a valid one.
    """

    def __init__(self, handle, path: str):
        self.handle, self.path = handle, path
        self.buf, self.pos, self.eof = "", 0, False
        self.decoder = STRICT_JSON  # refuses a key given twice, and nesting too deep for Python, by name
        self.utf8 = codecs.getincrementaldecoder("utf-8-sig")()
        self.dropped_chars, self.dropped_lines, self.bytes_read = 0, 0, 0
        self.record: str | None = None
        self.bad_bytes = ""  # the problem of bytes that are not UTF-8, raised when the parser reaches them

    def _more(self) -> bool:
        if self.eof:
            return False
        if self.bad_bytes:  # the text before them is parsed: the error names the record they are in
            raise self.error(self.bad_bytes, len(self.buf))
        raw = self.handle.read(max(CHUNK, len(self.buf) - self.pos))
        try:
            chunk = self.utf8.decode(raw, final=not raw)
        except UnicodeDecodeError as e:
            start = self.bytes_read + e.start - (len(e.object) - len(raw))
            self.bad_bytes = f"not UTF-8 at byte {start:,} ({e.object[e.start:e.start + 4]!r})"
            chunk = e.object[:e.start].decode("utf-8")
        self.bytes_read += len(raw)
        if not raw:
            self.eof = True
            return False
        self.dropped_lines += self.buf.count("\n", 0, self.pos)
        self.dropped_chars += self.pos
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0
        return True

    def error(self, problem: str, at: int | None = None) -> VisDialDataError:
        """A ``VisDialDataError`` naming the file, the line and character of ``at`` (default: here) and the record."""
        at = self.pos if at is None else at
        line = self.dropped_lines + self.buf.count("\n", 0, at) + 1
        where = f"character {self.dropped_chars + at:,}" + (f", {self.record}" if self.record else "")
        return input_error(VisDialDataError, self.path, problem, line=line, record=where)  # type: ignore[return-value]

    def peek(self) -> str:
        """The next non-whitespace character ('' at the end of the file)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more():
                return ""

    def expect(self, chars: str) -> str:
        """Consumes one of ``chars``; a ``VisDialDataError`` otherwise."""
        c = self.peek()
        if not c or c not in chars:
            raise self.error(f"expected one of {chars!r}, got {shorten(c) if c else 'the end of the file'}")
        self.pos += 1
        return c

    def value(self) -> Any:
        """Decodes the next complete JSON value."""
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as e:
                cut = e.msg.startswith("Unterminated string") or e.pos >= len(self.buf) - _LOOKAHEAD
                if cut and self._more():
                    continue
                raise self.error(f"invalid JSON: {e.msg}", e.pos) from None
            except (DuplicateKeyError, JsonNestingError) as e:  # at the value that holds it
                raise self.error(f"invalid JSON: {e}") from None
            except ValueError as e:  # an integer of thousands of digits
                raise self.error(f"invalid JSON value: {shorten(str(e))}") from None
            if isinstance(value, (int, float)) and len(self.buf) - end < _LOOKAHEAD and self._more():
                continue  # a number may go on in the next chunk ("0." is read as 0 when ".5" is still to come)
            self.pos = end
            return value

    def array(self, item: str = "element") -> Iterator[Any]:
        """Yields the elements of the JSON array starting here; errors inside name ``f"{item} {i}"``."""
        self.expect("[")
        outer = self.record
        try:
            if self.peek() == "]":
                self.pos += 1
                return
            for i in itertools.count():
                self.record = f"{item} {i}"
                yield self.value()
                if self.expect(",]") == "]":
                    return
        finally:
            self.record = outer

    def finish(self) -> None:
        """Checks that only whitespace follows (a second value or garbage would otherwise go unread)."""
        self.record = None
        if self.peek():
            raise self.error(f"unexpected {shorten(self.buf[self.pos:self.pos + 40])} after the end of the JSON value")

    def object_keys(self) -> Iterator[str]:
        """Yields the keys of the JSON object starting here; the caller consumes each value. A key given twice is
        an error (which value is meant?)."""
        self.expect("{")
        if self.peek() == "}":
            self.pos += 1
            return
        seen: set[str] = set()
        while True:
            at = self.pos
            key = self.value()
            if key in seen:
                raise self.error(f"invalid JSON: duplicate key {shorten(key)} in one object", at)
            seen.add(key)
            self.expect(":")
            yield key
            if self.expect(",}") == "}":
                return


def _open_json(path: str, what: str):
    """The binary handle of a JSON file after ``require_nonempty`` (a 0-byte file is an error naming it)."""
    require_nonempty(path, VisDialDataError, what)
    return open(path, "rb")


def stream_json_array(path: str, item: str = "element", what: str = "JSON file") -> Iterator[Any]:
    """Yields the elements of the JSON list in ``path`` one at a time; errors name ``f"{item} {i}"``."""
    with _open_json(path, what) as f:
        cursor = _Cursor(f, path)
        yield from cursor.array(item)
        cursor.finish()


# -- dialogues --------------------------------------------------------------------------------------
def _field(entry: Any, name: str, path: str, index: int) -> Any:
    if not isinstance(entry, dict) or name not in entry:
        raise input_error(VisDialDataError, path, "missing", record=f"dialogue {index}", field=name)
    return entry[name]


def _text(value: Any, what: str, path: str, index: int) -> str:
    if not isinstance(value, str):
        raise input_error(VisDialDataError, path, "must be a string", record=f"dialogue {index}", field=what,
                          value=value)
    return value


def _dialogue(entry: Any, split: str, index: int, path: str, questions: Sequence[str] | None,
              answers: Sequence[str] | None) -> Dialogue:
    rounds = _field(entry, "dialog", path, index)
    if not isinstance(rounds, list) or len(rounds) > ROUNDS:
        raise input_error(VisDialDataError, path, f"must be a list of at most {ROUNDS} rounds", record=f"dialogue {index}",
                          field="dialog", value=rounds)
    qs, ans = [], []
    for r, turn in enumerate(rounds):
        q, a = _field(turn, "question", path, index), turn.get("answer")
        if questions is not None:  # v1.0: indices into the tables
            try:
                q, a = questions[q], answers[a]  # type: ignore[index]
            except (IndexError, TypeError):
                raise input_error(VisDialDataError, path, "question/answer index is not in the tables",
                                  record=f"dialogue {index}, round {r}",
                                  value=(turn.get("question"), turn.get("answer"))) from None
        if a is None:
            raise input_error(VisDialDataError, path, "missing", record=f"dialogue {index}, round {r}", field="answer")
        qs.append(_text(q, f"round {r} question", path, index))
        ans.append(_text(a, f"round {r} answer", path, index))
    image_id = _field(entry, "image_id", path, index)
    if isinstance(image_id, bool) or not isinstance(image_id, int):
        raise input_error(VisDialDataError, path, "must be an integer", record=f"dialogue {index}", field="image_id",
                          value=image_id)
    caption = _text(_field(entry, "caption", path, index), "caption", path, index)
    return Dialogue(split, index, image_id, caption, tuple(qs), tuple(ans))


def read_dialogues(path: str, split: str) -> Iterator[Dialogue]:
    """Streams the dialogues of one split's file, v0.5 (a list) or v1.0 (``{"data": {...}}``), detected.

    v1.0 needs its question and answer tables before the dialogues: when ``data.dialogs`` comes first in
    the file, a first pass reads the tables (skipping the dialogues one at a time) and a second pass
    streams the dialogues.
    """
    with _open_json(path, "dialogue file") as f:
        cursor = _Cursor(f, path)
        if cursor.peek() == "[":
            for i, entry in enumerate(cursor.array("dialogue")):
                yield _dialogue(entry, split, i, path, None, None)
            cursor.finish()
            return
    tables: dict[str, list[str]] = {}
    for streamed in (False, True):
        with open(path, "rb") as f:
            for inner, cursor in _v1_data_keys(_Cursor(f, path)):
                if inner in ("questions", "answers"):
                    tables[inner] = list(cursor.array(inner[:-1]))
                elif inner == "dialogs" and (streamed or len(tables) == 2):
                    if len(tables) < 2:
                        raise VisDialDataError(f"{path}: v1.0 'data' lacks the questions/answers tables")
                    for i, entry in enumerate(cursor.array("dialogue")):
                        yield _dialogue(entry, split, i, path, tables["questions"], tables["answers"])
                    return
                elif inner == "dialogs":
                    for _ in cursor.array("dialogue"):  # skipped now, streamed by the second pass
                        pass
                else:
                    cursor.value()
    raise VisDialDataError(f"{path}: neither a v0.5 list nor a v1.0 object with data.dialogs")


def _v1_data_keys(cursor: _Cursor) -> Iterator[tuple[str, _Cursor]]:
    """Yields ``(key, cursor)`` for each key of the v1.0 ``data`` object; the caller consumes each value."""
    for key in cursor.object_keys():
        if key != "data":
            cursor.value()
            continue
        for inner in cursor.object_keys():
            yield inner, cursor


def read_split(folder: str, split: str, version: str = "0.5") -> Iterator[Dialogue]:
    """The dialogues of ``split`` in a manual folder with the published file names."""
    return read_dialogues(os.path.join(folder, dialogue_file(split, version)), split)


# -- reward caches ----------------------------------------------------------------------------------
def read_reward_cache(path: str) -> Iterator[tuple[float, ...]]:
    """Streams the rows of a reward cache; each must be 11 finite numbers (errors name file and dialogue)."""
    for i, row in enumerate(stream_json_array(path, "dialogue", "reward cache")):
        if (not isinstance(row, list) or len(row) != CACHE_ROW
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in row)):
            raise input_error(VisDialDataError, path, f"a reward-cache row must be {CACHE_ROW} finite numbers "
                              "[v0, d1..d10]", record=f"dialogue {i}", value=row)
        yield tuple(float(v) for v in row)


def load_reward_cache(path: str, expected: int | None = None) -> list[tuple[float, ...]]:
    """Every row of a reward cache; with ``expected``, errors unless there is one row per dialogue."""
    rows = list(read_reward_cache(path))
    check_length(path, "reward-cache rows", len(rows), expected)
    return rows


def check_length(path: str, what: str, found: int, expected: int | None) -> None:
    """Raises ``VisDialDataError`` (naming ``path``) unless ``found == expected`` (``None``: no check)."""
    if expected is not None and found != expected:
        raise VisDialDataError(f"{path}: {found} {what} but the split has {expected} dialogues; "
                               "they must match one to one")


# -- image features ---------------------------------------------------------------------------------
class FeatureStore:
    """The image features of one split in the published HDF5 file, read lazily row by row.

    Args:
      path: the HDF5 file (``data_img.h5``).
      split: reads dataset ``images_<split>``.
      normalize: L2-normalise each row (the published default).
      expected: the number of dialogues of the split; the row count must equal it.
    """

    def __init__(self, path: str, split: str, normalize: bool = True, expected: int | None = None):
        import h5py

        require_nonempty(path, VisDialDataError, "image-feature file")
        self.path, self.split, self.normalize = path, split, bool(normalize)
        try:
            self._file = h5py.File(path, "r")
        except OSError as e:
            raise input_error(VisDialDataError, path, f"not a readable HDF5 file ({e})") from None
        name = f"images_{split}"
        self._data = self._dataset(name)
        if len(self._data.shape) != 2:
            self._file.close()
            raise VisDialDataError(f"{path}: {name} must be 2-D [N, dim], got shape {self._data.shape}")
        check_length(path, f"rows in {name}", self._data.shape[0], expected)

    def _dataset(self, name: str) -> Any:
        """The HDF5 dataset ``name``; ``VisDialDataError`` naming the file and the field when it is absent, a link
        to nothing, a group or anything else that is not a dataset (the file is closed then)."""
        import h5py

        try:
            present = sorted(self._file.keys())
            found = self._file.get(name) if name in present else None
        except (KeyError, OSError, RuntimeError, ValueError) as e:  # a link to a missing file, a damaged index
            self._file.close()
            raise input_error(VisDialDataError, self.path, f"cannot be opened ({e}); the file must hold images_<split> "
                              "of shape [N, 4096]", field=name) from None
        if not isinstance(found, h5py.Dataset):
            self._file.close()
            what = (f"no dataset {name!r}" if name not in present else
                    "a link whose target is not there" if found is None else f"a {type(found).__name__}, not a dataset")
            raise input_error(VisDialDataError, self.path, f"{what} (the file has {shorten(present)}); it must "
                              "hold images_<split> of shape [N, 4096]", field=name)
        return found

    def __len__(self) -> int:
        return int(self._data.shape[0])

    @property
    def dim(self) -> int:
        """Feature size (4096 in the published file)."""
        return int(self._data.shape[1])

    def __getitem__(self, index: int) -> np.ndarray:
        if not 0 <= index < len(self):
            raise VisDialDataError(f"{self.path}: dialogue {index} has no row in images_{self.split} "
                                   f"({len(self)} rows)")
        return self._finish(self._rows(index, index + 1)[0])

    def all(self) -> np.ndarray:
        """Every row, [N, dim] (for a ranking pool)."""
        return self._finish(self._rows(0, len(self)))

    def check_finite(self, block: int = 1024) -> None:
        """Reads every row, ``block`` rows at a time: a ``VisDialDataError`` names the first row (= dialogue)
        holding NaN or infinity, or a part of the file that cannot be read."""
        for start in range(0, len(self), block):
            self._rows(start, min(start + block, len(self)))

    def _rows(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` as float32; errors name the file, the dataset and the row."""
        try:
            rows = np.asarray(self._data[start:stop], dtype=np.float32)
        except (OSError, ValueError, TypeError) as e:
            raise input_error(VisDialDataError, self.path, f"cannot read rows {start}..{stop - 1} ({e})",
                              field=f"images_{self.split}") from None
        bad = ~np.isfinite(rows).all(axis=-1)
        if bad.any():
            row = start + int(np.argmax(bad))
            raise input_error(VisDialDataError, self.path, "NaN or infinite feature", record=f"dialogue {row}",
                              field=f"images_{self.split}")
        return rows

    def _finish(self, rows: np.ndarray) -> np.ndarray:
        return l2_normalize(rows) if self.normalize else rows

    def close(self) -> None:
        """Closes the HDF5 file."""
        self._file.close()


def l2_normalize(rows: np.ndarray) -> np.ndarray:
    """Rows divided by their L2 norm (a zero row stays zero)."""
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    return (rows / np.where(norms == 0, 1.0, norms)).astype(np.float32)


__all__ = ["CACHE_ROW", "FEATURES_FILE", "ROUNDS", "SPLITS", "Dialogue", "FeatureStore", "VisDialDataError",
           "cache_file", "check_length", "dialogue_file", "l2_normalize", "load_reward_cache", "read_dialogues",
           "read_reward_cache", "read_split", "stream_json_array"]
