"""Choosing episodes: the top ``p`` fraction by return (filtered BC) and deterministic train/eval splits.

Example::

    from transforms.loading import load
    from transforms.selection import filter_top_p, split_by_episode_id

    episodes = load("wordle_synthetic", config="branch", data_dir="/tmp/tfds")
    best = filter_top_p(episodes, p=0.1)                    # %BC's data: the best 10% of episodes
    train, evaluation = split_by_episode_id(episodes, eval_fraction=0.05)
"""

from __future__ import annotations

import os
from typing import Any, Mapping

import numpy as np
import tensorflow as tf

from transforms.returns import add_episode_return
from transforms.top_p import cached_returns, top_p_mask

RETURN_KEY = "episode_return"


def episode_returns(episodes: tf.data.Dataset, gamma: float = 1.0, use_discount: bool = False,
                    reward_key: str = "reward") -> np.ndarray:
    """The return of every episode, in dataset order, as a float64 numpy array (one pass).

    >>> eps = tf.data.Dataset.range(3).map(lambda i: {"steps": tf.data.Dataset.from_tensors({"reward": tf.cast(i, tf.float32)})})
    >>> episode_returns(eps).tolist()
    [0.0, 1.0, 2.0]
    """
    with_returns = add_episode_return(episodes, gamma, use_discount, reward_key, RETURN_KEY)
    batches = with_returns.map(lambda episode: episode[RETURN_KEY]).batch(4096)
    parts = list(batches.as_numpy_iterator())
    return np.concatenate(parts) if parts else np.zeros([0], np.float64)


def cached_episode_returns(episodes: tf.data.Dataset, path: str | os.PathLike, key: Mapping[str, Any],
                           gamma: float = 1.0, use_discount: bool = False, reward_key: str = "reward") -> np.ndarray:
    """``episode_returns``, kept in ``path`` (``.npz``) under ``key`` (what identifies the dataset and the split):
    a resumed filtered-BC run reads them back instead of passing over every episode again (about an hour for
    LMRL-Gym's 1M games). A file with another key is recomputed and replaced; the write is atomic.

    A stale file whose key still matches (a dataset rebuilt in place) is caught by ``filter_top_p``'s second
    pass, which checks every kept episode's return against these.
    """
    key = {**key, "gamma": gamma, "use_discount": use_discount, "reward_key": reward_key}
    return cached_returns(path, key, lambda: episode_returns(episodes, gamma, use_discount, reward_key))


def filter_top_p(episodes: tf.data.Dataset, p: float, gamma: float = 1.0, use_discount: bool = False,
                 reward_key: str = "reward", returns: np.ndarray | None = None) -> tf.data.Dataset:
    """The ``ceil(p * n)`` episodes with the highest return, in their original order (filtered BC).

    Two passes: the first computes all returns, the second keeps episodes by position. The dataset must
    give its episodes in the same order each time it is read (``tfds.load`` does unless files are
    shuffled); the second pass checks every kept episode's return and fails loudly if the order changed.
    Ties at the threshold go to the earlier episodes, so exactly ``ceil(p * n)`` are kept. ``returns``: the
    episodes' returns if already known (``cached_episode_returns``), which saves the first pass.

    >>> eps = tf.data.Dataset.from_tensor_slices([3.0, 9.0, 1.0, 7.0]).map(
    ...     lambda r: {"steps": tf.data.Dataset.from_tensors({"reward": r}), "r": r})
    >>> [float(e["r"]) for e in filter_top_p(eps, 0.5)]
    [9.0, 7.0]
    """
    if returns is None:
        returns = episode_returns(episodes, gamma, use_discount, reward_key)
    keep = tf.constant(top_p_mask(returns, p))
    expected = tf.constant(returns, tf.float64)
    tagged = add_episode_return(episodes, gamma, use_discount, reward_key, RETURN_KEY).enumerate()

    def kept(index: tf.Tensor, episode: dict) -> tf.Tensor:
        check = tf.debugging.assert_equal(
            episode[RETURN_KEY], tf.gather(expected, index),
            message="filter_top_p: the dataset's episode order changed between passes (shuffled files?)")
        with tf.control_dependencies([check]):
            return tf.identity(tf.gather(keep, index))

    def untag(index: tf.Tensor, episode: dict) -> dict:
        return {key: value for key, value in episode.items() if key != RETURN_KEY}

    return tagged.filter(kept).map(untag)


def filter_min_return(episodes: tf.data.Dataset, cutoff: float, gamma: float = 1.0, use_discount: bool = False,
                      reward_key: str = "reward") -> tf.data.Dataset:
    """The episodes whose return is at least ``cutoff``, in their order (%BC by a reward cutoff, as the ILQL
    paper filters Reddit comments; one pass, unlike ``filter_top_p``).

    >>> eps = tf.data.Dataset.from_tensor_slices([3.0, 9.0, 1.0, 7.0]).map(
    ...     lambda r: {"steps": tf.data.Dataset.from_tensors({"reward": r}), "r": r})
    >>> [float(e["r"]) for e in filter_min_return(eps, 3.0)]
    [3.0, 9.0, 7.0]
    """
    tagged = add_episode_return(episodes, gamma, use_discount, reward_key, RETURN_KEY)
    kept = tagged.filter(lambda episode: episode[RETURN_KEY] >= tf.constant(cutoff, tf.float64))
    return kept.map(lambda episode: {key: value for key, value in episode.items() if key != RETURN_KEY})


def split_by_episode_id(episodes: tf.data.Dataset, eval_fraction: float, salt: str = "rlds-lang",
                        id_key: str = "episode_id", buckets: int = 10_000) -> tuple[tf.data.Dataset, tf.data.Dataset]:
    """``(train, eval)``: an episode goes to eval when the hash of ``salt:episode_id`` falls below the fraction.

    The assignment depends only on the id (a 64-bit FarmHash fingerprint, stable across TensorFlow
    versions and machines), not on order, sharding or dataset size: an episode never changes side when
    the dataset grows. Change ``salt`` for an independent split.

    >>> eps = tf.data.Dataset.range(1000).map(lambda i: {"episode_id": tf.strings.as_string(i)})
    >>> train, evaluation = split_by_episode_id(eps, 0.1)
    >>> n_train, n_eval = len(list(train)), len(list(evaluation))
    >>> n_train + n_eval, 50 < n_eval < 150
    (1000, True)
    """
    if not 0.0 <= eval_fraction <= 1.0:
        raise ValueError(f"eval_fraction must be in [0, 1], got {eval_fraction}")
    if id_key not in episodes.element_spec:
        raise KeyError(f"split_by_episode_id: episodes have no {id_key!r} field; fields are {sorted(episodes.element_spec)}")
    threshold = int(round(eval_fraction * buckets))

    def is_eval(episode: dict) -> tf.Tensor:
        return tf.strings.to_hash_bucket_fast(tf.strings.join([salt, episode[id_key]], ":"), buckets) < threshold

    return episodes.filter(lambda e: tf.logical_not(is_eval(e))), episodes.filter(is_eval)


__all__ = ["cached_episode_returns", "episode_returns", "top_p_mask", "filter_top_p", "filter_min_return", "split_by_episode_id"]
