"""Benchmark of the VisDial JSON reader on a damaged file: seconds to read a valid dialogue file and seconds to
report a syntax error in the same file, which must cost no more than reading it (a reader that re-decodes
its growing buffer at every chunk after a syntax error is quadratic in the rest of the file).

Writes a v0.5 dialogue file of about ``--megabytes`` MB (synthetic dialogues, 10 rounds each), then a copy
with one byte changed at ``--at`` (a fraction of the file) so that the JSON there is invalid, and times
``read_dialogues`` on both; prints the two times and the error message (file, line, character, dialogue).

    .venv/bin/python bench/damaged_json.py                     # 50 MB, broken at 10%
    .venv/bin/python bench/damaged_json.py --megabytes 221 --at 0.5
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

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


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Runs the benchmark and prints both times."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=50.0)
    parser.add_argument("--at", type=float, default=0.1, help="where the damage is, as a fraction of the file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="damaged_json-") as folder:
        path = os.path.join(folder, "visdial_0.5_val.json")
        count = write_file(path, args.megabytes)
        valid, _ = timed_read(path)
        data = bytearray(Path(path).read_bytes())
        at = data.index(b'"caption"', int(len(data) * args.at))
        data[at] = ord("}")  # "caption" loses its opening quote: a syntax error
        Path(path).write_bytes(bytes(data))
        damaged, message = timed_read(path)
    print(f"{count:,} dialogues, {len(data) / 2 ** 20:.0f} MB: valid file read in {valid:.2f} s; syntax error at "
          f"byte {at:,} reported in {damaged:.2f} s\n  {message}")
    return {"valid_seconds": valid, "damaged_seconds": damaged}


if __name__ == "__main__":
    main()
