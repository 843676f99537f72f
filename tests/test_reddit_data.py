"""The Reddit readers on fixtures in both published formats: columns, numbering, splits, rejections, losslessness."""

import collections
import json

import pytest

from builders.reddit_comments import make_dummy_data as dummy
from rlds_lang.reddit.data import (
    RedditDataError,
    hash_split,
    load_index_splits,
    read_dump,
    read_published,
    rejection_report,
)


def _published(tmp_path, pos=None, neg=None, splits=None):
    pos = dummy.positives() if pos is None else pos
    neg = dummy.negatives() if neg is None else neg
    dummy.write_published(str(tmp_path), pos, neg, splits or dummy.published_splits(len(pos) + len(neg)))
    return tmp_path


def test_published_reader_numbers_positives_first_and_counts_rejections(tmp_path):
    folder = _published(tmp_path)
    rejections = collections.Counter()
    comments = list(read_published(folder, rejections))
    assert dict(rejections) == dummy.EXPECTED["published"]["rejections"]
    assert len(comments) == dummy.EXPECTED["published"]["accepted"]
    pos, neg = dummy.positives(), dummy.negatives()
    by_index = {c.index: c for c in comments}
    # record 0 is the first positive; the first negative follows the last positive record
    assert by_index[0].text == pos[0][4] and by_index[0].score == 3 and by_index[0].parent_text == pos[0][10]
    assert by_index[len(pos)].comment_id == "neg0" and by_index[len(pos)].score == 0
    splits = dummy.published_splits(len(pos) + len(neg))
    for c in comments:
        assert c.index in splits[c.split]
    assert "26 of 29 records" in rejection_report(rejections, len(comments))


def test_published_text_is_lossless(tmp_path):
    comments = list(read_published(_published(tmp_path), collections.Counter()))
    texts = [c.text for c in comments]
    for odd in dummy.ODD_TEXTS:
        assert odd in texts
    assert "line one\r\nline two" in texts  # CRLF inside a quoted field is kept


def test_rows_outside_every_index_file_are_counted(tmp_path):
    folder = _published(tmp_path, splits={"train": [0, 1], "eval": [2], "test": [3]})
    rejections = collections.Counter()
    comments = list(read_published(folder, rejections))
    assert [c.index for c in comments] == [0, 1, 2, 3]
    assert rejections["not_in_split"] == 26 - 4


@pytest.mark.parametrize("content,message", [("[1, 1.5]", "entry 1"), ("{}", "JSON list"), ("[99]", "holds 5")])
def test_bad_index_files_name_the_file(tmp_path, content, message):
    pos = [dummy.row(f"p{i}", "t", 1, "p") for i in range(5)]
    folder = _published(tmp_path, pos, [], {"train": [0], "eval": [1], "test": [2]})
    (folder / "eval_idxs.json").write_text(content)
    with pytest.raises(RedditDataError, match="eval_idxs.json") as e:
        list(read_published(folder, collections.Counter()))
    assert message in str(e.value)


def test_index_in_two_splits_is_an_error(tmp_path):
    folder = _published(tmp_path, splits={"train": [0, 1], "eval": [1], "test": [2]})
    with pytest.raises(RedditDataError, match="also in train_idxs.json"):
        load_index_splits(folder)


def test_missing_file_names_it(tmp_path):
    folder = _published(tmp_path)
    (folder / "comments_negative.csv").unlink()
    with pytest.raises(RedditDataError, match="comments_negative.csv not found"):
        list(read_published(folder, collections.Counter()))


@pytest.mark.parametrize("name", ["RC.ndjson", "RC.zst"])
def test_dump_reader_joins_parents_and_counts_rejections(tmp_path, name):
    path = str(tmp_path / name)
    dummy.write_dump(path, dummy.dump_lines())
    rejections = collections.Counter()
    comments = {c.comment_id: c for c in read_dump(path, rejections)}
    assert dict(rejections) == dummy.EXPECTED["dump"]["rejections"]
    assert len(comments) == dummy.EXPECTED["dump"]["accepted"]
    assert comments["c0"].parent_text == ""                       # t3_: the post, not in a comment dump
    assert comments["c1"].parent_text == comments["c0"].text == dummy.ODD_TEXTS[0]
    assert comments["c1"].text == "line one\r\nline two"
    assert comments["c3"].subreddit == "AskReddit" and comments["c3"].score == 1
    assert all(c.split == hash_split(c.comment_id) for c in comments.values())


def test_dump_parent_after_child_is_found(tmp_path):
    path = str(tmp_path / "RC.ndjson")
    child = {"id": "b", "parent_id": "t1_a", "link_id": "t3_x", "subreddit": "s", "body": "reply", "score": 2}
    parent = {"id": "a", "parent_id": "t3_x", "link_id": "t3_x", "subreddit": "s", "body": "first", "score": 1}
    dummy.write_dump(path, [json.dumps(child), json.dumps(parent)])
    comments = list(read_dump(path, collections.Counter()))
    assert comments[0].parent_text == "first"


def test_hash_split_is_stable_and_proportional():
    ids = [f"id{i}" for i in range(4000)]
    splits = collections.Counter(hash_split(i, 0.1, 0.2) for i in ids)
    assert abs(splits["test"] / 4000 - 0.2) < 0.03 and abs(splits["eval"] / 4000 - 0.1) < 0.03
    assert hash_split("abc") == hash_split("abc")
    assert hash_split("abc", salt="other") in ("train", "eval", "test")
