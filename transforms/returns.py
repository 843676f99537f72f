"""Returns: per-step returns-to-go and per-episode (discounted) returns of RLDS episodes.

SAR alignment: step t's reward r_t is what its action earned; the ``is_last`` step carries no action,
so its reward is ignored (its value is not information, ARCHITECTURE.md). With ``gamma`` and optionally
the recorded per-step ``discount``,

    G_t = r_t + gamma * d_t * G_{t+1}      (d_t = discount_t if use_discount else 1; G past the end = 0)

computed per episode in one vectorised pass (the episode's steps batched into one tensor, a reverse
``tf.scan`` along time, then unbatched) — never step by step in Python.

Example::

    import tensorflow as tf
    from transforms.returns import add_returns_to_go, add_episode_return

    steps = {"reward": [-1.0, -1.0, 0.0, 0.0], "discount": [1.0] * 4, "is_last": [False, False, False, True]}
    episodes = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps)})
    [s["return_to_go"] for s in next(iter(add_returns_to_go(episodes)))["steps"].as_numpy_iterator()]
    # [-2.0, -1.0, 0.0, 0.0]
    next(add_episode_return(episodes, gamma=0.5).as_numpy_iterator())["episode_return"]   # -1.5
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from transforms.specs import batch_whole, collect, is_dense

STEPS = "steps"


def _rewards(steps: dict[str, tf.Tensor], reward_key: str) -> tf.Tensor:
    """The episode's rewards as float64, zero on ``is_last`` steps (when the field exists)."""
    if reward_key not in steps:
        raise KeyError(f"no reward field {reward_key!r} in steps with fields {sorted(steps)}")
    rewards = tf.cast(steps[reward_key], tf.float64)
    if "is_last" in steps:
        rewards = tf.where(tf.cast(steps["is_last"], tf.bool), tf.zeros_like(rewards), rewards)
    return rewards


def _return_fields(steps: tf.data.Dataset, reward_key: str, use_discount: bool) -> tf.data.Dataset:
    """``steps`` reduced to the fields returns read, so that steps whose other fields vary in shape (which
    cannot be stacked) still batch; ``steps`` itself when every field stacks."""
    if is_dense(steps.element_spec):
        return steps
    keys = [reward_key, "is_last"] + (["discount"] if use_discount else [])
    return steps.map(lambda step: {key: step[key] for key in keys if key in step})


def _discounts(steps: dict[str, tf.Tensor], rewards: tf.Tensor, gamma: float, use_discount: bool) -> tf.Tensor:
    discounts = tf.fill(tf.shape(rewards), tf.constant(gamma, tf.float64))
    if use_discount:
        discounts = discounts * tf.cast(steps["discount"], tf.float64)
    return discounts


def returns_to_go_of(steps: dict[str, tf.Tensor], gamma: float = 1.0, use_discount: bool = False,
                     reward_key: str = "reward") -> tf.Tensor:
    """Returns-to-go (float64 ``[T]``) of one episode's steps batched along time (``[T, ...]`` fields).

    >>> g = returns_to_go_of({"reward": tf.constant([1.0, 1.0, 1.0])}, gamma=0.5)
    >>> g.numpy().tolist()
    [1.75, 1.5, 1.0]
    """
    rewards = _rewards(steps, reward_key)
    discounts = _discounts(steps, rewards, gamma, use_discount)
    if gamma == 1.0 and not use_discount:  # a reverse cumulative sum, no recurrence needed
        return tf.cumsum(rewards, reverse=True)
    return tf.scan(lambda following, rd: rd[0] + rd[1] * following, (rewards, discounts),
                   initializer=tf.constant(0.0, tf.float64), reverse=True)


def add_returns_to_go(episodes: tf.data.Dataset, gamma: float = 1.0, use_discount: bool = False,
                      reward_key: str = "reward", output_key: str = "return_to_go") -> tf.data.Dataset:
    """Adds ``output_key`` (float64) to every step: the (discounted) return from that step on.

    Args:
      episodes: RLDS episodes (SAR steps with ``reward`` and ``is_last``).
      gamma: discount per step.
      use_discount: also multiply by each step's recorded ``discount`` (0 at a terminal step).
      reward_key, output_key: field names.

    >>> steps = {"reward": [1.0, 1.0, 9.0], "is_last": [False, False, True]}
    >>> eps = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps)})
    >>> [s["return_to_go"] for s in next(iter(add_returns_to_go(eps)))["steps"].as_numpy_iterator()]
    [2.0, 1.0, 0.0]
    """
    def per_episode(steps: tf.data.Dataset) -> tf.data.Dataset:
        def add(batch: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
            out = dict(batch)
            out[output_key] = returns_to_go_of(batch, gamma, use_discount, reward_key)
            return out

        if is_dense(steps.element_spec):
            return batch_whole(steps).map(add).unbatch()
        # A field varies in shape between steps: compute on the return fields alone, then index by step.
        returns = returns_to_go_of(collect(_return_fields(steps, reward_key, use_discount)), gamma, use_discount,
                                   reward_key)
        return steps.enumerate().map(lambda t, step: {**step, output_key: tf.gather(returns, t)})

    def on_episode(episode: dict[str, Any]) -> dict[str, Any]:
        out = dict(episode)
        out[STEPS] = per_episode(episode[STEPS])
        return out

    return episodes.map(on_episode)


def episode_return(steps: tf.data.Dataset, gamma: float = 1.0, use_discount: bool = False,
                   reward_key: str = "reward") -> tf.Tensor:
    """The (discounted) return of one episode's steps dataset: G_0, float64 (0.0 for no steps).

    >>> ds = tf.data.Dataset.from_tensor_slices({"reward": [-1.0, 0.0, 5.0], "is_last": [False, False, True]})
    >>> float(episode_return(ds))
    -1.0
    """
    steps_block = collect(_return_fields(steps, reward_key, use_discount))
    returns = returns_to_go_of(steps_block, gamma, use_discount, reward_key)
    return tf.concat([returns, tf.zeros([1], tf.float64)], 0)[0]  # 0.0 for an episode without steps


def add_episode_return(episodes: tf.data.Dataset, gamma: float = 1.0, use_discount: bool = False,
                       reward_key: str = "reward", output_key: str = "episode_return") -> tf.data.Dataset:
    """Adds ``output_key`` (float64) to every episode: its (discounted) return, see ``episode_return``.

    >>> eps = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices({"reward": [1.0, 2.0]})})
    >>> [float(e["episode_return"]) for e in add_episode_return(eps, gamma=0.5)]
    [2.0]
    """
    def on_episode(episode: dict[str, Any]) -> dict[str, Any]:
        out = dict(episode)
        out[output_key] = episode_return(episode[STEPS], gamma, use_discount, reward_key)
        return out

    return episodes.map(on_episode)


__all__ = ["returns_to_go_of", "add_returns_to_go", "episode_return", "add_episode_return"]
