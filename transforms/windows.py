"""Windows of steps: ``batch`` (rlds' size/shift/stride/drop_remainder), per-episode batching that never
crosses an episode boundary unless asked, and padded n-step windows with masks.

``batch`` and ``batch_nested_steps`` cut windows with tf.data's native sliding-window kernel
(``SlidingWindowDataset``, the op behind rlds' own ``batch``), applied to each episode's steps: every window
is stacked in C++ as the steps stream past, nothing runs per window in a Python-traced function, and tail
windows of every length come out in order with no interleaving. Measured on the TF 2.15 stack
(``bench/transforms.py``), this beat the earlier gather-per-block path, whose episode blocks and
interleaving of tail windows cost more than the kernel does. ``n_step_windows`` (fixed length, padded)
gathers every window of a block of episodes at once.

Window semantics are those of ``tf.data.Dataset.window`` / ``rlds.transformations.batch``: windows start
at positions ``0, shift, 2*shift, ...``; a window holds the elements ``start, start + stride, ...`` up to
``size`` of them; with ``drop_remainder=False`` the windows that run past the end are kept, shorter.

Example::

    import tensorflow as tf
    from transforms.windows import batch

    ds = tf.data.Dataset.range(1, 5)                      # 1, 2, 3, 4
    [w.tolist() for w in batch(ds, size=2, shift=1).as_numpy_iterator()]
    # [[1, 2], [2, 3], [3, 4], [4]]
    [w.tolist() for w in batch(ds, size=2, shift=1, stride=2).as_numpy_iterator()]
    # [[1, 3], [2, 4], [3], [4]]
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from transforms.specs import BATCH_AUTO_TUNE, DEFAULT_STEPS_PER_BATCH, batch_whole, broadcast_rows, is_dense

#: Episodes gathered into one block by ``episode_blocks`` (one gather per block in ``n_step_windows``).
EPISODES_PER_BLOCK = 256

# No Python control flow on tensors in this module's tf.data functions: skipping autograph saves tracing.
_plain = tf.autograph.experimental.do_not_convert


def _check(size: int, shift: int | None, stride: int) -> int:
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    shift = size if shift is None else shift
    if shift < 1 or stride < 1:
        raise ValueError(f"shift and stride must be >= 1, got shift={shift}, stride={stride}")
    return shift


def _window_kernel(dataset: tf.data.Dataset, size: int, shift: int, stride: int,
                   drop_remainder: bool) -> tf.data.Dataset:
    """``dataset``'s windows by the native ``SlidingWindowDataset`` kernel (dense fields), else by
    ``Dataset.window`` with each field's window batched (ragged or nested fields)."""
    spec = dataset.element_spec
    leaves = tf.nest.flatten(spec)
    if not all(type(leaf) is tf.TensorSpec for leaf in leaves):
        windows = dataset.window(size, shift, stride, drop_remainder)
        return windows.flat_map(_plain(lambda w: tf.data.Dataset.zip(tf.nest.map_structure(lambda d: d.batch(size), w))))
    rows = size if drop_remainder else None
    batched = tf.nest.map_structure(lambda leaf: tf.TensorSpec([rows, *leaf.shape], leaf.dtype), spec)
    variant = tf.raw_ops.SlidingWindowDataset(
        input_dataset=tf.data.experimental.to_variant(dataset), window_size=tf.constant(size, tf.int64),
        window_shift=tf.constant(shift, tf.int64), window_stride=tf.constant(stride, tf.int64),
        drop_remainder=drop_remainder, output_types=[leaf.dtype for leaf in tf.nest.flatten(batched)],
        output_shapes=[leaf.shape for leaf in tf.nest.flatten(batched)])
    return tf.data.experimental.from_variant(variant, batched)


def batch(dataset: tf.data.Dataset, size: int = BATCH_AUTO_TUNE, shift: int | None = None, stride: int = 1,
          drop_remainder: bool = False) -> tf.data.Dataset:
    """Windows of consecutive elements of ``dataset`` (rlds' ``batch``), each field stacked.

    Args:
      dataset: any dataset, typically one episode's steps or a flat stream of steps.
      size: elements per window; ``BATCH_AUTO_TUNE`` (the default, as in rlds) means a fixed count of
        steps (``DEFAULT_STEPS_PER_BATCH``), never a size in bytes, which fails on text-only steps in rlds.
      shift: distance between window starts; defaults to ``size`` (non-overlapping).
      stride: distance between the elements of a window.
      drop_remainder: drop the windows that run past the end instead of keeping them shorter.

    A flat stream crosses episode boundaries; use ``batch_nested_steps`` to window within episodes.
    Elements whose fields differ in shape within one window cannot be stacked, as in rlds: iterating
    fails with ``InvalidArgumentError`` ("Cannot batch tensors with different shapes").

    >>> ds = tf.data.Dataset.range(1, 5)
    >>> [w.tolist() for w in batch(ds, size=2, shift=1, drop_remainder=True).as_numpy_iterator()]
    [[1, 2], [2, 3], [3, 4]]
    """
    size = DEFAULT_STEPS_PER_BATCH if size == BATCH_AUTO_TUNE else size
    shift = _check(size, shift, stride)
    if shift == size and stride == 1:
        return dataset.batch(size, drop_remainder=drop_remainder)
    return _window_kernel(dataset, size, shift, stride, drop_remainder)


def episode_blocks(episodes: tf.data.Dataset, steps_key: str = "steps",
                   episodes_per_block: int = EPISODES_PER_BLOCK) -> tf.data.Dataset:
    """Blocks of whole episodes: ``(steps, lengths)`` with each step field concatenated over the block's
    episodes (leading dimension = their total steps) and ``lengths`` the steps of each episode.

    A block holds ``episodes_per_block`` consecutive episodes; those without steps are left out of
    ``lengths``. The building block of the vectorised per-episode transforms.

    Episodes are batched first (their steps datasets, and their lengths when the steps' cardinality is
    known, as ``tfds`` datasets have it); a block's steps are then read as one flat stream, one dataset
    per block instead of one ``batch`` per episode (``n_step_windows`` reads its blocks so). Blocks holding an episode of unknown length, and steps whose fields vary in
    shape (they stack within an episode only, as ragged values), are read episode by episode.

    >>> eps = tf.data.Dataset.range(4).map(lambda i: {"steps": tf.data.Dataset.range(i)})
    >>> [(s.tolist(), n.tolist()) for s, n in episode_blocks(eps, episodes_per_block=2).as_numpy_iterator()]
    [([0], [1]), ([0, 1, 0, 1, 2], [2, 3])]
    """
    stackable = is_dense(episodes.element_spec[steps_key].element_spec)

    def by_episode(each: tf.data.Dataset) -> tf.data.Dataset:
        def flatten(block: Any) -> tuple[Any, tf.Tensor]:
            return tf.nest.map_structure(lambda r: r.values, block), tf.nest.flatten(block)[0].row_lengths()

        return each.flat_map(_plain(batch_whole)).ragged_batch(episodes_per_block).map(_plain(flatten))

    def read(block: tf.Tensor, lengths: tf.Tensor) -> tf.data.Dataset:
        each = tf.data.Dataset.from_tensor_slices(block)
        if not stackable:
            return by_episode(each)

        def as_one_stream() -> tf.data.Dataset:  # every length is known: read the block as one stream of steps
            return tf.data.Dataset.zip((batch_whole(each.flat_map(_plain(lambda steps: steps))),
                                        tf.data.Dataset.from_tensors(tf.boolean_mask(lengths, lengths > 0))))

        return tf.cond(tf.reduce_any(lengths < 0), lambda: by_episode(each), as_one_stream)

    with_lengths = episodes.map(_plain(lambda episode: (episode[steps_key], episode[steps_key].cardinality())))
    return with_lengths.batch(episodes_per_block).flat_map(_plain(read))


def batch_nested_steps(episodes: tf.data.Dataset, size: int, shift: int | None = None, stride: int = 1,
                       drop_remainder: bool = False, cross_episodes: bool = False,
                       steps_key: str = "steps") -> tf.data.Dataset:
    """Windows of steps of every episode, as one flat dataset of windows (each field stacked).

    Args:
      episodes: a dataset of RLDS episodes.
      size, shift, stride, drop_remainder: as for ``batch``.
      cross_episodes: let windows run from one episode into the next (the flat step stream). By default a
        window never crosses an episode boundary: each episode is windowed on its own, as
        ``rlds.transformations.batch`` applied to each episode's steps.

    >>> eps = tf.data.Dataset.range(2).map(lambda i: {"steps": tf.data.Dataset.range(3 * i, 3 * i + 3)})
    >>> [w.tolist() for w in batch_nested_steps(eps, size=2, shift=1, drop_remainder=True).as_numpy_iterator()]
    [[0, 1], [1, 2], [3, 4], [4, 5]]
    """
    shift = _check(size, shift, stride)
    if cross_episodes:
        return batch(episodes.flat_map(lambda episode: episode[steps_key]), size, shift, stride, drop_remainder)
    return episodes.flat_map(_plain(lambda episode: batch(episode[steps_key], size, shift, stride, drop_remainder)))


def n_step_windows(episodes: tf.data.Dataset, n: int, steps_key: str = "steps",
                   mask_key: str = "mask") -> tf.data.Dataset:
    """For every step t of every episode, the steps t .. t+n-1 of its episode, padded to ``n``.

    Each element has every step field stacked to ``[n, ...]``, padding with zeros (``b""`` for text,
    ``False`` for flags) past the episode's end, and ``mask_key``: ``bool[n]``, true on real steps.
    Windows never cross episodes. With SAR steps, the window starting at the ``is_last`` step holds that
    step alone.

    >>> eps = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices({"r": [1., 2., 3.]})})
    >>> [(w["r"].tolist(), w["mask"].tolist()) for w in n_step_windows(eps, 2).as_numpy_iterator()][-1]
    ([3.0, 0.0], [True, False])
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")

    def windows(steps: Any, lengths: tf.Tensor) -> tf.data.Dataset:
        # one window per step of the block: it starts there and stops at its episode's end
        lengths = tf.cast(lengths, tf.int64)
        total = tf.reduce_sum(lengths)
        starts = tf.range(total)
        ends = tf.repeat(tf.cumsum(lengths), lengths)
        offsets = tf.range(n, dtype=tf.int64)
        mask = starts[:, None] + offsets[None, :] < ends[:, None]
        index = tf.minimum(starts[:, None] + offsets[None, :], tf.maximum(total - 1, 0))

        def pad(v: tf.Tensor) -> tf.Tensor:
            gathered = tf.gather(v, index)
            return tf.where(broadcast_rows(mask, gathered), gathered, tf.zeros_like(gathered))

        out = tf.nest.map_structure(pad, steps)
        if isinstance(out, dict):
            if mask_key in out:
                raise ValueError(f"steps already have a field named {mask_key!r}; pass another mask_key")
            out = {**out, mask_key: mask}
        else:
            out = (out, mask)
        return tf.data.Dataset.from_tensor_slices(out)

    return episode_blocks(episodes, steps_key).flat_map(_plain(windows))


__all__ = ["batch", "batch_nested_steps", "episode_blocks", "n_step_windows", "EPISODES_PER_BLOCK"]
