"""Benchmark of the transforms library: ours against ``rlds.transformations`` and against a plain Python
loop, on the same episodes and the same operations, measured in one run; and tf.data → PyTorch throughput.

Operations: episode return sums (one return per episode), batched windows (size 4, shift 1, within
episodes), and mean/std of numeric step fields with the SAR mask. Figures are steps/s (best of
``--repeats``; building the pipeline is timed too) and the ratios ours/rlds and ours/Python loop.

Run it in both environments; each prints what it can measure:

    .venv/bin/python bench/transforms.py          # main stack: ours vs Python loop, tf.data -> torch
    .venv-legacy/bin/python bench/transforms.py   # TF 2.15 stack: ours vs rlds vs Python loop
    .venv-legacy/bin/python bench/transforms.py --ops windows --repeats 7   # one operation only

``--ops`` picks operations (``returns``, ``windows``, ``moments``, ``torch``; default all): rlds' own
``sum_dataset`` makes the legacy ``returns`` row take most of a full run. Ours and rlds are timed
alternately, repeat by repeat, so that a busy machine slows both alike; the table gives the best rate of
each and the ratio of the best and of the median times.

Targets: no transform slower than rlds' counterpart; episode-return sums at least 10x the loop.
Episodes are synthetic Wordle-like games (2-7 steps: text observation, int8[5] feedback, turn, 5-letter
action, reward, discount, flags), generated from ``--seed``; or pass ``--data_dir`` of a built RLDS dataset.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
# Keras and matplotlib (imported by TensorFlow and rlds) keep their caches in the repository, not in ~.
os.environ.setdefault("KERAS_HOME", os.path.join(REPO, ".cache", "keras"))
os.environ.setdefault("MPLCONFIGDIR", os.path.join(REPO, ".cache", "matplotlib"))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import transforms  # noqa: E402

SQUARES = np.array(["⬛", "🟨", "🟩"])
#: Operations compared with rlds and the loop (``--ops`` key -> row name); ``torch`` is tf.data -> PyTorch.
OPERATIONS = {"returns": "episode return sums", "windows": "batched windows (4, shift 1)",
              "moments": "mean/std (SAR mask)"}


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


@tf.autograph.experimental.do_not_convert
def _count(n: tf.Tensor, _: Any) -> tf.Tensor:
    return n + 1


def consume(dataset: tf.data.Dataset) -> int:
    """Iterates a dataset to its end; returns the element count."""
    return int(dataset.reduce(tf.constant(0, tf.int64), _count))


def timed_alternately(fns: dict[str, Callable[[], Any]], repeats: int, patience: float = 30.0) -> dict[str, list[float]]:
    """Seconds of ``repeats`` calls of each function, called in turn (a, b, a, b, ...) so that a busy machine
    slows them alike; a function whose call takes longer than ``patience`` s is called once only."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            if times[name] and times[name][0] >= patience:
                continue
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def best_seconds(fn: Callable[[], Any], repeats: int, patience: float = 30.0) -> float:
    """The fastest of ``repeats`` timed calls (one call only when it takes longer than ``patience`` s)."""
    return min(timed_alternately({"fn": fn}, repeats, patience)["fn"])


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

    return {"returns": returns, "windows": windows, "moments": moments}


def our_windows(episodes: tf.data.Dataset) -> tf.data.Dataset:
    """Windows of 4 steps, shift 1, within each episode (ours)."""
    return transforms.batch_nested_steps(episodes, size=4, shift=1)


def rlds_windows(episodes: tf.data.Dataset, rlds: Any) -> tf.data.Dataset:
    """The same windows with ``rlds.transformations.batch`` applied to each episode's steps."""
    return episodes.flat_map(lambda e: rlds.transformations.batch(e["steps"], size=4, shift=1))


def our_ops(episodes: tf.data.Dataset) -> dict[str, Callable[[], Any]]:
    """Our transforms for the three operations."""
    return {
        "returns": lambda: transforms.episode_returns(episodes),
        "windows": lambda: consume(our_windows(episodes)),
        "moments": lambda: transforms.mean_and_std(episodes, numeric_fields),
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
        "returns": returns,
        "windows": lambda: consume(rlds_windows(episodes, rlds)),
        "moments": lambda: rt.mean_and_std(episodes, numeric_fields),
    }


def check_agreement(episodes: tf.data.Dataset, rlds: Any | None, ops: list[str]) -> None:
    """Fails loudly if ours, the loop and rlds disagree on the figures being timed (the ``ops`` among them)."""
    if "returns" in ops:
        ours = transforms.episode_returns(episodes)
        np.testing.assert_allclose(ours[:200], np.array(python_loop_ops(episodes.take(200))["returns"]()))
        if rlds is not None:
            np.testing.assert_allclose(ours, rlds_ops(episodes, rlds)["returns"](), rtol=1e-6)
    if "windows" in ops:
        some = episodes.take(300)
        assert consume(our_windows(some)) == python_loop_ops(some)["windows"](), "window counts differ from the loop"
        if rlds is not None:
            for a, b in zip(our_windows(some).as_numpy_iterator(), rlds_windows(some, rlds).as_numpy_iterator(),
                            strict=True):
                tf.nest.map_structure(np.testing.assert_array_equal, a, b)
    if "moments" in ops and rlds is not None:
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


def parse_ops(text: str) -> list[str]:
    """``--ops`` as a list of operation keys, checked."""
    ops = [op.strip() for op in text.split(",") if op.strip()]
    unknown = sorted(set(ops) - set(OPERATIONS) - {"torch"})
    if unknown or not ops:
        raise argparse.ArgumentTypeError(f"unknown operation(s) {unknown}; choose among "
                                         f"{', '.join([*OPERATIONS, 'torch'])}")
    return ops


def main() -> None:
    """Runs the benchmark and prints its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=5_000)
    parser.add_argument("--loop-episodes", type=int, default=1_000,
                        help="episodes for the (slow) Python loop; its rate is per step, so comparable")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ops", type=parse_ops, default=[*OPERATIONS, "torch"],
                        help=f"comma-separated operations to run (default all): {', '.join([*OPERATIONS, 'torch'])}")
    args = parser.parse_args()

    try:
        import rlds  # only on the legacy TF 2.15 stack (docs/architecture.md)
    except ImportError:
        rlds = None
    print(f"TensorFlow {tf.__version__}; rlds {'available' if rlds else 'not installed (main stack)'}; "
          f"{args.episodes:,} episodes; best of {args.repeats}; ops {','.join(args.ops)}")
    episodes = synthetic_episodes(args.episodes, args.seed)
    count = lambda b: tf.ones_like(b["reward"], tf.int64)  # noqa: E731 - one per step of a batch
    steps = int(transforms.sum_nested_steps(episodes, count, batched=True))
    loop_episodes = episodes.take(args.loop_episodes)
    loop_steps = int(transforms.sum_nested_steps(loop_episodes, count, batched=True))
    print(f"{steps:,} steps ({loop_steps:,} in the loop's subset)")
    check_agreement(episodes, rlds, args.ops)

    ours, loop = our_ops(episodes), python_loop_ops(loop_episodes)
    theirs = rlds_ops(episodes, rlds) if rlds else {}
    header = (f"{'operation':<30} {'ours steps/s':>14} {'rlds steps/s':>14} {'loop steps/s':>14} "
              f"{'ours/rlds':>10} {'(median)':>9} {'ours/loop':>10}")
    print(header)
    print("-" * len(header))
    for key in (op for op in args.ops if op in OPERATIONS):
        times = timed_alternately({"ours": ours[key], **({"rlds": theirs[key]} if key in theirs else {})}, args.repeats)
        ours_rate = steps / min(times["ours"])
        rlds_rate = steps / min(times["rlds"]) if "rlds" in times else float("nan")
        median_ratio = (float(np.median(times["rlds"]) / np.median(times["ours"])) if "rlds" in times
                        else float("nan"))
        loop_rate = loop_steps / best_seconds(loop[key], 1)
        print(f"{OPERATIONS[key]:<30} {ours_rate:>14,.0f} {rlds_rate:>14,.0f} {loop_rate:>14,.0f} "
              f"{ours_rate / rlds_rate:>10.2f} {median_ratio:>9.2f} {ours_rate / loop_rate:>10.1f}", flush=True)
    if "torch" in args.ops:
        torch_throughput(episodes, steps, args.repeats)


if __name__ == "__main__":
    main()
