"""Fault injection into every raw-data reader: truncation, wrong encoding, missing and extra columns, empty
files, 1 MB fields, malformed JSON (lines), a byte-order mark, duplicates, NaN features.

Each damaged input must either raise an error naming the file and the line, record or field (with any
echoed value shortened), or be counted as a rejection by reason with the rest kept. ``docs/guides/damaged_input.md``
is the guide to what each reader does; this module checks it.
"""

from __future__ import annotations

import collections
import io
import json
import os
import re
import types
from pathlib import Path

import h5py
import numpy as np
import pytest

from builders.reddit_comments import make_dummy_data as reddit_dummy
from rlds_lang.input_errors import VALUE_LIMIT, decoded_lines, input_error, shorten
from rlds_lang.reddit import data as reddit
from rlds_lang.reddit.data import RedditDataError
from rlds_lang.visdial import data as visdial
from rlds_lang.visdial.data import FeatureStore, VisDialDataError
from rlds_lang.visdial.fixtures import write_fixture
from rlds_lang.wordle.retrofit import AnswerTableError, load_answer_table
from rlds_lang.wordle.tweets import (
    CSV_COLUMNS,
    TweetsCsvError,
    read_tweets_csv,
    share_text,
)
from rlds_lang.wordle.words import WordListError, load_word_list

MEGABYTE = 1 << 20
#: the longest message an error about a 1 MB value may have (the value is cut to VALUE_LIMIT characters).
SHORT_MESSAGE = 600


def _short(error: BaseException) -> str:
    """The error's message, checked to be short (no megabyte echoed)."""
    message = str(error)
    assert len(message) < SHORT_MESSAGE, message[:SHORT_MESSAGE]
    return message


# -- the shared helper ----------------------------------------------------------------------------------------
def test_shorten_cuts_long_values_and_gives_their_length():
    assert shorten("abc") == "'abc'"
    long = shorten("x" * MEGABYTE)
    assert long.startswith("'xxx") and long.endswith(f"... ({MEGABYTE:,} chars)") and len(long) < VALUE_LIMIT + 30
    assert shorten(list(range(100000))).endswith("(100,000 items)")


def test_input_error_names_file_line_record_field_and_value():
    error = input_error(ValueError, "f.csv", "bad score", line=7, record="record 3", field="score", value="y" * 500)
    assert str(error).startswith("f.csv:7, record 3, field 'score': bad score: 'yyy")
    assert "(500 chars)" in str(error)


def test_decoded_lines_counts_lines_across_chunks_and_drops_a_bom():
    chunks = [b"\xef\xbb\xbfab", b"c\r\nde", b"f\rgh\n", b"tail"]
    assert list(decoded_lines(chunks, "x", ValueError)) == [(1, "abc\r\n"), (2, "def\r"), (3, "gh\n"), (4, "tail")]
    with pytest.raises(ValueError, match=r"^x:3: not UTF-8 at byte 2"):
        list(decoded_lines([b"a\nb\n", b"c\xe9\n"], "x", ValueError))


@pytest.mark.parametrize("size", [1, 3, 7, 64, 1 << 20])
def test_decoded_lines_match_python_text_lines_whatever_the_chunk_size(size):
    text = "é one\r\ntwo\rthree\n\nfour 😀\r\n\rfive"
    data = text.encode("utf-8")
    chunks = [data[i:i + size] for i in range(0, len(data), size)]
    expected = list(enumerate(io.StringIO(text, newline=""), start=1))
    assert list(decoded_lines(chunks, "x", ValueError)) == expected
    bad = data.replace(b"four", b"fo\xffr")
    lines = []
    with pytest.raises(ValueError, match=r"^x:5: not UTF-8 at byte 3 of the line"):
        for number, line in decoded_lines([bad[i:i + size] for i in range(0, len(bad), size)], "x", ValueError):
            lines.append((number, line))
    assert lines == expected[:4]  # every line before the bad one


# -- Reddit: published CSV pair -------------------------------------------------------------------------------
def _published(folder, pos=None, neg=None, header=None):
    """A published folder with the dummy records (or ``pos``/``neg``) under ``header`` (default: the published)."""
    pos = reddit_dummy.positives() if pos is None else pos
    neg = reddit_dummy.negatives() if neg is None else neg
    reddit_dummy.write_published(str(folder), pos, neg, reddit_dummy.published_splits(len(pos) + len(neg)),
                                 reddit_dummy.HEADER if header is None else header)
    return str(folder)


def _read_published(folder):
    rejections = collections.Counter()
    return list(reddit.read_published(folder, rejections)), rejections


def test_published_csv_without_link_id_is_refused_naming_missing_and_unexpected_columns(tmp_path):
    header = [c for c in reddit_dummy.HEADER if c != "link_id"]
    pos = [r[:3] + r[4:] for r in reddit_dummy.positives() if len(r) > 3]
    neg = [r[:3] + r[4:] for r in reddit_dummy.negatives()]
    folder = _published(tmp_path, pos, neg, header)
    with pytest.raises(RedditDataError) as e:
        _read_published(folder)
    message = _short(e.value)
    assert re.search(r"comments_positive\.csv:1: header is not the published one: missing \['link_id'\], "
                     r"unexpected \[\"'parent_score'\"\]", message), message


def test_published_csv_with_an_extra_column_is_refused_naming_it(tmp_path):
    header = reddit_dummy.HEADER[:4] + ["flair"] + reddit_dummy.HEADER[4:]
    folder = _published(tmp_path, header=header)
    with pytest.raises(RedditDataError, match=r"comments_positive\.csv:1: .*missing \[\], unexpected \[\"'flair'\"\]"):
        _read_published(folder)


def test_published_csv_with_columns_swapped_is_refused(tmp_path):
    header = list(reddit_dummy.HEADER)
    header[4], header[5] = header[5], header[4]
    with pytest.raises(RedditDataError, match="out of order"):
        _read_published(_published(tmp_path, header=header))


def test_published_csv_trailing_columns_after_the_published_ones_are_allowed(tmp_path):
    comments, rejections = _read_published(_published(tmp_path, header=reddit_dummy.HEADER + ["more"]))
    assert len(comments) == reddit_dummy.EXPECTED["published"]["accepted"]
    assert rejections == reddit_dummy.EXPECTED["published"]["rejections"]


def test_published_record_with_more_fields_than_the_header_is_counted(tmp_path):
    pos = reddit_dummy.positives()
    pos[0] = pos[0][:4] + ["an, unquoted, comma"] + pos[0][4:]  # a shifted record
    comments, rejections = _read_published(_published(tmp_path, pos=pos))
    assert rejections["too_many_columns"] == 1
    assert len(comments) == reddit_dummy.EXPECTED["published"]["accepted"] - 1


def test_published_csv_not_utf8_names_the_exact_line(tmp_path):
    pos = [reddit_dummy.row(f"p{i}", f"comment {i}", 1, "parent") for i in range(3100)]
    folder = _published(tmp_path, pos=pos)
    path = os.path.join(folder, reddit.POSITIVE_FILE)
    lines = Path(path).read_bytes().split(b"\n")
    lines[3002] = lines[3002].replace(b"comment", b"caf\xe9 comment")  # line 3,003 of the file
    Path(path).write_bytes(b"\n".join(lines))
    with pytest.raises(RedditDataError, match=r"comments_positive\.csv:3003: not UTF-8"):
        _read_published(folder)


def test_published_csv_with_a_bom_reads(tmp_path):
    folder = _published(tmp_path)
    path = os.path.join(folder, reddit.POSITIVE_FILE)
    data = Path(path).read_bytes()
    Path(path).write_bytes(b"\xef\xbb\xbf" + data)
    comments, _ = _read_published(folder)
    assert len(comments) == reddit_dummy.EXPECTED["published"]["accepted"]
    assert comments[0].comment_id == "pos0"


@pytest.mark.parametrize("name", [reddit.POSITIVE_FILE, reddit.NEGATIVE_FILE, "train_idxs.json"])
def test_published_empty_file_is_named(tmp_path, name):
    folder = _published(tmp_path)
    Path(os.path.join(folder, name)).write_bytes(b"")
    with pytest.raises(RedditDataError, match=re.escape(name) + r".* is empty \(0 bytes\)"):
        _read_published(folder)


def test_published_truncated_csv_counts_the_cut_record_and_keeps_the_rest(tmp_path):
    folder = _published(tmp_path)
    path = os.path.join(folder, reddit.NEGATIVE_FILE)
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:data.rindex(b"\nnegempty") + 15])  # cut inside the last record
    comments, rejections = _read_published(folder)
    assert rejections == {"too_few_columns": 2, "non_integer_score": 1}  # the dummy's short row and the cut one
    assert len(comments) == reddit_dummy.EXPECTED["published"]["accepted"]


def test_published_megabyte_fields(tmp_path):
    pos = reddit_dummy.positives()
    pos[0][4] = "t" * MEGABYTE   # a long comment is data: kept byte for byte
    pos[1][5] = "9" * 10 + "x" * MEGABYTE  # a megabyte score: counted
    pos[2][5] = "9" * MEGABYTE              # a megabyte of digits is no 64-bit score either
    comments, rejections = _read_published(_published(tmp_path, pos=pos))
    assert comments[0].text == "t" * MEGABYTE
    assert rejections["non_integer_score"] == 3


def test_index_file_errors_are_short_and_located(tmp_path):
    folder = _published(tmp_path)
    path = os.path.join(folder, "eval_idxs.json")
    Path(path).write_text("[0,\n1,\n" + '"' + "z" * MEGABYTE + '"]')
    with pytest.raises(RedditDataError) as e:
        _read_published(folder)
    assert "eval_idxs.json, entry 2: not a record number" in _short(e.value)
    Path(path).write_text("[0,\n1,\n}")
    with pytest.raises(RedditDataError, match=r"eval_idxs\.json:3: not JSON"):
        _read_published(folder)
    Path(path).write_text("[" + "1" * MEGABYTE + "]")
    with pytest.raises(RedditDataError) as e:
        _read_published(folder)
    assert "eval_idxs.json: not a JSON list of record numbers" in _short(e.value)


# -- Reddit: dumps --------------------------------------------------------------------------------------------
def _dump_records(n: int, prefix: str = "c") -> list[str]:
    lines = []
    for i in range(n):
        parent = "t3_post" if i % 2 == 0 else f"t1_{prefix}{i - 1}"
        lines.append(json.dumps({"id": f"{prefix}{i}", "parent_id": parent, "link_id": "t3_post", "subreddit": "s",
                                 "body": f"comment {i} " + "word " * (i % 7), "score": i % 5 - 1}))
    return lines


def _read_dumps(paths):
    rejections = collections.Counter()
    return list(reddit.read_dumps(paths, rejections)), rejections


@pytest.mark.parametrize("fraction", [0.5, 0.99])
def test_truncated_zst_dump_is_an_error_naming_the_file(tmp_path, fraction):
    path = str(tmp_path / "RC_big.zst")
    reddit_dummy.write_dump(path, _dump_records(30000))
    assert len(_read_dumps([path])[0]) == 30000
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:int(len(data) * fraction)])
    with pytest.raises(RedditDataError, match=r"RC_big\.zst: truncated: the file ends inside a Zstandard frame"):
        _read_dumps([path])


def test_truncated_zst_of_many_frames_is_an_error(tmp_path):
    import zstandard

    path = tmp_path / "RC_frames.zst"
    frames = [zstandard.ZstdCompressor().compress(("\n".join(_dump_records(50, p)) + "\n").encode()) for p in "ab"]
    path.write_bytes(frames[0] + frames[1])
    assert len(_read_dumps([str(path)])[0]) == 100  # two whole frames read one after the other
    path.write_bytes(frames[0] + frames[1][:len(frames[1]) // 2])
    with pytest.raises(RedditDataError, match="truncated"):
        _read_dumps([str(path)])


def test_corrupt_zst_is_an_error_naming_the_file(tmp_path):
    path = tmp_path / "RC_bad.zst"
    reddit_dummy.write_dump(str(path), _dump_records(100))
    data = bytearray(path.read_bytes())
    data[:4] = b"\x00\x00\x00\x00"  # no Zstandard magic number
    path.write_bytes(bytes(data))
    with pytest.raises(RedditDataError, match=r"RC_bad\.zst: corrupt Zstandard data"):
        _read_dumps([str(path)])


def test_truncated_plain_dump_counts_the_cut_line(tmp_path):
    path = tmp_path / "RC.ndjson"
    reddit_dummy.write_dump(str(path), _dump_records(10))
    data = path.read_bytes()
    path.write_bytes(data[:len(data) - 20])
    comments, rejections = _read_dumps([str(path)])
    assert len(comments) == 9 and rejections == {"invalid_json": 1}


def test_dump_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "RC.zst"
    lines = _dump_records(5000)
    lines[4321] = lines[4321].replace("comment", "caf\udce9 comment")
    data = "".join(line + "\n" for line in lines).encode("utf-8", "surrogateescape")
    import zstandard

    path.write_bytes(zstandard.ZstdCompressor().compress(data))
    with pytest.raises(RedditDataError, match=r"RC\.zst:4322: not UTF-8"):
        _read_dumps([str(path)])


@pytest.mark.parametrize("name", ["RC.zst", "RC.ndjson"])
def test_empty_dump_is_named(tmp_path, name):
    (tmp_path / name).write_bytes(b"")
    with pytest.raises(RedditDataError, match=re.escape(name) + r": dump file is empty \(0 bytes\)"):
        list(reddit.read_folder(str(tmp_path), collections.Counter()))


def test_malformed_json_lines_and_megabyte_fields_are_counted(tmp_path):
    path = tmp_path / "RC.ndjson"
    lines = _dump_records(6)
    lines.insert(2, '{"id": "broken", ' + "x" * MEGABYTE)
    lines.insert(3, json.dumps({"id": "big", "parent_id": "t3_post", "link_id": "l", "subreddit": "s",
                                "body": "ok", "score": "1" + "z" * MEGABYTE}))
    lines.insert(4, json.dumps({"id": "long", "parent_id": "t3_post", "link_id": "l", "subreddit": "s",
                                "body": "b" * MEGABYTE, "score": 3}))
    lines.insert(5, "[1, 2]")
    lines.insert(6, '{"id": "digits", "score": ' + "7" * MEGABYTE + "}")
    reddit_dummy.write_dump(str(path), lines)
    comments, rejections = _read_dumps([str(path)])
    assert rejections == {"invalid_json": 3, "non_integer_score": 1}
    assert [c.comment_id for c in comments] == ["c0", "c1", "long", "c2", "c3", "c4", "c5"]
    assert comments[2].text == "b" * MEGABYTE


def test_duplicates_across_dump_files_are_dropped_and_counted(tmp_path):
    lines = _dump_records(8)
    for name in ("RC_1.ndjson", "RC_2.ndjson"):
        reddit_dummy.write_dump(str(tmp_path / name), lines)
    rejections = collections.Counter()
    comments = list(reddit.read_folder(str(tmp_path), rejections))
    assert [c.comment_id for c in comments] == [f"c{i}" for i in range(8)]
    assert rejections == {"duplicate_comment": 8}
    assert all(c.source.endswith(f"RC_1.ndjson:{i + 1}") for i, c in enumerate(comments))


def test_a_parent_in_another_dump_file_is_found(tmp_path):
    lines = _dump_records(6)
    reddit_dummy.write_dump(str(tmp_path / "RC_a.ndjson"), lines[1::2])  # the replies
    reddit_dummy.write_dump(str(tmp_path / "RC_b.zst"), lines[0::2])     # their parents
    rejections = collections.Counter()
    comments = {c.comment_id: c for c in reddit.read_folder(str(tmp_path), rejections)}
    assert not rejections and len(comments) == 6
    assert comments["c1"].parent_text == comments["c0"].text
    assert comments["c5"].parent_text == comments["c4"].text


def test_reddit_build_with_no_comment_is_an_error_with_the_counts(tmp_path):
    from builders.reddit_comments import reddit_comments_dataset_builder as rcb

    reddit_dummy.write_dump(str(tmp_path / "RC.ndjson"), ["{bad", "[]"])
    builder = rcb.Builder(config="upvotes_real", data_dir=str(tmp_path / "out"))
    with pytest.raises(RedditDataError, match=r"no record became a comment \(0 of 2 records.*invalid_json: 2"):
        builder._split_generators(types.SimpleNamespace(manual_dir=str(tmp_path)))


def test_reddit_build_of_a_truncated_dump_stops_naming_it(tmp_path):
    from builders.reddit_comments import reddit_comments_dataset_builder as rcb

    reddit_dummy.write_dump(str(tmp_path / "RC_a.ndjson"), _dump_records(100))
    path = tmp_path / "RC_b.zst"
    reddit_dummy.write_dump(str(path), _dump_records(3000, "d"))
    path.write_bytes(path.read_bytes()[:path.stat().st_size // 2])
    builder = rcb.Builder(config="upvotes_real", data_dir=str(tmp_path / "out"))
    with pytest.raises(RedditDataError, match=r"RC_b\.zst: truncated"):
        builder._split_generators(types.SimpleNamespace(manual_dir=str(tmp_path)))


# -- VisDial ---------------------------------------------------------------------------------------------------
SIZES = {"train": 3, "val": 2, "test": 2}


@pytest.fixture()
def vfolder(tmp_path):
    write_fixture(str(tmp_path), SIZES, dim=16)
    return str(tmp_path)


def _dialogues(path, split="val"):
    return list(visdial.read_dialogues(path, split))


def test_visdial_missing_split_file_is_an_error(vfolder):
    from builders.visdial import visdial_dataset_builder as vb

    os.remove(os.path.join(vfolder, "visdial_0.5_test.json"))
    builder = vb.Builder(config=vb.CONFIGS[0].name, data_dir=os.path.join(vfolder, "out"))
    with pytest.raises(VisDialDataError, match=r"missing visdial_0\.5_test\.json"):
        builder._split_generators(types.SimpleNamespace(manual_dir=vfolder))


def test_visdial_empty_split_and_nan_features_are_errors(vfolder):
    from builders.visdial import visdial_dataset_builder as vb

    config = vb.CONFIGS[0]
    dialogues, rows = vb.read_manual_split(vfolder, "val", config)
    assert len(dialogues) == len(rows) == 2
    with h5py.File(os.path.join(vfolder, visdial.FEATURES_FILE), "a") as h5:
        h5["images_val"][1, 3] = np.nan
    with pytest.raises(VisDialDataError, match=r"data_img\.h5, dialogue 1, field 'images_val': NaN or infinite"):
        vb.read_manual_split(vfolder, "val", config)
    Path(os.path.join(vfolder, "visdial_0.5_train.json")).write_text("[]")
    with pytest.raises(VisDialDataError, match=r"visdial_0\.5_train\.json: holds no dialogue"):
        vb.read_manual_split(vfolder, "train", config)


def test_visdial_feature_row_with_nan_is_refused_when_read(vfolder):
    with h5py.File(os.path.join(vfolder, visdial.FEATURES_FILE), "a") as h5:
        h5["images_train"][2, 0] = np.inf
    store = FeatureStore(os.path.join(vfolder, visdial.FEATURES_FILE), "train")
    assert store[0].shape == (16,)
    with pytest.raises(VisDialDataError, match="dialogue 2"):
        store[2]
    with pytest.raises(VisDialDataError, match="dialogue 2"):
        store.all()
    store.close()


@pytest.mark.parametrize("content", [b"", b"\x89HDF\r\n\x1a\n" + b"\x00" * 100, b"not hdf5 at all" * 50])
def test_visdial_damaged_hdf5_names_the_path(tmp_path, content):
    path = tmp_path / "data_img.h5"
    path.write_bytes(content)
    with pytest.raises(VisDialDataError, match=re.escape(str(path))):
        FeatureStore(str(path), "val")


def test_visdial_truncated_hdf5_names_the_path(vfolder):
    path = os.path.join(vfolder, visdial.FEATURES_FILE)
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:len(data) // 2])
    with pytest.raises(VisDialDataError, match=re.escape(path)):
        FeatureStore(path, "train").check_finite()


def test_visdial_json_error_location_is_in_the_whole_file(tmp_path, monkeypatch):
    monkeypatch.setattr(visdial, "CHUNK", 4096)
    entry = {"image_id": 1, "caption": "a caption", "dialog": [{"question": "is it", "answer": "yes"}] * 10}
    text = json.dumps(entry)
    body = ",\n".join([text] * 500)
    damaged = "[" + body + ",\n" + text[:40] + "}" + text[41:] + "]"  # dialogue 500 broken at its character 40
    path = tmp_path / "visdial_0.5_val.json"
    path.write_text(damaged)
    with pytest.raises(VisDialDataError) as e:
        _dialogues(str(path))
    expected_char = len("[" + body + ",\n") + 40
    assert f"visdial_0.5_val.json:501, character {expected_char:,}, dialogue 500: invalid JSON" in _short(e.value)


class _CountingFile:
    """A binary file that counts its reads and the bytes they returned."""

    def __init__(self, path):
        self.f = io.BytesIO(Path(path).read_bytes())
        self.reads = self.bytes = 0

    def read(self, n):
        """The next ``n`` bytes, counted."""
        data = self.f.read(n)
        self.reads += 1
        self.bytes += len(data)
        return data


def test_visdial_syntax_error_stops_reading_at_the_error(tmp_path, monkeypatch):
    """A syntax error is reported without reading the file to its end (the old reader grew its buffer to the
    end of the file, re-decoding it at every chunk: quadratic)."""
    monkeypatch.setattr(visdial, "CHUNK", 1024)
    entry = json.dumps({"image_id": 1, "caption": "c", "dialog": []})
    path = tmp_path / "v.json"
    path.write_text("[" + ",".join([entry] * 10) + ", {bad}, " + ",".join([entry] * 20000) + "]")
    counting = _CountingFile(path)
    with pytest.raises(VisDialDataError, match="dialogue 10: invalid JSON"):
        list(visdial._Cursor(counting, str(path)).array("dialogue"))
    assert counting.bytes <= 2 * 1024 < os.path.getsize(path) // 100


def test_visdial_long_value_grows_the_buffer_geometrically(tmp_path, monkeypatch):
    monkeypatch.setattr(visdial, "CHUNK", 1024)
    path = tmp_path / "v.json"
    caption = "w" * MEGABYTE
    path.write_text(json.dumps([{"image_id": 1, "caption": caption, "dialog": []}]))
    counting = _CountingFile(path)
    values = list(visdial._Cursor(counting, str(path)).array("dialogue"))
    assert values[0]["caption"] == caption
    assert counting.reads < 20  # 1 KiB, 1 KiB, 2 KiB, ... up to 1 MB: about log2(1024) reads, not 1,024


@pytest.mark.parametrize("chunk", range(2, 24))
def test_numbers_cut_by_a_chunk_end_are_read_whole(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(visdial, "CHUNK", chunk)
    numbers = [0.125, -1.5e-3, 2.0, 1e+2, 12345.678, -7, 0.5]
    path = tmp_path / "numbers.json"
    path.write_text(json.dumps(numbers))
    assert list(visdial.stream_json_array(str(path))) == numbers


def test_visdial_truncated_json_names_file_and_dialogue(vfolder):
    path = os.path.join(vfolder, "visdial_0.5_train.json")
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:int(len(data) * 0.6)])
    with pytest.raises(VisDialDataError, match=r"visdial_0\.5_train\.json:1, character [\d,]+, dialogue 1: invalid JSON"):
        _dialogues(path, "train")


@pytest.mark.parametrize("name", ["visdial_0.5_val.json", "visdial_1.0_val.json"])
def test_visdial_not_utf8_names_the_line(tmp_path, name):
    path = tmp_path / name
    text = json.dumps([{"image_id": 1, "caption": "c", "dialog": []}] * 3, indent=1).encode()
    path.write_bytes(text.replace(b'"c"', b'"caf\xe9"', 1))
    with pytest.raises(VisDialDataError, match=re.escape(name) + r":4, character 39, dialogue 0: not UTF-8 at byte 39"):
        _dialogues(str(path))


@pytest.mark.parametrize("tail, shown", [(b" [1]", "'[1]'"), (b"\n\xff\xfe", "not UTF-8"), (b"x" * MEGABYTE, "'xxx")])
def test_visdial_content_after_the_list_is_an_error(tmp_path, tail, shown):
    path = tmp_path / "visdial_0.5_val.json"
    path.write_bytes(json.dumps([{"image_id": 7, "caption": "c", "dialog": []}]).encode() + tail)
    with pytest.raises(VisDialDataError) as e:
        _dialogues(str(path))
    assert "visdial_0.5_val.json:" in _short(e.value) and shown in str(e.value)
    path = tmp_path / "val_reward_cache2.json"
    path.write_bytes(json.dumps([[0.5] * 11]).encode() + tail)
    with pytest.raises(VisDialDataError) as e:
        visdial.load_reward_cache(str(path))
    assert "val_reward_cache2.json:" in _short(e.value) and shown in str(e.value)


def test_visdial_bom_is_accepted_and_empty_file_named(tmp_path):
    path = tmp_path / "visdial_0.5_val.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([{"image_id": 7, "caption": "c", "dialog": []}]).encode())
    assert [d.image_id for d in _dialogues(str(path))] == [7]
    path.write_bytes(b"")
    with pytest.raises(VisDialDataError, match=r"visdial_0\.5_val\.json: dialogue file is empty \(0 bytes\)"):
        _dialogues(str(path))


def test_visdial_missing_and_megabyte_fields(tmp_path):
    path = tmp_path / "visdial_0.5_val.json"
    good = {"image_id": 1, "caption": "c" * MEGABYTE, "dialog": [{"question": "q", "answer": "a"}]}
    path.write_text(json.dumps([good, {**good, "image_id": "9" * MEGABYTE}]))
    with pytest.raises(VisDialDataError) as e:
        _dialogues(str(path))
    assert "dialogue 1, field 'image_id': must be an integer" in _short(e.value)
    path.write_text(json.dumps([good, {"image_id": 2, "caption": "c", "dialog": [{"question": "q"}]}]))
    with pytest.raises(VisDialDataError, match=r"dialogue 1, round 0, field 'answer': missing"):
        _dialogues(str(path))
    path.write_text(json.dumps([good]))
    assert _dialogues(str(path))[0].caption == "c" * MEGABYTE  # a long caption is data


def test_reward_cache_damage(tmp_path):
    path = tmp_path / "val_reward_cache2.json"
    path.write_bytes(b"")
    with pytest.raises(VisDialDataError, match=r"reward cache is empty \(0 bytes\)"):
        visdial.load_reward_cache(str(path))
    path.write_text(json.dumps([[0.0] * 11, [0.0] * 10 + ["x" * MEGABYTE]]))
    with pytest.raises(VisDialDataError) as e:
        visdial.load_reward_cache(str(path))
    assert "val_reward_cache2.json, dialogue 1: a reward-cache row must be 11 finite numbers" in _short(e.value)
    path.write_text("[[" + ",".join(["0.5"] * 10) + ", NaN]]")
    with pytest.raises(VisDialDataError, match="dialogue 0"):
        visdial.load_reward_cache(str(path))
    path.write_bytes(b"[[" + b",".join([b"0.5"] * 11) + b"],\n[0.1, \xff]]")
    with pytest.raises(VisDialDataError, match=r"val_reward_cache2\.json:2, character 54, dialogue 1: not UTF-8"):
        visdial.load_reward_cache(str(path))
    path.write_text("[[" + ",".join(["0.5"] * 10) + "," + "5" * MEGABYTE + "]]")
    with pytest.raises(VisDialDataError) as e:
        visdial.load_reward_cache(str(path))
    assert "val_reward_cache2.json:1, character 1, dialogue 0: invalid JSON value" in _short(e.value)
    path.write_text("[[" + ",".join(["0.5"] * 11) + "],\n[0.1,")
    with pytest.raises(VisDialDataError, match=r"val_reward_cache2\.json:2, character [\d,]+, dialogue 1: invalid JSON"):
        visdial.load_reward_cache(str(path))


# -- Wordle: word lists, answer tables, tweets ------------------------------------------------------------------
def _refuses(load, path, content: bytes, error_cls, pattern: str) -> None:
    """Writes ``content`` to ``path`` and checks that ``load(path)`` raises ``error_cls`` with a short message
    matching ``pattern``."""
    path.write_bytes(content)
    with pytest.raises(error_cls) as e:
        load(path)
    assert re.search(pattern, _short(e.value)), str(e.value)


@pytest.mark.parametrize("content, pattern", [
    (b"crane\nslate\ncaf\xe9s\n", r"answers\.txt:3: not UTF-8"),
    (b"", r"answers\.txt: word list is empty \(0 bytes\)"),
    (b"crane\nsla", r"answers\.txt:2: not a five-letter ASCII word: 'sla'$"),  # truncated
    (b"crane\n" + b"q" * MEGABYTE + b"\n", r"answers\.txt:2: not a five-letter ASCII word: 'qqq.*\(1,048,576 chars\)"),
    (b"crane\nslate\ncrane\n", r"answers\.txt:3: duplicate word 'crane' \(first on line 1\)"),
])
def test_word_list_damage_names_file_and_line(tmp_path, content, pattern):
    _refuses(load_word_list, tmp_path / "answers.txt", content, WordListError, pattern)


def test_word_list_bom_is_dropped_and_a_missing_file_named(tmp_path):
    path = tmp_path / "answers.txt"
    path.write_bytes(b"\xef\xbb\xbfcrane\nslate\n")
    assert load_word_list(path).words == ("crane", "slate")
    with pytest.raises(WordListError, match=r"nothere\.txt: word list not found"):
        load_word_list(tmp_path / "nothere.txt")


@pytest.mark.parametrize("content, pattern", [
    (b"day,answer\n0,cigar\n1,caf\xe9s\n", r"answers_by_day\.csv:3: not UTF-8"),
    (b"0,cigar\n1\n", r":2: expected 'day,answer': '1'$"),                      # a column missing
    (b"0,cigar\n1,rebut,extra\n", r":2: expected 'day,answer': '1,rebut,extra'"),  # a column too many
    (b"day,answer\n", r"answers_by_day\.csv: no 'day,answer' line"),
    (b"", r"answers_by_day\.csv: answer table is empty \(0 bytes\)"),
    (b"0," + b"a" * MEGABYTE + b"\n", r":1, field 'answer': answer is not five letters a-z: 'aaa.*\(1,048,576 chars\)"),
    (b"1" * MEGABYTE + b",cigar\n", r":1: expected 'day,answer': '111.*chars\)"),
])
def test_answer_table_damage_names_file_and_line(tmp_path, content, pattern):
    _refuses(load_answer_table, tmp_path / "answers_by_day.csv", content, AnswerTableError, pattern)


def test_answer_table_bom_is_dropped(tmp_path):
    path = tmp_path / "answers_by_day.csv"
    path.write_bytes(b"\xef\xbb\xbfday,answer\n0,cigar\n")
    assert load_answer_table(path) == {0: "cigar"}


def _tweets(path, rows, header=CSV_COLUMNS):
    import csv

    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def _tweet(i: int, text: str | None = None) -> list[str]:
    return ["210", f"t{i}", "2022-01-15", "someone", share_text(210, ((0, 1, 0, 0, 0), (2, 2, 2, 2, 2))) if text is None
            else text]


def test_tweets_encoding_columns_empty_truncated_and_long_fields(tmp_path):
    path = tmp_path / "tweets.csv"
    _tweets(path, [_tweet(i) for i in range(3000)])
    data = path.read_bytes()
    at = data.index(b",t2500,")
    path.write_bytes(data[:at] + b",t\xe9" + data[at + 2:])
    line = data[:at].count(b"\n") + 1  # each tweet spans several lines
    assert line > 2500
    with pytest.raises(TweetsCsvError, match=rf"tweets\.csv:{line}: not UTF-8"):
        list(read_tweets_csv(path, collections.Counter()))

    _tweets(path, [_tweet(0)], header=CSV_COLUMNS[:-1])
    with pytest.raises(TweetsCsvError, match=r"tweets\.csv:1: header lacks columns \['tweet_text'\]"):
        list(read_tweets_csv(path, collections.Counter()))

    rows = [_tweet(0), _tweet(1) + ["extra"], ["2" * MEGABYTE] + _tweet(2)[1:], _tweet(3, "x" * MEGABYTE), _tweet(4)]
    _tweets(path, rows)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) - 30])  # the last record cut
    rejections = collections.Counter()
    games = list(read_tweets_csv(path, rejections))
    assert [g.tweet_id for g in games] == ["t0"]
    assert sum(rejections.values()) == 4 and rejections["malformed_csv"] == 3, rejections

    path.write_bytes(b"")
    with pytest.raises(TweetsCsvError, match=r"tweets\.csv: CSV file is empty \(0 bytes\)"):
        list(read_tweets_csv(path, collections.Counter()))


def test_wordle_tweets_build_names_a_damaged_word_list_answer_table_or_empty_tweets(tmp_path):
    from builders.wordle_tweets import wordle_tweets_dataset_builder as wtb

    (tmp_path / "answers.txt").write_bytes(b"cigar\nr\xe9but\n")
    with pytest.raises(WordListError, match=r"answers\.txt:2: not UTF-8"):
        wtb._word_list("answers.txt", tmp_path)
    _tweets(tmp_path / "tweets.csv", [])
    (tmp_path / "answers_by_day.csv").write_bytes(b"210,cigar\n211,r\xe9but\n")
    config = next(c for c in wtb.CONFIGS if c.name == "true_word")
    with pytest.raises(AnswerTableError, match=r"answers_by_day\.csv:2: not UTF-8"):
        wtb.retrofit_manual_dir(config, tmp_path)
    (tmp_path / "answers_by_day.csv").write_text("210,cigar\n")
    builder = wtb.Builder(config="true_word", data_dir=str(tmp_path / "out"))
    with pytest.raises(TweetsCsvError, match=r"tweets\.csv: no record became a game \(0 of 0 records"):
        builder._split_generators(types.SimpleNamespace(manual_dir=str(tmp_path)))


def test_every_reader_error_class_is_a_value_error():
    """Callers catch one family: every reader's error is a ``ValueError`` with the location in its message."""
    from loggers import DamagedLogError

    for cls in (RedditDataError, VisDialDataError, WordListError, AnswerTableError, TweetsCsvError, DamagedLogError):
        assert issubclass(cls, ValueError)
