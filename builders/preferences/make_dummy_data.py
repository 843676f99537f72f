"""Writes ``dummy_data/`` for the preferences builder test: 16 synthetic judgements about clips of recorded
Wordle games (``loggers.record_and_read``, the optimal and a random-mixture policy, 4 games each), recorded by
``loggers.preferences.record_judgements``. ``EXPECTED`` (judgements per split, by episode) is checked by the
test.

Run from the repository root: ``.venv/bin/python -m builders.preferences.make_dummy_data``.
"""

from __future__ import annotations

import os
import shutil

import numpy as np

from loggers import record_and_read
from loggers.preferences import judgement_split_counts, record_judgements
from rlds_lang.preferences.labellers import SyntheticLabeller, judge
from rlds_lang.preferences.segments import clips_from_episode
from rlds_lang.preferences.selection import PairSelector
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import make_policy

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dummy_data")
#: judgements per split of the dummy data.
EXPECTED = {"train": 6, "validation": 1, "straddling": 9}


def make_judgements(n: int = 16, seed: int = 0) -> list:
    """``n`` synthetic judgements about random pairs of clips of 8 recorded Wordle games."""
    clips = []
    for k, (name, params) in enumerate((("optimal", {}), ("random_mixture", {"prob_smart": 0.3}))):
        for episode in record_and_read(WordleEnv(seed=k), make_policy(name, **params), 4, seed=10 * k,
                                       run_name=f"dummy-{name}"):
            clips += clips_from_episode(episode, segment_length=8)
    labeller = SyntheticLabeller(seed=seed)
    pairs = PairSelector("random", seed=seed).select(clips, n)
    return [judge(labeller, p.left, p.right, p.selection) for p in pairs]


def main() -> None:
    """Rewrites ``dummy_data/``."""
    shutil.rmtree(OUT, ignore_errors=True)
    judgements = make_judgements()
    record_judgements(OUT, judgements, session_id="dummy-session", labeller="synthetic")
    counts = judgement_split_counts(OUT)
    assert counts == EXPECTED, counts
    print(f"wrote {len(judgements)} judgements {counts} -> {OUT}; labels "
          f"{dict(zip(*np.unique([j.label.value for j in judgements], return_counts=True)))}")


if __name__ == "__main__":
    main()
