"""Benchmark of the trainers: training tokens/s of BC and ILQL at one fixed model size, and the share of the
step time spent waiting for data (target < 5%), measured in one run on the same data.

The data is a small ``wordle_synthetic/branch`` build (``RLDS_LANG_SMALL`` games, built once into
``.cache/bench/tfds`` with the ``tfds`` command line) unless ``--dataset`` names a built dataset folder.
Throughput is measured from the end of each run's first step (``trainers.loop.TrainResult``).

    .venv/bin/python bench/train.py                      # 4 layers x 128, batch 32, 100 steps each
    .venv/bin/python bench/train.py --steps 300 --dataset /path/to/wordle_synthetic/branch/1.1.0
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from trainers.bc import BCConfig  # noqa: E402
from trainers.build import tfds_build  # noqa: E402
from trainers.ilql import ILQLConfig  # noqa: E402
from trainers.loop import train  # noqa: E402
from trainers.model import ModelConfig  # noqa: E402


def small_branch_dataset(games: int) -> str:
    """Builds (once) a ``branch`` dataset capped at ``games`` expert games and returns its folder."""
    return tfds_build("wordle_synthetic", "branch", REPO / ".cache" / "bench" / f"tfds-branch-{games}", small=games,
                      quiet=True)


def main() -> None:
    """Runs the benchmark and prints its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=None, help="a built dataset folder (default: a small branch build)")
    parser.add_argument("--games", type=int, default=300, help="expert games of the default small build")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--width", type=int, default=128)
    args = parser.parse_args()
    dataset = args.dataset or small_branch_dataset(args.games)
    model = ModelConfig(n_layer=args.layers, n_embd=args.width, n_head=4)
    print(f"dataset {dataset}\nmodel GPT-2 {args.layers} layers x {args.width}, batch {args.batch_size} episodes "
          f"(96 tokens each), {args.steps} steps")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, cls in (("bc", BCConfig), ("ilql", ILQLConfig)):
            config = cls(dataset=dataset, out=os.path.join(tmp, name), steps=args.steps, batch_size=args.batch_size,
                         model=model, log_every=max(1, args.steps // 5), checkpoint_every=10**9, resume=False)
            result = train(name, config, progress=False)
            rows.append((name, result))
    print(f"{'algorithm':<10} {'tokens/s (not padding)':>22} {'data wait':>10}  (target < 5%)")
    for name, result in rows:
        verdict = "met" if result.data_wait_share < 0.05 else "MISSED"
        print(f"{name:<10} {result.tokens_per_second:>22,.0f} {100 * result.data_wait_share:>9.2f}%  {verdict}")
    bc, ilql = rows[0][1], rows[1][1]
    print(f"ILQL / BC tokens/s: {ilql.tokens_per_second / bc.tokens_per_second:.2f}")


if __name__ == "__main__":
    main()
