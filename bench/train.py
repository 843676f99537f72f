"""Benchmark of the trainers: training tokens/s of BC and ILQL at one fixed model size, and the share of the
step time spent waiting for data (target < 5%), measured in one run on the same data; and the cost of
resuming a run at step ``--resume-at``: replaying the data stream against restoring its saved position
(``transforms.torch_bridge.ResumableBatches``), seconds to the first batch after the stop.

The data is a small ``wordle_synthetic/branch`` build (``RLDS_LANG_SMALL`` games, built once into
``.cache/bench/tfds`` with the ``tfds`` command line) unless ``--dataset`` names a built dataset folder.
Throughput is measured from the end of each run's first step (``trainers.core.loop.TrainResult``).

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

from trainers.algorithms.bc import BCConfig  # noqa: E402
from trainers.algorithms.ilql.ilql import ILQLConfig  # noqa: E402
from trainers.algorithms.registry import train  # noqa: E402
from trainers.core.build import tfds_build  # noqa: E402
from trainers.core.model import ModelConfig  # noqa: E402


def small_dataset(config: str, games: int) -> str:
    """Builds (once, under ``.cache/bench``) ``wordle_synthetic/<config>`` capped at ``games`` games per recipe and
    returns its folder."""
    return tfds_build("wordle_synthetic", config, REPO / ".cache" / "bench" / f"tfds-{config}-{games}", small=games,
                      quiet=True)


def small_branch_dataset(games: int) -> str:
    """Builds (once) a ``branch`` dataset capped at ``games`` expert games and returns its folder."""
    return small_dataset("branch", games)


def main() -> None:
    """Runs the benchmark and prints its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=None, help="a built dataset folder (default: a small branch build)")
    parser.add_argument("--games", type=int, default=300, help="expert games of the default small build")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--resume-at", type=int, default=2000, help="step at which the resume figures stop a run")
    args = parser.parse_args()
    dataset = args.dataset or small_branch_dataset(args.games)
    model = ModelConfig(n_layer=args.layers, n_embd=args.width, n_head=4)
    print(f"dataset {dataset}\nmodel GPT-2 {args.layers} layers x {args.width}, batch {args.batch_size} episodes "
          f"(padded to 96 tokens, each batch cut to its longest), {args.steps} steps")
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
    padded, trimmed = padding_cost(BCConfig(dataset=dataset, batch_size=args.batch_size, model=model))
    print(f"BC step on batches cut to their longest sequence (trim_padding) vs padded to max_length 96: "
          f"{trimmed * 1e3:.0f} ms vs {padded * 1e3:.0f} ms, {padded / trimmed:.2f}x faster")
    replay, restore, size = resume_cost(BCConfig(dataset=dataset, batch_size=args.batch_size, model=model),
                                        args.resume_at)
    print(f"resume at step {args.resume_at}: first batch after {replay:.2f} s replaying the stream, {restore:.2f} s "
          f"restoring its saved position ({size / 2**20:.1f} MiB), {replay / restore:.1f}x faster")


def padding_cost(config: BCConfig, batches: int = 20) -> tuple[float, float]:
    """Mean seconds of a BC forward and backward pass on the same batches, padded to ``max_length`` and as
    ``training_batches`` yields them (cut by ``transforms.torch_bridge.trim_padding``), interleaved."""
    import time

    import torch

    from rlds_lang.tokenizers import make_tokenizer
    from trainers.algorithms.bc import BCModel
    from trainers.core.loop import DistInfo, training_batches

    tokenizer = make_tokenizer(config.tokenizer)
    model = BCModel(config, tokenizer)
    stream = training_batches(config, tokenizer, DistInfo())
    seconds = {"padded": 0.0, "trimmed": 0.0}
    for _ in range(batches):
        trimmed = next(stream)
        width = config.max_length - trimmed["attention_mask"].shape[1]
        padded = {k: torch.nn.functional.pad(v, (0, 0) * (v.dim() - 2) + (0, width))
                  if isinstance(v, torch.Tensor) and v.dim() >= 2 else v for k, v in trimmed.items()}
        for name, batch in (("padded", padded), ("trimmed", trimmed)):
            start = time.perf_counter()
            model(batch).loss.backward()
            seconds[name] += time.perf_counter() - start
    return seconds["padded"] / batches, seconds["trimmed"] / batches


def resume_cost(config: BCConfig, steps: int) -> tuple[float, float, int]:
    """Seconds to the first batch after step ``steps`` of a run's stream, replayed (``skip``) and restored from
    the position saved there, and the saved position's size in bytes."""
    import time

    from rlds_lang.tokenizers import make_tokenizer
    from trainers.core.loop import DistInfo, training_batches

    tokenizer = make_tokenizer(config.tokenizer)
    with tempfile.TemporaryDirectory() as tmp:
        stream = training_batches(config, tokenizer, DistInfo(), skip=steps)
        stream.save(tmp)
        size = sum(f.stat().st_size for f in Path(tmp).iterdir())
        start = time.perf_counter()
        next(training_batches(config, tokenizer, DistInfo(), skip=steps))
        replay = time.perf_counter() - start
        start = time.perf_counter()
        next(training_batches(config, tokenizer, DistInfo(), restore=Path(tmp)))
        return replay, time.perf_counter() - start, size


if __name__ == "__main__":
    main()
