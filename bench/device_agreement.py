"""Do BC and ILQL train the same on another device? The losses of the first ``--steps`` steps of each, from the
same seed, on the CPU and on ``--device``, in fp32 (TF32 off), and whether they agree within ``--tolerance``.

The rows are ``docs/results.md``'s ``bc`` and ``ilql`` (``trainers.experiments.results.EXPERIMENTS``) on a small
``wordle_synthetic/branch`` build (``bench/train.py``'s ``small_dataset``) or ``--dataset DIR``. Both devices
start from the same weights (models are built on the CPU, then moved) and read the same batches; their losses
differ only by the order of floating-point sums, so the relative difference of each step's loss stays far below
the tolerance (default 1e-4) unless a trainer computes something else on the device. ``--json PATH`` writes the
figures for ``rlds-lang results gpu --figures PATH``.

    .venv/bin/python bench/device_agreement.py --device cuda --json /tmp/agreement.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from bench.train import small_dataset  # noqa: E402
from bench.train_throughput import device_name  # noqa: E402
from trainers.core.device import DEVICE_HELP, placement  # noqa: E402

#: the ``kind`` of the JSON this script writes (``trainers.experiments.gpu`` reads it).
KIND = "device_agreement"


def step_losses(algorithm: str, config: Any) -> list[float]:
    """The loss of every step of a run of ``config``, as its ``metrics.jsonl`` logs it."""
    from trainers.algorithms.registry import train

    train(algorithm, config, progress=False)
    rows = [json.loads(line) for line in (Path(config.out) / "metrics.jsonl").read_text().splitlines()]
    return [row["loss"] for row in rows]


def compare(dataset: str, device: str, steps: int) -> list[dict[str, Any]]:
    """Per row: its losses on the CPU and on ``device`` and their largest differences."""
    from trainers.experiments.common import experiment_config
    from trainers.experiments.results import EXPERIMENTS

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for row in (e for e in EXPERIMENTS if e.name in ("bc", "ilql")):
            losses = {}
            for where in dict.fromkeys(("cpu", device)):  # once when --device is the CPU itself
                config = experiment_config(row, dataset, Path(tmp) / where.replace(":", "_"), steps)
                config.log_every, config.checkpoint_every, config.resume = 1, 10**9, False
                config.device, config.precision = where, "fp32"
                losses[where] = step_losses(row.algorithm, config)
            cpu, other = losses["cpu"], losses[device]
            out.append({"row": row.name, "algorithm": row.algorithm, "cpu_losses": cpu, "device_losses": other,
                        "max_abs_difference": max(abs(a - b) for a, b in zip(cpu, other)),
                        "max_relative_difference": max(abs(a - b) / max(abs(a), 1e-12) for a, b in zip(cpu, other))})
    return out


def main() -> None:
    """Trains both rows on both devices and prints (and with ``--json`` writes) the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help=DEVICE_HELP)
    parser.add_argument("--dataset", default=None, help="a built dataset folder (default: a small branch build)")
    parser.add_argument("--games", type=int, default=300, help="games per recipe of the default small build")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--tolerance", type=float, default=1e-4, help="largest relative difference of a step's loss")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    torch.set_num_threads(1)
    place = placement(args.device, "fp32")
    device = str(place.device)
    rows = compare(args.dataset or small_dataset("branch", args.games), device, args.steps)
    print(f"fp32, {args.steps} steps from the same seed: cpu against {device} ({device_name(place.device)})")
    for row in rows:
        verdict = "agree" if row["max_relative_difference"] <= args.tolerance else "DIFFER"
        print(f"{row['row']:<5} largest difference of a step's loss: {row['max_abs_difference']:.3g} "
              f"({row['max_relative_difference']:.3g} relative; tolerance {args.tolerance:g}): {verdict}")
    if args.json:
        figures = {"kind": KIND, "device": device, "device_name": device_name(place.device), "precision": "fp32",
                   "steps": args.steps, "tolerance": args.tolerance, "torch": torch.__version__, "rows": rows}
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
        print(f"figures -> {args.json}")


if __name__ == "__main__":
    main()
