"""Benchmark of the token-level MDP pipeline into PyTorch: ``token_batches`` -> ``TensorBatches`` -> ``DataLoader``.

Episodes are the synthetic Wordle-like games of ``bench/transforms.py`` (2-7 steps, square feedback, random
5-letter guesses), held in memory so that only the pipeline is timed. Figures (best of ``--repeats``):
batches/s, real tokens/s (attention mask sum) and episodes/s after the first batch, the start-up time to
the first batch and episodes/s end to end (a shuffle buffer fills during start-up), for the plain pipeline, with a shuffle
buffer, with in-memory ``cache`` over two epochs, and with %BC selection (``top_p``). Then the share of a
training loop's time spent waiting for data, with a CPU-bound stand-in for a training step of
``--step-ms`` milliseconds (torch matmuls on the same 2 cores the pipeline uses). Last, the two readers of a
built dataset (``trainers.core.data``) on the same episodes stored twice with TFDS: ``tf.data`` over the TFRecord
build and ``tfds.data_source`` + ``DataLoader`` over the ArrayRecord build (no TensorFlow), in-process and with
DataLoader workers: training batches/s (shuffled, repeated, as a run reads them) and whether their first batches
are equal.

    .venv/bin/python bench/token_pipeline.py                 # 10,000 episodes, batch 64, max_length 128
    .venv/bin/python bench/token_pipeline.py --episodes 2000 --repeats 1
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any, Callable, Iterator

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tensorflow as tf  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from bench.transforms import synthetic_episodes  # noqa: E402
from rlds_lang.tokenizers import wordle_tokenizer  # noqa: E402
from transforms.token_mdp import TokenMDPConfig, token_batches  # noqa: E402
from transforms.torch_bridge import ResumableBatches, TensorBatches, trim_padding  # noqa: E402


def drain(batches: tf.data.Dataset) -> tuple[float, float, int, int, int]:
    """Iterates torch batches to the end. Returns (seconds to the first batch, seconds after it, and after
    the first batch: batches, real tokens, sequences) so that start-up and steady state are told apart."""
    n_batches = tokens = sequences = 0
    start = time.perf_counter()
    first = None
    for batch in DataLoader(TensorBatches(batches), batch_size=None):
        if first is None:
            first = time.perf_counter()
            continue
        n_batches += 1
        tokens += int(batch["attention_mask"].sum())
        sequences += int(batch["input_ids"].shape[0])
    end = time.perf_counter()
    return first - start, end - first, n_batches, tokens, sequences


def throughput(name: str, make: Callable[[], tf.data.Dataset], repeats: int) -> None:
    """Prints steady-state batches/s, tokens/s and episodes/s of draining ``make()`` into torch, and the
    time to its first batch (pipeline start-up: tracing, first fill), best of ``repeats``."""
    runs = [drain(make()) for _ in range(repeats)]
    startup, seconds, n_batches, tokens, sequences = min(runs, key=lambda r: (r[0] + r[1]) / max(r[2], 1))
    print(f"{name:<44} {n_batches / seconds:>10,.1f} {tokens / seconds:>14,.0f} {sequences / seconds:>12,.0f} "
          f"{startup:>10.2f} {sequences / (startup + seconds):>12,.0f}")


def training_wait_share(batches: tf.data.Dataset, step_ms: float, steps: int, skip: int = 1) -> None:
    """Share of time a stand-in training loop (CPU-bound, ``step_ms`` per step) waits on ``next(batch)``,
    after ``skip`` batches (pipeline start-up; a first epoch when it fills a cache)."""
    size = 256
    a = torch.randn(size, size)
    for _ in range(50):  # warm-up (thread pool, caches) before calibrating
        a @ a
    start = time.perf_counter()
    for _ in range(200):
        (a @ a) / a.norm()
    per_matmul = (time.perf_counter() - start) / 200
    matmuls = max(1, round(step_ms / 1000 / per_matmul))
    iterator = iter(DataLoader(TensorBatches(batches), batch_size=None))
    for _ in range(skip):  # start-up (tracing, first fill of the buffers, the cache) is not steady state
        next(iterator)
    waited = total = 0.0
    for _ in range(steps):
        t0 = time.perf_counter()
        batch = next(iterator)
        t1 = time.perf_counter()
        x = a + float(batch["rewards"].sum())
        for _ in range(matmuls):
            x = x @ a
            x = x / x.norm()
        t2 = time.perf_counter()
        waited += t1 - t0
        total += t2 - t0
    print(f"stand-in training step {total / steps * 1000:.0f} ms (target {step_ms:.0f} ms): waiting for data "
          f"{100 * waited / total:.1f}% of the time ({waited / steps * 1000:.2f} ms per step)")


def stored_twice(episodes: tf.data.Dataset, folder: str) -> dict[str, str]:
    """``episodes`` (text observations) written with TFDS as TFRecord and as ArrayRecord: ``{format: folder}``."""
    import tensorflow_datasets as tfds

    step = {"observation": tfds.features.Text(), "action": tfds.features.Text(), "reward": tf.float32,
            "is_last": tf.bool, "is_terminal": tf.bool}
    features = tfds.features.FeaturesDict({"episode_id": tfds.features.Text(), "steps": tfds.features.Dataset(step)})
    games = [{"episode_id": e["episode_id"], "steps": [{**{k: s[k] for k in step if k != "observation"},
                                                        "observation": s["observation"]["text"]} for s in e["steps"]]}
             for e in tfds.as_numpy(episodes)]
    keyed = [(g["episode_id"].decode(), g) for g in games]
    return {fmt: tfds.dataset_builders.store_as_tfds_dataset(
        "bench_games", "1.0.0", features, {"train": keyed}, data_dir=os.path.join(folder, fmt),
        file_format=fmt).data_dir for fmt in ("tfrecord", "array_record")}


def reader_rate(name: str, batches: Iterator[dict[str, Any]], count: int) -> dict[str, Any]:
    """Prints batches/s and tokens/s of ``count`` batches after the first (start-up apart); returns the first."""
    start = time.perf_counter()
    first = next(batches)
    ready = time.perf_counter()
    tokens = 0
    for _ in range(count):
        tokens += int(next(batches)["attention_mask"].sum())
    seconds = time.perf_counter() - ready
    print(f"{name:<52} {count / seconds:>10,.1f} {tokens / seconds:>14,.0f} {ready - start:>10.2f}")
    return first


def compare_readers(episodes: tf.data.Dataset, tokenizer: Any, max_length: int, batch_size: int, count: int) -> None:
    """The tf.data and data-source readers of the same stored episodes: batches/s, and their first batches equal."""
    from transforms.array_record import open_source
    from transforms.data_source import SourceBatches
    from transforms.loading import load

    config = TokenMDPConfig(max_length=max_length, observation_key="observation")
    with tempfile.TemporaryDirectory() as folder:
        stored = stored_twice(episodes, folder)
        print(f"\n{'reader of a built dataset (shuffle 10,000, repeat)':<52} {'batches/s':>10} {'tokens/s':>14} "
              f"{'start-up s':>10}")
        firsts = [reader_rate("tf.data over TFRecord (ResumableBatches)", ResumableBatches(token_batches(
            load(stored["tfrecord"]), tokenizer, config, batch_size, shuffle_buffer=10_000, seed=0, repeat=True,
            drop_remainder=True), then=trim_padding), count)]
        for workers in (0, 2):
            firsts.append(reader_rate(f"data_source over ArrayRecord, {workers} DataLoader workers", SourceBatches(
                open_source(stored["array_record"]), tokenizer, config, batch_size, 10_000, 0, then=trim_padding,
                workers=workers), count))
        same = all(sorted(f) == sorted(firsts[0]) and all(
            torch.equal(f[k], v) if isinstance(v, torch.Tensor) else f[k] == v for k, v in firsts[0].items())
            for f in firsts[1:])
        print(f"first batches of the three equal: {same}")


def main() -> None:
    """Runs the benchmark and prints its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--step-ms", type=float, default=50.0, help="stand-in training step duration")
    parser.add_argument("--train-steps", type=int, default=100)
    parser.add_argument("--reader-batches", type=int, default=100, help="batches timed per reader of a built dataset")
    parser.add_argument("--readers-only", action="store_true", help="only the comparison of the two readers")
    args = parser.parse_args()

    tokenizer = wordle_tokenizer()
    config = TokenMDPConfig(max_length=args.max_length)
    episodes = synthetic_episodes(args.episodes, args.seed)
    for _ in episodes:  # fill synthetic_episodes' in-memory cache: only the pipeline is timed
        pass
    print(f"TensorFlow {tf.__version__}, torch {torch.__version__}, {os.cpu_count()} CPUs; {args.episodes:,} "
          f"synthetic Wordle episodes; batch {args.batch_size}, max_length {args.max_length}; best of {args.repeats}")

    if args.readers_only:
        compare_readers(episodes, tokenizer, args.max_length, args.batch_size, args.reader_batches)
        return

    def pipeline(**kwargs: Any) -> Callable[[], tf.data.Dataset]:
        return lambda: token_batches(episodes, tokenizer, config, args.batch_size, **kwargs)

    print(f"{'pipeline (steady state after the first batch)':<44} {'batches/s':>10} {'tokens/s':>14} "
          f"{'episodes/s':>12} {'start-up s':>10} {'end-to-end':>12}")
    throughput("token_batches", pipeline(), args.repeats)
    throughput("token_batches, shuffle_buffer=10,000", pipeline(shuffle_buffer=10_000, seed=1), args.repeats)
    two_epochs = args.episodes * 2
    throughput("token_batches, cache, 2 epochs (repeat)",
               lambda: token_batches(episodes, tokenizer, config, args.batch_size, cache=True, repeat=True)
               .take(-(-two_epochs // args.batch_size)), args.repeats)
    throughput("token_batches, top_p=0.5 (two passes)", pipeline(top_p=0.5), args.repeats)
    epoch = -(-args.episodes // args.batch_size)
    for cache in (False, True):
        print(f"shuffle_buffer=10,000, repeat, cache={cache}: ", end="")
        training_wait_share(token_batches(episodes, tokenizer, config, args.batch_size, shuffle_buffer=10_000,
                                          repeat=True, cache=cache), args.step_ms, args.train_steps,
                            skip=epoch + 1 if cache else 1)
    compare_readers(episodes, tokenizer, args.max_length, args.batch_size, args.reader_batches)


if __name__ == "__main__":
    main()
