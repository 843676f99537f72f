"""Benchmark of the transforms library: ours against ``rlds.transformations`` and against a plain Python
loop, on the same episodes and the same operations, measured in one run; and tf.data → PyTorch throughput.

Operations: episode return sums (one return per episode), batched windows (size 4, shift 1, within
episodes), and mean/std of numeric step fields with the SAR mask. Figures are steps/s (best of
``--repeats``) and the ratios ours/rlds and ours/Python loop.

Run it in both environments; each prints what it can measure:

    .venv/bin/python bench/transforms.py          # main stack: ours vs Python loop, tf.data -> torch
    .venv-legacy/bin/python bench/transforms.py   # TF 2.15 stack: ours vs rlds vs Python loop

Targets (issue 3): no transform slower than rlds' counterpart; episode-return sums at least 10x the loop.
Episodes are synthetic Wordle-like games (2-7 steps: text observation, int8[5] feedback, turn, 5-letter
action, reward, discount, flags), generated from ``--seed``; or pass ``--data_dir`` of a built RLDS dataset.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import transforms  # noqa: E402

SQUARES = np.array(["⬛", "🟨", "🟩"])


def synthetic_episodes(n: int, seed: int) -> tf.data.Dataset:
    """``n`` Wordle-like SAR episodes as a ``tf.data`` dataset of ``{"steps": Dataset, "episode_id"}``."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, 8, size=n)
    total = int(lengths.sum())
    feedback = rng.integers(0, 3, size=(total, 5)).astype(np.int8)
    text = np.array(["".join(SQUARES[row]) for row in feedback], dtype=object)
    letters = rng.integers(0, 26, size=(total, 5))
    action = np.array(["".join(chr(97 + c) for c in row) for row in letters], dtype=object)
    starts = np.cumsum(lengths) - lengths
    turn = (np.arange(total) - np.repeat(starts, lengths)).astype(np.int32)
    is_last = turn == np.repeat(lengths - 1, lengths)
    is_first = turn == 0
    won = rng.random(n) < 0.9
    terminal = is_last & np.repeat(won, lengths)
    reward = np.where(is_last, 0.0, -1.0).astype(np.float32)
    reward[np.roll(is_last, -1) & np.repeat(won, lengths)] = 0.0  # the winning guess earns 0
    action[is_last] = ""
    discount = np.where(terminal, 0.0, 1.0).astype(np.float32)
    steps = {"observation": {"text": text, "feedback": feedback, "turn": turn}, "action": action,
             "reward": reward, "discount": discount, "is_first": is_first, "is_last": is_last,
             "is_terminal": terminal}
    ragged = tf.nest.map_structure(lambda v: tf.RaggedTensor.from_row_lengths(v, lengths), steps)
    ids = np.array([f"ep-{i:08d}" for i in range(n)], dtype=object)

    def nest(episode: dict[str, Any], episode_id: tf.Tensor) -> dict[str, Any]:
        return {"steps": tf.data.Dataset.from_tensor_slices(episode), "episode_id": episode_id}

    # Materialise once so that every timed pass reads the same in-memory episodes.
    return tf.data.Dataset.from_tensor_slices((ragged, ids)).map(nest).cache()


def numeric_fields(step: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Feedback and reward, reward masked on ``is_last`` steps (SAR), for mean/std."""
    valid = tf.logical_not(step["is_last"])
    return ({"feedback": tf.cast(step["observation"]["feedback"], tf.float32), "reward": step["reward"]},
            {"feedback": tf.constant(True), "reward": valid})


def consume(dataset: tf.data.Dataset) -> int:
    """Iterates a dataset to its end; returns the element count."""
    return int(dataset.reduce(tf.constant(0, tf.int64), lambda n, _: n + 1))


def best_seconds(fn: Callable[[], Any], repeats: int, patience: float = 30.0) -> float:
    """The fastest of ``repeats`` timed calls (one call only when it takes longer than ``patience`` s)."""
    times: list[float] = []
    while len(times) < repeats and (not times or times[0] < patience):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def python_loop_ops(episodes: tf.data.Dataset) -> dict[str, Callable[[], Any]]:
    """The same three operations written as plain Python over numpy steps."""
    def steps_of(episode):
        return list(episode["steps"].as_numpy_iterator())

    def returns():
        return [sum(float(s["reward"]) for s in steps_of(e) if not s["is_last"]) for e in episodes]

    def windows():
        out = 0
        for e in episodes:
            steps = steps_of(e)
            for start in range(len(steps)):
                out += len(steps[start:start + 4]) > 0
        return out

    def moments():
        feedback, reward = [], []
        for e in episodes:
            for s in steps_of(e):
                feedback.append(s["observation"]["feedback"].astype(np.float64))
                if not s["is_last"]:
                    reward.append(float(s["reward"]))
        return np.mean(feedback, 0), np.std(feedback, 0, ddof=1), np.mean(reward), np.std(reward, ddof=1)

    return {"episode return sums": returns, "batched windows (4, shift 1)": windows, "mean/std (SAR mask)": moments}


def our_ops(episodes: tf.data.Dataset) -> dict[str, Callable[[], Any]]:
    """Our transforms for the three operations."""
    return {
        "episode return sums": lambda: transforms.episode_returns(episodes),
        "batched windows (4, shift 1)": lambda: consume(transforms.batch_nested_steps(episodes, size=4, shift=1)),
        "mean/std (SAR mask)": lambda: transforms.mean_and_std(episodes, numeric_fields),
    }


def rlds_ops(episodes: tf.data.Dataset, rlds: Any) -> dict[str, Callable[[], Any]]:
    """``rlds.transformations`` for the three operations (its default, automatic batch sizes)."""
    rt = rlds.transformations

    def returns():
        def one(episode):
            masked = lambda s: tf.where(s["is_last"], 0.0, s["reward"])  # noqa: E731 - SAR: ignore is_last
            return rt.sum_dataset(episode["steps"], masked)
        return np.concatenate(list(episodes.map(one).batch(4096).as_numpy_iterator()))

    return {
        "episode return sums": returns,
        "batched windows (4, shift 1)": lambda: consume(
            episodes.flat_map(lambda e: rt.batch(e["steps"], size=4, shift=1))),
        "mean/std (SAR mask)": lambda: rt.mean_and_std(episodes, numeric_fields),
    }


def check_agreement(episodes: tf.data.Dataset, rlds: Any | None) -> None:
    """Fails loudly if ours, the loop and rlds disagree on the figures being timed."""
    ours = transforms.episode_returns(episodes)
    loop = np.array(python_loop_ops(episodes.take(200))["episode return sums"]())
    np.testing.assert_allclose(ours[:200], loop)
    if rlds is not None:
        np.testing.assert_allclose(ours, rlds_ops(episodes, rlds)["episode return sums"](), rtol=1e-6)
        ours_m, ours_s = transforms.mean_and_std(episodes, numeric_fields)
        theirs_m, theirs_s = rlds.transformations.mean_and_std(episodes, numeric_fields)
        for key in ours_m:
            np.testing.assert_allclose(ours_m[key], theirs_m[key], rtol=1e-6)
            np.testing.assert_allclose(ours_s[key], theirs_s[key], rtol=1e-6)


def torch_throughput(episodes: tf.data.Dataset, steps: int, repeats: int) -> None:
    """Turns/s from tf.data into PyTorch: per-turn Python dicts, and batched tensors."""
    try:
        from torch.utils.data import DataLoader

        from transforms.torch_bridge import TensorBatches, TurnDataset
    except ImportError as error:
        print(f"tf.data -> torch: skipped ({error.name} is not installed in this environment)")
        return
    turns = transforms.to_turns(episodes)
    n_turns = consume(turns)

    def per_turn():
        return sum(len(b["action"]) for b in DataLoader(TurnDataset(turns=turns), batch_size=256))

    def batched():
        return sum(int(b["reward"].shape[0]) for b in DataLoader(TensorBatches(turns.batch(256)), batch_size=None))

    for name, fn in [("per-turn dicts (TurnDataset + DataLoader)", per_turn),
                     ("batched in tf.data (TensorBatches)", batched)]:
        seconds = best_seconds(fn, repeats)
        print(f"tf.data -> torch, {name:<45} {n_turns / seconds:>12,.0f} turns/s")


def main() -> None:
    """Runs the benchmark and prints its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=5_000)
    parser.add_argument("--loop-episodes", type=int, default=1_000,
                        help="episodes for the (slow) Python loop; its rate is per step, so comparable")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    try:
        import rlds  # only on the legacy TF 2.15 stack (ARCHITECTURE.md)
    except ImportError:
        rlds = None
    print(f"TensorFlow {tf.__version__}; rlds {'available' if rlds else 'not installed (main stack)'}; "
          f"{args.episodes:,} episodes; best of {args.repeats}")
    episodes = synthetic_episodes(args.episodes, args.seed)
    count = lambda b: tf.ones_like(b["reward"], tf.int64)  # noqa: E731 - one per step of a batch
    steps = int(transforms.sum_nested_steps(episodes, count, batched=True))
    loop_episodes = episodes.take(args.loop_episodes)
    loop_steps = int(transforms.sum_nested_steps(loop_episodes, count, batched=True))
    print(f"{steps:,} steps ({loop_steps:,} in the loop's subset)")
    check_agreement(episodes, rlds)

    ours, loop = our_ops(episodes), python_loop_ops(loop_episodes)
    theirs = rlds_ops(episodes, rlds) if rlds else {}
    header = f"{'operation':<30} {'ours steps/s':>14} {'rlds steps/s':>14} {'loop steps/s':>14} {'ours/rlds':>10} {'ours/loop':>10}"
    print(header)
    print("-" * len(header))
    for name in ours:
        ours_rate = steps / best_seconds(ours[name], args.repeats)
        loop_rate = loop_steps / best_seconds(loop[name], 1)
        rlds_rate = steps / best_seconds(theirs[name], args.repeats) if name in theirs else float("nan")
        print(f"{name:<30} {ours_rate:>14,.0f} {rlds_rate:>14,.0f} {loop_rate:>14,.0f} "
              f"{ours_rate / rlds_rate:>10.2f} {ours_rate / loop_rate:>10.1f}")
    torch_throughput(episodes, steps, args.repeats)


if __name__ == "__main__":
    main()
