"""Benchmark of the raw-data JSON readers on damaged input.

1. VisDial: seconds to read a valid dialogue file and seconds to report a syntax error in the same file, which
   must cost no more than reading it (a reader that re-decodes its growing buffer at every chunk after a syntax
   error is quadratic in the rest of the file). Writes a v0.5 dialogue file of about ``--megabytes`` MB
   (synthetic dialogues, 10 rounds each), then a copy with one byte changed at ``--at`` (a fraction of the
   file) so that the JSON there is invalid, and times ``read_dialogues`` on both; prints the two times and the
   error message (file, line, character, dialogue).
2. The price of refusing duplicate keys (``rlds_lang.input_errors.STRICT_JSON``, an ``object_pairs_hook``):
   the valid VisDial file, and a Reddit dump of ``--comments`` comments, read with the strict decoder and with
   Python's plain one in the same run; prints both times and their ratio.
3. Memory of a ``.zst`` dump holding one very long line (``--line-mib`` MiB of one byte, a few KB compressed):
   the peak of Python allocations (``tracemalloc``) until the reader refuses the line, which must stay near
   ``MAX_DUMP_LINE_BYTES`` whatever the line's length.

    .venv/bin/python bench/damaged_json.py                     # 50 MB, broken at 10%
    .venv/bin/python bench/damaged_json.py --megabytes 221 --at 0.5 --line-mib 256
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rlds_lang.reddit import data as reddit  # noqa: E402
from rlds_lang.visdial import data as visdial  # noqa: E402
from rlds_lang.visdial.data import VisDialDataError, read_dialogues  # noqa: E402


def write_file(path: str, megabytes: float) -> int:
    """Writes synthetic dialogues until the file holds ``megabytes`` MB; returns how many."""
    dialog = [{"question": f"is there a thing number {r}", "answer": "yes, there is one", "options": list(range(20)),
               "gt_index": r} for r in range(10)]
    entry = json.dumps({"image_id": 0, "caption": "a caption of an image", "dialog": dialog})
    count = int(megabytes * 2 ** 20 / (len(entry) + 2)) + 1
    with open(path, "w", encoding="utf-8") as f:
        f.write("[" + ", ".join([entry] * count) + "]")
    return count


def timed_read(path: str) -> tuple[float, str]:
    """Seconds to read every dialogue of ``path`` (or to fail), and the error message if it failed."""
    start = time.perf_counter()
    try:
        for _ in read_dialogues(path, "val"):
            pass
        message = ""
    except VisDialDataError as e:
        message = str(e)
    return time.perf_counter() - start, message


@contextlib.contextmanager
def plain_json() -> None:
    """Inside the block, the readers decode JSON with Python's plain decoder (duplicate keys not refused)."""
    plain = json.JSONDecoder()
    saved = visdial.STRICT_JSON, reddit.loads_strict
    visdial.STRICT_JSON, reddit.loads_strict = plain, plain.decode
    try:
        yield
    finally:
        visdial.STRICT_JSON, reddit.loads_strict = saved


def write_dump(path: str, comments: int) -> None:
    """A plain Reddit dump of ``comments`` comments shaped like pushshift's (two dozen fields each)."""
    with open(path, "w", encoding="utf-8") as f:
        for i in range(comments):
            f.write(json.dumps({"all_awardings": [], "archived": False, "author": f"user{i % 97}", "body":
                                f"comment {i}: see https://example.org/{i} for why " * 3, "controversiality": 0,
                                "created_utc": 1500000000 + i, "edited": False, "gilded": 0, "gildings": {},
                                "id": f"c{i}", "link_id": "t3_post", "parent_id": "t3_post", "score": i % 7 - 2,
                                "stickied": False, "subreddit": "AskReddit", "subreddit_id": "t5_2qh1i"}) + "\n")


def best_of(runs: int, work) -> float:
    """The fastest of ``runs`` timings of ``work()`` (seconds)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def strict_json_cost(visdial_path: str, dump_path: str) -> dict[str, float]:
    """Seconds to read the VisDial file and the dump with the strict and with the plain decoder."""
    def read_visdial() -> None:
        for _ in read_dialogues(visdial_path, "val"):
            pass

    def read_dump() -> None:
        list(reddit.read_dumps([dump_path], collections.Counter()))

    figures = {}
    for name, work in (("visdial", read_visdial), ("dump", read_dump)):
        figures[f"{name}_strict"] = best_of(3, work)
        with plain_json():
            figures[f"{name}_plain"] = best_of(3, work)
    return figures


def long_line_peak(folder: str, mib: int) -> tuple[int, int, str]:
    """(compressed bytes, peak of Python allocations, the error) reading a ``.zst`` dump whose second line is
    ``mib`` MiB long."""
    import zstandard

    path = os.path.join(folder, "RC_long_line.zst")
    line = b'{"body": "' + b"a" * (mib << 20) + b'"}\n'
    Path(path).write_bytes(zstandard.ZstdCompressor(level=3).compress(b'{"id": "c0"}\n' + line))
    del line
    tracemalloc.start()
    try:
        list(reddit.read_dumps([path], collections.Counter()))
        message = "(no error)"
    except reddit.RedditDataError as e:
        message = str(e)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return os.path.getsize(path), peak, message


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Runs the benchmark and prints its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=50.0)
    parser.add_argument("--at", type=float, default=0.1, help="where the damage is, as a fraction of the file")
    parser.add_argument("--comments", type=int, default=100_000, help="comments in the dump of part 2")
    parser.add_argument("--line-mib", type=int, default=64, help="length of the long dump line of part 3 (MiB)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="damaged_json-") as folder:
        path = os.path.join(folder, "visdial_0.5_val.json")
        count = write_file(path, args.megabytes)
        valid, _ = timed_read(path)
        dump = os.path.join(folder, "RC.ndjson")
        write_dump(dump, args.comments)
        cost = strict_json_cost(path, dump)
        compressed, peak, line_error = long_line_peak(folder, args.line_mib)
        data = bytearray(Path(path).read_bytes())
        at = data.index(b'"caption"', int(len(data) * args.at))
        data[at] = ord("}")  # "caption" loses its opening quote: a syntax error
        Path(path).write_bytes(bytes(data))
        damaged, message = timed_read(path)
    print(f"{count:,} dialogues, {len(data) / 2 ** 20:.0f} MB: valid file read in {valid:.2f} s; syntax error at "
          f"byte {at:,} reported in {damaged:.2f} s\n  {message}")
    for name, what in (("visdial", f"the {len(data) / 2 ** 20:.0f} MB VisDial file"),
                       ("dump", f"a dump of {args.comments:,} comments")):
        strict, plain = cost[f"{name}_strict"], cost[f"{name}_plain"]
        print(f"duplicate keys refused: {what} read in {strict:.2f} s, {plain:.2f} s with Python's plain decoder "
              f"({strict / plain:.2f}x)")
    print(f"a {compressed:,}-byte .zst dump holding a {args.line_mib} MiB line: peak of Python allocations "
          f"{peak / 2 ** 20:.1f} MiB (MAX_DUMP_LINE_BYTES {reddit.MAX_DUMP_LINE_BYTES / 2 ** 20:.0f} "
          f"MiB)\n  {line_error}")
    return {"valid_seconds": valid, "damaged_seconds": damaged, **cost, "long_line_peak_bytes": peak}


if __name__ == "__main__":
    main()
