"""Dataset statistics of RLDS episodes: counts, return / episode length / action length distributions.

``compute_statistics`` reads a dataset once, vectorised: the steps of all episodes are flattened into one
stream reduced to the few fields it needs, batched (``batch_size`` steps at a time, by count: text-only
steps are fine), measured per batch in TensorFlow (``tf.strings.length(..., unit="UTF8_CHAR")``, a
whitespace split), and cut into episodes with numpy segment sums over the ``is_last`` boundaries
(``np.add.reduceat``); an episode split across batches is carried over to the next one. No Python loop
runs per step. The result is a ``transforms.statistics_report.DatasetStatistics``, which prints a table
(``table``), summarises (``summary``) and plots three histograms to a PNG (``plot``).

SAR alignment (docs/architecture.md): step i's reward is what its action earned; the ``is_last`` step carries
no action and its reward is ignored. An episode's length is its number of actions (its non-last steps).

Example::

    from transforms.loading import load
    from transforms.statistics import compute_statistics

    stats = compute_statistics(load("wordle_synthetic", config="expert", data_dir="/tmp/tfds"))
    print(stats.table())
    stats.plot("/tmp/wordle_statistics.png")

Or from the shell: ``rlds-lang stats wordle_synthetic --config expert --data_dir /tmp/tfds --plot out.png``.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any, Iterator, Mapping

import numpy as np
import tensorflow as tf

from transforms.statistics_report import DatasetStatistics


def _resolve_action(spec: Mapping[str, Any], action_key: str) -> tuple[str, ...] | None:
    """The path of the action text: ``action_key`` split on ``/``, then the first string leaf below it.

    Leaves are visited in ``tf.nest`` order (dict keys sorted). ``None`` when the path is missing or holds no
    scalar string.
    """
    node: Any = spec
    path: tuple[str, ...] = ()
    for key in action_key.split("/"):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node, path = node[key], path + (key,)

    def first(node: Any, path: tuple[str, ...]) -> tuple[str, ...] | None:
        if isinstance(node, Mapping):
            for key in sorted(node):
                found = first(node[key], path + (key,))
                if found is not None:
                    return found
            return None
        if isinstance(node, tf.TensorSpec) and node.dtype == tf.string and node.shape.rank == 0:
            return path
        return None

    return first(node, path)


def _get(step: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        step = step[key]
    return step


def _step_stream(episodes: tf.data.Dataset, action_path: tuple[str, ...] | None, reward_key: str,
                 has_reward: bool, has_terminal: bool, batch_size: int) -> tf.data.Dataset:
    """Batches of ``reward``/``is_last``/``is_terminal``/``chars``/``words`` over all steps, in order."""

    def select(step: Mapping[str, Any]) -> dict[str, tf.Tensor]:  # per step: picks fields, computes nothing
        out = {"is_last": step["is_last"]}
        if has_terminal:
            out["is_terminal"] = step["is_terminal"]
        if has_reward:
            out["reward"] = step[reward_key]
        if action_path is not None:
            out["action"] = _get(step, action_path)
        return out

    def measure(batch: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:  # per batch: vectorised
        n = tf.shape(batch["is_last"])[0]
        out = {"is_last": tf.cast(batch["is_last"], tf.bool),
               "is_terminal": (tf.cast(batch["is_terminal"], tf.bool) if has_terminal
                               else tf.zeros([n], tf.bool)),
               "reward": (tf.cast(batch["reward"], tf.float64) if has_reward
                          else tf.fill([n], tf.constant(math.nan, tf.float64)))}
        if action_path is not None:
            out["chars"] = tf.cast(tf.strings.length(batch["action"], unit="UTF8_CHAR"), tf.int64)
            out["words"] = tf.strings.split(batch["action"]).row_lengths()
        return out

    steps = episodes.flat_map(lambda episode: episode["steps"].map(select))
    return steps.batch(batch_size).map(measure, num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)


def _episodes_of(chunk: dict[str, np.ndarray], win_reward: float | None) -> dict[str, np.ndarray]:
    """Per-episode and per-action arrays of a chunk of whole episodes (its last step is ``is_last``)."""
    last = chunk["is_last"]
    ends = np.flatnonzero(last)
    starts = np.concatenate([[0], ends[:-1] + 1])
    acting = ~last
    rewards = np.where(last, 0.0, chunk["reward"])
    lengths = np.add.reduceat(acting.astype(np.int64), starts)
    returns = np.add.reduceat(rewards, starts)
    terminal = chunk["is_terminal"][ends]
    final_reward = np.where(lengths > 0, chunk["reward"][np.maximum(ends - 1, 0)], -np.inf)
    won = terminal & (lengths > 0) & (final_reward >= (np.inf if win_reward is None else win_reward))
    out = {"returns": returns, "lengths": lengths, "terminal": terminal, "won": won}
    if "chars" in chunk:
        out["chars"], out["words"] = chunk["chars"][acting], chunk["words"][acting]
    return out


def _whole_episode_chunks(batches: Iterator[dict[str, np.ndarray]]) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
    """``(steps in the batch, chunk of whole episodes)`` per batch; the open episode carries to the next.

    The carried steps are prepended to the next batch, so every episode is summed from one contiguous
    array whatever the batch size (results do not depend on where batches cut).
    """
    pending: dict[str, np.ndarray] | None = None
    for batch in batches:
        n = len(batch["is_last"])
        if pending is not None:
            batch = {key: np.concatenate([pending[key], value]) for key, value in batch.items()}
        ends = np.flatnonzero(batch["is_last"])
        if ends.size == 0:
            pending = batch
            yield n, {}
            continue
        cut = int(ends[-1]) + 1
        pending = {key: value[cut:] for key, value in batch.items()} if cut < len(batch["is_last"]) else None
        yield n, {key: value[:cut] for key, value in batch.items()}
    if pending is not None and len(pending["is_last"]):
        warnings.warn(f"compute_statistics: {len(pending['is_last'])} trailing steps have no is_last step after "
                      "them; they count as steps but belong to no episode", RuntimeWarning, stacklevel=3)


def compute_statistics(episodes: tf.data.Dataset, win_reward: float | None = 0.0, action_key: str = "action",
                       reward_key: str = "reward", batch_size: int = 4096) -> DatasetStatistics:
    """Statistics of an RLDS episodes dataset, read once and vectorised.

    Args:
      episodes: a ``tf.data.Dataset`` of RLDS episodes ``{"steps": Dataset(step), ...}`` (as
        ``transforms.loading.load`` returns). Steps need ``is_last``; ``is_terminal`` is read when present
        (without it every episode counts as truncated), the reward when present (without it returns and
        the win rate are NaN). Steps may hold only strings and flags.
      win_reward: an episode is won when it terminated and its final action earned at least this
        (Wordle: the winning guess earns 0, every other guess -1); ``None`` for a task without such a rule (no
        win rate: ``DatasetStatistics.win_rate`` is NaN and the table leaves it out).
      action_key: the action's field, or a ``/``-separated path into a nested action
        (``"action/text"``). When it names a dict, the first scalar string leaf in ``tf.nest`` order (keys
        sorted, depth first) is measured; ``DatasetStatistics.action_field`` says which. When no string is
        found, action lengths are empty.
      reward_key: the reward's field (cast to float64; the reward of ``is_last`` steps is ignored).
      batch_size: steps per batch (by count, so text-only steps are fine); any value gives the same result.

    Steps after the last ``is_last`` (an unfinished episode) count in ``steps`` only, with a warning.

    >>> steps = {"action": ["crane", "二 🟩", ""], "reward": [-1.0, 0.0, 0.0],
    ...          "is_last": [False, False, True], "is_terminal": [False, False, True]}
    >>> episodes = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps)}).repeat(2)
    >>> stats = compute_statistics(episodes, batch_size=2)
    >>> stats.episodes, stats.steps, stats.actions, stats.terminated, stats.win_rate
    (2, 6, 4, 2, 1.0)
    >>> stats.returns.tolist(), stats.episode_lengths.tolist(), stats.action_lengths.tolist()
    ([-1.0, -1.0], [2, 2], [5, 3, 5, 3])
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    spec = episodes.element_spec
    if not isinstance(spec, Mapping) or "steps" not in spec:
        raise ValueError(f"compute_statistics: episodes must be dicts with a 'steps' dataset, got {spec}")
    step_spec = spec["steps"].element_spec
    if not isinstance(step_spec, Mapping) or "is_last" not in step_spec:
        raise KeyError(f"compute_statistics: steps need an 'is_last' field; they have "
                       f"{sorted(step_spec) if isinstance(step_spec, Mapping) else step_spec}")
    action_path = _resolve_action(step_spec, action_key)
    stream = _step_stream(episodes, action_path, reward_key, reward_key in step_spec, "is_terminal" in step_spec,
                          batch_size)

    n_steps = 0
    parts: dict[str, list[np.ndarray]] = {"returns": [], "lengths": [], "terminal": [], "won": [], "chars": [],
                                          "words": []}
    for n, chunk in _whole_episode_chunks(stream.as_numpy_iterator()):
        n_steps += n
        if chunk:
            for key, value in _episodes_of(chunk, win_reward).items():
                parts[key].append(value)

    def joined(key: str, dtype: Any) -> np.ndarray:
        return np.concatenate(parts[key]).astype(dtype) if parts[key] else np.zeros([0], dtype)

    lengths, terminal = joined("lengths", np.int64), joined("terminal", bool)
    return DatasetStatistics(
        episodes=int(lengths.size), steps=n_steps, actions=int(lengths.sum()), terminated=int(terminal.sum()),
        truncated=int(lengths.size - terminal.sum()), wins=int(joined("won", bool).sum()),
        win_reward=None if win_reward is None else float(win_reward), returns=joined("returns", np.float64), episode_lengths=lengths,
        action_lengths=joined("chars", np.int64), action_words=joined("words", np.int64),
        action_field="/".join(action_path) if action_path is not None else None)


def dataset_statistics(episodes: tf.data.Dataset, win_reward: float = 0.0) -> dict[str, float]:
    """Episodes, steps (all RLDS steps, ``is_last`` included), actions, mean/min/max return and win rate.

    An episode counts as won when it terminated (``is_terminal`` on its last step) and its final action
    earned at least ``win_reward`` (Wordle: the winning guess earns 0, every other guess -1). The compact
    dict form of ``compute_statistics`` (for callers that want a plain dict).

    >>> steps = {"action": ["crane", ""], "reward": [0.0, 0.0], "is_last": [False, True],
    ...          "is_terminal": [False, True]}
    >>> dataset_statistics(tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps)}))
    {'episodes': 1, 'steps': 2, 'actions': 1, 'mean_return': 0.0, 'min_return': 0.0, 'max_return': 0.0, 'win_rate': 1.0}
    """
    stats = compute_statistics(episodes, win_reward=win_reward)
    returns = stats.returns
    return {
        "episodes": stats.episodes,
        "steps": stats.steps,
        "actions": stats.actions,
        "mean_return": float(returns.mean()) if stats.episodes else float("nan"),
        "min_return": float(returns.min()) if stats.episodes else float("nan"),
        "max_return": float(returns.max()) if stats.episodes else float("nan"),
        "win_rate": stats.win_rate,
    }


def returns_and_lengths(dataset_dir: str | os.PathLike, split: str = "train",
                        batch_size: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """``(returns, lengths)`` of every episode of a built RLDS dataset's split, read straight from its record files.

    TFDS stores each field of the ``steps`` feature (a ``tfds.features.Dataset``) as one flat list per episode
    under ``steps/<field>``; only ``steps/reward`` is parsed, batched and summed as a ragged tensor, so the
    1,000,000 episodes of ``wordle_synthetic/lmrl_gym`` take about 10 s, where a per-episode reduce over the
    nested steps datasets took over an hour. Returns and lengths follow the SAR alignment of
    ``compute_statistics`` (the ``is_last`` step's reward is ignored and it is not an action) and agree with it
    (tested); the order is the record files' order.
    """
    import tensorflow_datasets as tfds

    builder = tfds.builder_from_directory(os.fspath(dataset_dir))
    steps = builder.info.features["steps"]
    if not isinstance(steps, tfds.features.Dataset) or "reward" not in steps.feature:
        raise KeyError(f"{dataset_dir}: its 'steps' feature has no 'reward' field (features: {builder.info.features})")
    files = [os.fspath(path) for path in builder.info.splits[split].filepaths]
    spec = {"steps/reward": tf.io.RaggedFeature(tf.float32)}

    def measure(records: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        rewards = tf.cast(tf.io.parse_example(records, spec)["steps/reward"], tf.float64)[:, :-1]
        return tf.reduce_sum(rewards, axis=1), rewards.row_lengths()

    pairs = list(tf.data.TFRecordDataset(files).batch(batch_size).map(measure).as_numpy_iterator())
    if not pairs:
        return np.zeros(0, np.float64), np.zeros(0, np.int64)
    return (np.concatenate([r for r, _ in pairs]).astype(np.float64),
            np.concatenate([n for _, n in pairs]).astype(np.int64))


__all__ = ["compute_statistics", "dataset_statistics", "returns_and_lengths"]
