"""Fault injection into the reader of Reddit comment dumps (``.zst`` and plain NDJSON, ``rlds_lang.reddit.data``)
and the Reddit build: truncation, corruption, encoding, malformed lines, 1 MB fields, duplicates across files.
``docs/guides/damaged_input.md`` ("Reddit") describes what it does; this module checks it."""

from __future__ import annotations

import collections
import json
import re
import types
from pathlib import Path

import pytest

from builders.reddit_comments import make_dummy_data as reddit_dummy
from rlds_lang.reddit import data as reddit
from rlds_lang.reddit.data import RedditDataError
from tests.damaged_helpers import MEGABYTE


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


def test_a_line_nested_too_deep_or_with_a_key_twice_is_counted_and_the_rest_kept(tmp_path):
    path = tmp_path / "RC.ndjson"
    lines = _dump_records(4)
    lines.insert(1, '{"id": "deep", "body": ' + "[" * 100_000 + "]" * 100_000 + "}")
    twice = json.loads(lines[3])
    lines.insert(3, json.dumps(twice)[:-1] + ', "body": "another body"}')  # "body" twice: which one is meant?
    reddit_dummy.write_dump(str(path), lines)
    comments, rejections = _read_dumps([str(path)])
    assert rejections == {"invalid_json": 1, "duplicate_key": 1}
    assert [c.comment_id for c in comments] == ["c0", "c1", "c2", "c3"]


def test_a_key_twice_is_found_in_nested_objects_too(tmp_path):
    path = tmp_path / "RC.ndjson"
    record = json.loads(_dump_records(1)[0])
    reddit_dummy.write_dump(str(path), [json.dumps(record)[:-1] + ', "gildings": {"gid_1": 1, "gid_1": 2}}'])
    comments, rejections = _read_dumps([str(path)])
    assert comments == [] and rejections == {"duplicate_key": 1}


def test_a_zst_line_past_the_limit_is_an_error_named_without_holding_the_line(tmp_path):
    import tracemalloc

    import zstandard

    path = tmp_path / "RC_one_line.zst"
    lines = _dump_records(1)
    data = (lines[0] + "\n" + '{"body": "' + "a" * (64 << 20) + '"}\n').encode()
    path.write_bytes(zstandard.ZstdCompressor(level=3).compress(data))
    del data
    assert path.stat().st_size < 10_000  # 64 MiB of one line in a few KB
    tracemalloc.start()
    try:
        with pytest.raises(RedditDataError) as caught:
            _read_dumps([str(path)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert re.search(r"RC_one_line\.zst:2: line longer than 4,194,304 bytes, the reader's max_line_bytes",
                     str(caught.value)), caught.value
    assert peak < 4 * reddit.MAX_DUMP_LINE_BYTES  # the line (64 MiB) was never held whole


def test_the_line_limit_is_configurable(tmp_path):
    path = tmp_path / "RC.ndjson"
    record = json.loads(_dump_records(1)[0])
    reddit_dummy.write_dump(str(path), [json.dumps({**record, "body": "b" * (5 << 20)})])
    with pytest.raises(RedditDataError, match=r"RC\.ndjson:1: line longer than 1,048,576 bytes"):
        list(reddit.read_dumps([str(path)], collections.Counter(), max_line_bytes=1 << 20))
    with pytest.raises(RedditDataError, match=r"RC\.ndjson:1: line longer than 4,194,304 bytes"):
        _read_dumps([str(path)])
    [comment] = reddit.read_folder(str(tmp_path), collections.Counter(), max_line_bytes=8 << 20)
    assert comment.text == "b" * (5 << 20)
