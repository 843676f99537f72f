"""Throughput of the trainers on a device: tokens/s, achieved FLOP/s and their ratio to a large matrix product
timed in the same run, for BC and ILQL at the results pages' sizes.

Settings (``--settings``): ``wordle`` trains ``docs/results.md``'s ``bc`` and ``ilql`` rows (``SHARED``: GPT-2 of 4
layers x 128, batch 32 episodes of at most 96 tokens, the character tokenizer) on a small ``wordle_synthetic/branch``
build; ``lmrl-gym`` trains ``docs/lmrl_gym.md``'s ``BC`` and ``ILQL`` rows (the same transformer, batch 64, words
and board cells as tokens, a separate value trunk for ILQL; from random weights here) on a small
``wordle_synthetic/lmrl_gym`` build. Builds go to ``.cache/bench`` (``bench/train.py``'s ``small_dataset``,
``--games`` games per recipe) unless ``--dataset SETTING=DIR`` names a built folder.

Figures, each measured in this run on ``--device`` in ``--precision``:

- tokens/s: the training loop's non-padding tokens per second after its first step
  (``trainers.core.loop.TrainResult.tokens_per_second``: data loading, optimizer and logging included);
- FLOP/s achieved: the FLOPs a training step computes per non-padding token, counted on a few of the run's own
  batches with ``torch.utils.flop_counter.FlopCounterMode`` (forward and backward matrix products, padding included
  where a batch computes it) times tokens/s;
- the ratio of that to the FLOP/s of a ``--matmul-size`` square matrix product in the run's dtype on the same
  device (what the hardware reaches on the easiest work there is).

``--json PATH`` also writes the figures (``rows``, the machine) for ``rlds-lang results gpu --figures PATH``.

    .venv/bin/python bench/train_throughput.py                            # the CPU, 1 thread, both settings
    .venv/bin/python bench/train_throughput.py --device cuda --precision bf16 --steps 200 --json /tmp/tp.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from bench.train import small_dataset  # noqa: E402
from trainers.core.device import DEVICE_HELP, PRECISION_HELP, PRECISIONS, Placement, placement  # noqa: E402

#: the ``kind`` of the JSON this script writes (``trainers.experiments.gpu`` reads it).
KIND = "train_throughput"


def device_name(device: torch.device) -> str:
    """The GPU's name, or the CPU's model name."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def synchronize(device: torch.device) -> None:
    """Waits for the device's queued work (CUDA runs asynchronously)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_flops_per_second(place: Placement, size: int, repeats: int = 5) -> float:
    """FLOP/s of a ``size`` x ``size`` matrix product in the placement's dtype (bfloat16 with ``bf16``), the best of
    ``repeats`` timed products after one warm-up."""
    dtype = torch.bfloat16 if place.precision == "bf16" else torch.float32
    generator = torch.Generator(device="cpu").manual_seed(0)
    a, b = (torch.randn(size, size, generator=generator, device="cpu").to(place.device, dtype) for _ in range(2))
    torch.matmul(a, b)
    best = float("inf")
    for _ in range(repeats):
        synchronize(place.device)
        start = time.perf_counter()
        torch.matmul(a, b)
        synchronize(place.device)
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best


def flops_per_token(module: torch.nn.Module, batches: Iterable[dict[str, Any]], place: Placement) -> float:
    """Training FLOPs (forward and backward) of ``module`` per non-padding token of ``batches``."""
    from torch.utils.flop_counter import FlopCounterMode

    module.train()
    flops = tokens = 0
    for batch in batches:
        tokens += int(batch["attention_mask"].sum())
        with FlopCounterMode(display=False) as counter:
            with place.autocast():
                loss = module(place.move(batch)).loss
            loss.backward()
        flops += counter.get_total_flops()
        module.zero_grad(set_to_none=True)
    return flops / tokens


def run_flops_per_token(algorithm: str, config: Any, place: Placement, batches: int = 3) -> float:
    """``flops_per_token`` of ``config``'s model on the first ``batches`` batches of its data stream."""
    import itertools

    from rlds_lang.tokenizers import make_tokenizer
    from trainers.algorithms.registry import algorithm_by_name
    from trainers.core.loop import DistInfo, build_module, training_batches

    tokenizer = make_tokenizer(config.tokenizer)
    module = build_module(algorithm_by_name(algorithm), config, tokenizer, place)
    return flops_per_token(module, itertools.islice(training_batches(config, tokenizer, DistInfo()), batches), place)


def setting_rows(setting: str, dataset: str, out: Path, steps: int) -> list[tuple[str, str, Any]]:
    """``(row name, algorithm, config)`` of a setting's BC and ILQL rows as its page trains them."""
    from trainers.experiments.common import experiment_config

    if setting == "wordle":
        from trainers.experiments.results import EXPERIMENTS as rows

        names, shared = ("bc", "ilql"), None
    else:
        from trainers.experiments.lmrl_gym.run import ROWS as rows
        from trainers.experiments.lmrl_gym.run import TRAINING as shared

        names = ("BC", "ILQL")
    chosen = [row for row in rows if row.name in names]
    overrides = {"log_every": max(1, steps // 5), "checkpoint_every": 10**9, "resume": False, "keep_every": 0}
    out_rows = []
    for row in chosen:
        config = experiment_config(row, dataset, out / setting, steps, shared)
        for key, value in overrides.items():
            setattr(config, key, value)
        out_rows.append((row.name, row.algorithm, config))
    return out_rows


def measure(setting: str, dataset: str, steps: int, place: Placement, matmul: float,
            reader_workers: int = 0) -> list[dict[str, Any]]:
    """Trains each row of ``setting`` for ``steps`` steps (its batches decoded by ``reader_workers`` processes)
    and returns its figures."""
    from trainers.algorithms.registry import train

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, algorithm, config in setting_rows(setting, dataset, Path(tmp), steps):
            config.device, config.precision = str(place.device), place.precision
            config.reader_workers = reader_workers
            result = train(algorithm, config, progress=False)
            per_token = run_flops_per_token(algorithm, config, place)
            achieved = per_token * result.tokens_per_second
            rows.append({"setting": setting, "row": name, "algorithm": algorithm,
                         "model": {k: getattr(config.model, k) for k in ("n_layer", "n_embd", "n_head")},
                         "tokenizer": config.tokenizer, "batch_size": config.batch_size, "steps": steps,
                         "tokens_per_second": result.tokens_per_second, "flops_per_token": per_token,
                         "flops_per_second": achieved, "matmul_ratio": achieved / matmul,
                         "data_wait_share": result.data_wait_share, "reader_workers": reader_workers})
    return rows


def main() -> None:
    """Runs the benchmark and prints (and with ``--json`` writes) its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help=DEVICE_HELP)
    parser.add_argument("--precision", default="auto", choices=PRECISIONS, help=PRECISION_HELP)
    parser.add_argument("--settings", nargs="+", default=["wordle", "lmrl-gym"], choices=["wordle", "lmrl-gym"])
    parser.add_argument("--dataset", action="append", default=[], metavar="SETTING=DIR",
                        help="a built dataset folder for a setting (default: a small build of its dataset)")
    parser.add_argument("--games", type=int, default=300, help="games per recipe of the default small builds")
    parser.add_argument("--steps", type=int, default=30, help="optimizer steps of each row")
    parser.add_argument("--reader-workers", type=int, default=0,
                        help="DataLoader processes that decode batches (an ArrayRecord build; 0: the training process)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads on the CPU")
    parser.add_argument("--matmul-size", type=int, default=None,
                        help="side of the reference matrix product (default: 8192 on CUDA, 1024 on the CPU)")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    given = dict(spec.split("=", 1) for spec in args.dataset)
    unknown = sorted(set(given) - set(args.settings))
    if unknown:
        parser.error(f"--dataset for settings not run: {unknown}")
    torch.set_num_threads(args.threads)
    place = placement(args.device, args.precision)
    size = args.matmul_size or (8192 if place.device.type == "cuda" else 1024)
    matmul = matmul_flops_per_second(place, size)
    name = device_name(place.device)
    threads = f", {args.threads} thread(s)" if place.device.type == "cpu" else ""
    print(f"device {place.device} ({name}){threads}, precision {place.precision}; {size} x {size} matrix product: "
          f"{matmul / 1e9:,.1f} GFLOP/s")
    rows = []
    for setting in args.settings:
        dataset = given.get(setting) or small_dataset("branch" if setting == "wordle" else "lmrl_gym", args.games)
        rows += measure(setting, dataset, args.steps, place, matmul, args.reader_workers)
    print(f"{'setting':<9} {'row':<5} {'tokens/s':>10} {'FLOP/token':>11} {'GFLOP/s':>9} {'of matmul':>9} "
          f"{'data wait':>9}")
    for row in rows:
        print(f"{row['setting']:<9} {row['row']:<5} {row['tokens_per_second']:>10,.0f} {row['flops_per_token']:>11,.0f} "
              f"{row['flops_per_second'] / 1e9:>9,.2f} {row['matmul_ratio']:>9.1%} {row['data_wait_share']:>9.1%}")
    if args.json:
        figures = {"kind": KIND, "device": str(place.device), "device_name": name, "precision": place.precision,
                   "threads": args.threads if place.device.type == "cpu" else None, "torch": torch.__version__,
                   "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                   "matmul": {"size": size, "flops_per_second": matmul}, "rows": rows}
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
        print(f"figures -> {args.json}")


if __name__ == "__main__":
    main()
