"""Writes ``dummy_data/``: a tiny published CSV pair with index splits, and a Reddit dump (plain and ``.zst``).

Run from the repository root: ``python -m builders.reddit_comments.make_dummy_data``. The content is fixed
(no randomness), so the committed files are reproducible byte for byte. ``write_published`` and
``write_dump`` are also the fixture writers of the tests. ``EXPECTED`` is what the reader must accept
and reject.

Published layout: ``dummy_data/published/``; dumps: ``dummy_data/dump/RC_dummy.ndjson`` and
``RC_dummy.zst`` (the same lines).
"""

from __future__ import annotations

import csv
import json
import os
from typing import Sequence

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dummy_data")
HEADER = ["id", "parent_id", "subreddit_id", "link_id", "text", "score", "ups", "author", "controversiality",
          "parent_link_id", "parent_text", "parent_score"]

#: texts that test losslessness: emoji, CRLF, embedded newlines and quotes, odd unicode (no NUL).
ODD_TEXTS = ["I love this 😀🎉 thread", "line one\r\nline two", 'she said "no", then\nleft', "zero\u200bwidth \u202eRTL",
             "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 café naïve", "tabs\there\tand 'quotes'"]


def row(cid: str, text: str, score: str | int, parent_text: str, parent: str = "") -> list[str]:
    """A published CSV record with the columns the reader uses filled in."""
    return [cid, parent or f"t1_p{cid}", "t5_2qh1i", "t3_link", text, str(score), str(score), "someone", "0", "t3_link",
            parent_text, "10"]


def positives() -> list[list[str]]:
    """The positive file's records (scores > 0), two of them bad."""
    rows = [row(f"pos{i}", text, 3 + i, f"parent of pos{i}: what do you think?") for i, text in enumerate(ODD_TEXTS)]
    rows += [row(f"pos{i}", f"good comment number {i}", 5 + i, f"Question {i}?") for i in range(6, 14)]
    rows.append(["short", "row"])                                  # too_few_columns
    rows.append(row("posbad", "a fine text", "many", "parent"))   # non_integer_score
    return rows


def negatives() -> list[list[str]]:
    """The negative file's records (scores <= 0), one of them bad."""
    rows = [row(f"neg{i}", f"you are all idiots number {i}" if i % 2 else f"meh comment {i}", -i, f"Parent {i} says hi")
            for i in range(12)]
    rows.append(row("negempty", "   ", -2, "parent"))              # empty_text
    return rows


def write_published(folder: str, pos: Sequence[Sequence[str]], neg: Sequence[Sequence[str]],
                    splits: dict[str, list[int]], header: Sequence[str] = tuple(HEADER)) -> None:
    """Writes ``comments_positive.csv``, ``comments_negative.csv`` (with ``header``) and the index files."""
    os.makedirs(folder, exist_ok=True)
    for name, rows in (("comments_positive.csv", pos), ("comments_negative.csv", neg)):
        with open(os.path.join(folder, name), "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(header)
            writer.writerows(rows)
    for split, indices in splits.items():
        with open(os.path.join(folder, f"{split}_idxs.json"), "w", encoding="utf-8") as f:
            json.dump(indices, f)


def published_splits(total: int) -> dict[str, list[int]]:
    """Every 5th record in eval, every 5th (offset 1) in test, the rest in train."""
    splits: dict[str, list[int]] = {"train": [], "eval": [], "test": []}
    for i in range(total):
        splits["eval" if i % 5 == 0 else "test" if i % 5 == 1 else "train"].append(i)
    return splits


def dump_lines() -> list[str]:
    """A comment dump: a thread of replies, top-level comments, and bad lines."""
    records = []
    for i in range(16):
        parent = "t3_post1" if i % 4 == 0 else f"t1_c{i - 1}"
        text = ODD_TEXTS[i % len(ODD_TEXTS)] if i < 6 else f"dump comment {i}"
        records.append({"id": f"c{i}", "parent_id": parent, "link_id": "t3_post1", "subreddit": "AskReddit",
                        "body": text, "score": (i % 5) - 2, "author": "u"})
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    lines.append("{not json")                                                                     # invalid_json
    lines.append(json.dumps({"id": "x1", "body": "no parent field", "score": 1}))                 # missing_field
    lines.append(json.dumps({"id": "x2", "parent_id": "t3_post1", "link_id": "t3_post1", "subreddit": "a",
                             "body": "[deleted]", "score": 1}))                                   # deleted_text
    lines.append(json.dumps({"id": "x3", "parent_id": "t1_gone", "link_id": "t3_post1", "subreddit": "a",
                             "body": "orphan", "score": 1}))                                      # parent_not_in_dump
    lines.append(json.dumps({"id": "x4", "parent_id": "t3_post1", "link_id": "t3_post1", "subreddit": "a",
                             "body": "half", "score": 1.5}))                                      # non_integer_score
    return lines


def write_dump(path: str, lines: Sequence[str]) -> None:
    """Writes newline-delimited JSON, Zstandard-compressed when ``path`` ends in ``.zst``."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    if path.endswith(".zst"):
        import zstandard

        data = zstandard.ZstdCompressor(level=3).compress(data)
    with open(path, "wb") as f:
        f.write(data)


#: what the reader accepts and rejects in the dummy data, by layout.
EXPECTED = {
    "published": {"accepted": 26, "rejections": {"too_few_columns": 1, "non_integer_score": 1, "empty_text": 1}},
    "dump": {"accepted": 16, "rejections": {"invalid_json": 1, "missing_field": 1, "deleted_text": 1,
                                            "parent_not_in_dump": 1, "non_integer_score": 1}},
}


def main() -> None:
    """Writes every dummy file under ``OUT``."""
    pos, neg = positives(), negatives()
    write_published(os.path.join(OUT, "published"), pos, neg, published_splits(len(pos) + len(neg)))
    for name in ("RC_dummy.ndjson", "RC_dummy.zst"):
        write_dump(os.path.join(OUT, "dump", name), dump_lines())


if __name__ == "__main__":
    main()
