"""Writes ``dummy_data/`` for the response_trees builder test: two Wordle response trees recorded by
``loggers.trees.record_trees`` (RandomMixturePolicy(prob_smart=1.0), branching 2 at the first guess, then
played to the end; interval pairs). ``EXPECTED_EPISODES`` (root-to-leaf paths) is checked by the test.

Run from the repository root: ``.venv/bin/python -m builders.response_trees.make_dummy_data``.
"""

from __future__ import annotations

import os
import shutil

from loggers.trees import TreeSpec, record_trees
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import RandomMixturePolicy

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dummy_data")
#: episodes (paths) the two trees have: 2 branches at the first guess each.
EXPECTED_EPISODES = 4


def main() -> None:
    """Rewrites ``dummy_data/``."""
    shutil.rmtree(OUT, ignore_errors=True)
    spec = TreeSpec(branching=2, branch_depth=1, reward_range=(-6.0, 0.0), pair_method="interval")
    result = record_trees(WordleEnv(), RandomMixturePolicy(prob_smart=1.0), spec, 2, OUT, seed=11, run_name="dummy")
    assert result.num_paths == EXPECTED_EPISODES, result.num_paths
    print(f"wrote {result.num_paths} episodes of {result.num_trees} trees ({result.num_pairs} pairs) -> {OUT}")


if __name__ == "__main__":
    main()
