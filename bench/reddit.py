"""Benchmark of the Reddit pipeline: comments/s through the reader, the toxicity reward and the recorder.

Writes a synthetic published CSV pair (``--comments`` records, each with an emoji and a quoted newline so the
CSV parser takes its slow path), then times separately: reading it (``read_published``), the raw
``toxicity`` reward of every text in one batch (alt-profanity-check, disk cache disabled), and recording
every comment as an episode through ``loggers.record`` (``record_comments``, rewards precomputed).

    .venv/bin/python bench/reddit.py                       # 2,000 comments
    .venv/bin/python bench/reddit.py --comments 20000
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builders.reddit_comments.make_dummy_data import (  # noqa: E402
    published_splits,
    row,
    write_published,
)
from loggers.reddit_recipes import record_comments  # noqa: E402
from rlds_lang.reddit.data import read_published  # noqa: E402
from rlds_lang.reddit.rewards import PrecomputedReward, ToxicityReward  # noqa: E402


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Runs the benchmark and prints comments/s per stage."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comments", type=int, default=2000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        n = args.comments
        rows = [row(f"c{i}", f"comment {i} 😀 with \"quotes\"\nand a second line about topic {i % 97}", i % 7 - 3,
                    f"parent {i}?") for i in range(n)]
        write_published(tmp, rows[: n // 2], rows[n // 2:], published_splits(n))
        rates = {}
        start = time.perf_counter()
        comments = list(read_published(tmp, collections.Counter()))
        rates["reader"] = len(comments) / (time.perf_counter() - start)
        start = time.perf_counter()
        texts = [c.text for c in comments]
        values = ToxicityReward().rewards(texts)
        rates["toxicity reward"] = len(texts) / (time.perf_counter() - start)
        reward = PrecomputedReward("toxicity", "bench", dict(zip(texts, values)))
        start = time.perf_counter()
        episodes = sum(1 for _ in record_comments(comments, reward, "bench", work_dir=tmp))
        rates["recorder (record + read back)"] = episodes / (time.perf_counter() - start)
    for stage, rate in rates.items():
        print(f"{stage:32s} {rate:10.0f} comments/s")
    return rates


if __name__ == "__main__":
    main()
