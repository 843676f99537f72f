"""Writes ``dummy_data/``: a tiny VisDial manual folder in the exact published layout.

Run from the repository root: ``python -m builders.visdial.make_dummy_data``. The content comes from
``rlds_lang.visdial.fixtures.write_fixture`` with a fixed seed, so the files are reproducible:
``visdial_0.5_{train,val,test}.json``, the same dialogues as ``visdial_1.0_{train,val,test}.json`` (the v1.0
layout, for the ``yn_v1`` config), ``data_img.h5`` (``images_<split>`` [N, 4096] float32, sparse and
gzip-compressed), ``<split>_rank_reward_cache1.json`` and ``<split>_reward_cache2.json``.
"""

from __future__ import annotations

import json
import os

from rlds_lang.visdial.data import dialogue_file
from rlds_lang.visdial.fixtures import to_v1, write_fixture

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dummy_data")
#: dialogues per split of the dummy data (the builder test's expected split sizes derive from these).
SIZES = {"train": 4, "val": 3, "test": 2}
SEED = 0


def main() -> None:
    """(Re)writes ``dummy_data/``."""
    written = write_fixture(OUT, SIZES, version="0.5", dim=4096, seed=SEED)
    for split, dialogues in written.items():
        with open(os.path.join(OUT, dialogue_file(split, "1.0")), "w", encoding="utf-8") as f:
            json.dump(to_v1(dialogues, split), f)
    print(f"wrote {sorted(os.listdir(OUT))} to {OUT}")


if __name__ == "__main__":
    main()
