"""Helpers over ``tf.data`` element specs: zeros shaped like a spec, empty blocks, sizes in steps.

rlds sizes its step batches by bytes and counts a ``tf.string`` as 0 bytes, so string-only steps divide
by zero (ARCHITECTURE.md, "Known traps"). rlds-lang sizes batches by a step count instead.

Example::

    import tensorflow as tf
    from transforms.specs import zeros_from_spec, zero_dataset_like

    steps = tf.data.Dataset.from_tensor_slices({"action": ["a", "b"], "reward": [1.0, 2.0]})
    zeros_from_spec(steps.element_spec)          # {"action": b"", "reward": 0.0}
    list(zero_dataset_like(steps).as_numpy_iterator())
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

#: Pass as ``optimization_batch_size`` to let rlds-lang choose (by step count, never by bytes).
BATCH_AUTO_TUNE = -1
#: Steps per batch when ``BATCH_AUTO_TUNE`` is given: large enough that Python/tf.data overhead per batch
#: is negligible, small enough that a batch of long texts stays a few MB.
DEFAULT_STEPS_PER_BATCH = 1024
#: Larger than any episode: ``batch_whole(steps)`` turns an episode's steps into one tensor per field.
WHOLE = 1 << 30


def is_dense(spec: Any) -> bool:
    """Whether every field of ``spec`` has a fully known shape, so that steps stack into one tensor per field.

    Steps with a field of varying shape (``[None]``: a token list, a variable-size image) cannot be
    stacked; the transforms then read them one step at a time, as rlds does.

    >>> is_dense({"r": tf.TensorSpec([], tf.float32), "t": tf.TensorSpec([], tf.string)})
    True
    >>> is_dense({"tokens": tf.TensorSpec([None], tf.int32)})
    False
    """
    return all(leaf.shape.is_fully_defined() for leaf in tf.nest.flatten(spec)
               if isinstance(leaf, tf.TypeSpec) and hasattr(leaf, "shape"))


def resolve_batch_size(optimization_batch_size: int, spec: Any = None) -> int:
    """The batch size to use: the given one, or for ``BATCH_AUTO_TUNE`` ``DEFAULT_STEPS_PER_BATCH`` (or 1
    when ``spec``, the steps' element spec, has fields of varying shape, which cannot be stacked).

    >>> resolve_batch_size(BATCH_AUTO_TUNE), resolve_batch_size(8)
    (1024, 8)
    >>> resolve_batch_size(BATCH_AUTO_TUNE, {"tokens": tf.TensorSpec([None], tf.int32)})
    1
    """
    if optimization_batch_size == BATCH_AUTO_TUNE:
        return DEFAULT_STEPS_PER_BATCH if spec is None or is_dense(spec) else 1
    if optimization_batch_size < 1:
        raise ValueError(f"optimization_batch_size must be >= 1 or BATCH_AUTO_TUNE, got {optimization_batch_size}")
    return int(optimization_batch_size)


def _zeros_shape(shape: tf.TensorShape, unknown: int) -> list[int]:
    if shape.rank is None:
        return []
    return [unknown if d is None else d for d in shape.as_list()]


def zeros_from_spec(spec: Any) -> Any:
    """A nested structure of zero tensors (``b""`` for strings, ``False`` for bools) matching ``spec``.

    Unknown dimensions become 1, as in ``rlds.transformations.zeros_from_spec`` (a batched spec
    ``[None, ...]`` gives a batch of one).

    >>> zeros_from_spec({"r": tf.TensorSpec([2], tf.float32)})["r"].numpy().tolist()
    [0.0, 0.0]
    """
    return tf.nest.map_structure(lambda s: tf.zeros(_zeros_shape(s.shape, 1), s.dtype), spec)


def empty_block(spec: Any) -> Any:
    """A batch of zero elements of ``spec`` (leading dimension 0), to start or end a stream of batches.

    >>> empty_block({"a": tf.TensorSpec([3], tf.int32)})["a"].shape.as_list()
    [0, 3]
    """
    return tf.nest.map_structure(lambda s: tf.zeros([0] + _zeros_shape(s.shape, 0), s.dtype), spec)


def zero_dataset_like(ds: tf.data.Dataset) -> tf.data.Dataset:
    """A one-element dataset with ``ds``'s element spec, holding zeros (rlds' parameter name).

    >>> ds = tf.data.Dataset.from_tensor_slices({"a": [1, 2]})
    >>> [x["a"] for x in zero_dataset_like(ds).as_numpy_iterator()]
    [0]
    """
    return tf.data.Dataset.from_tensors(zeros_from_spec(ds.element_spec))


def batch_whole(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """``dataset`` as a single batch (one element stacking all of it; none if it is empty).

    Use this, never ``dataset.batch(WHOLE)``: tf.data fuses a ``map`` followed by ``batch`` into one
    ``MapAndBatch`` op that allocates its output for the full batch size up front, which for ``WHOLE``
    (2**30 rows) hangs or runs out of memory on any steps dataset that ends in a ``map`` (a tokenization,
    a projection of fields). A ``take`` between the two prevents the fusion and costs nothing.

    >>> ds = tf.data.Dataset.range(3).map(lambda x: tf.cast(x, tf.float32))
    >>> [b.tolist() for b in batch_whole(ds).as_numpy_iterator()]
    [[0.0, 1.0, 2.0]]
    """
    return dataset.take(WHOLE).batch(WHOLE)


def collect(dataset: tf.data.Dataset) -> Any:
    """All elements of a (finite, small) dataset stacked along a new leading axis, as tensors.

    An empty dataset gives a batch of zero elements. Unlike ``Dataset.reduce``, this stays fast when
    called inside a ``map`` over episodes (a nested ``reduce`` costs ~25 ms per call on TF 2.21; this
    ~0.3 ms), so per-episode transforms use it to read an episode's steps as one batch.

    >>> collect(tf.data.Dataset.range(3)).numpy().tolist(), collect(tf.data.Dataset.range(0)).shape.as_list()
    ([0, 1, 2], [0])
    """
    block = tf.data.Dataset.from_tensors(empty_block(dataset.element_spec))
    return batch_whole(dataset).concatenate(block).take(1).get_single_element()


def leading_size(batch: Any) -> tf.Tensor:
    """The leading (batch) dimension of a nested batch, read from its first leaf, as int64.

    >>> int(leading_size({"a": tf.zeros([4, 2]), "b": tf.zeros([4])}))
    4
    """
    return tf.shape(tf.nest.flatten(batch)[0], out_type=tf.int64)[0]


def broadcast_rows(mask: tf.Tensor, like: tf.Tensor) -> tf.Tensor:
    """``mask`` (shape = the leading axes of ``like``) reshaped to broadcast over ``like``'s other axes.

    >>> broadcast_rows(tf.constant([True, False]), tf.zeros([2, 3])).shape.as_list()
    [2, 1]
    """
    extra = tf.rank(like) - tf.rank(mask)
    return tf.reshape(mask, tf.concat([tf.shape(mask), tf.ones([extra], tf.int32)], 0))


__all__ = ["broadcast_rows", "BATCH_AUTO_TUNE", "DEFAULT_STEPS_PER_BATCH", "WHOLE", "batch_whole", "is_dense", "resolve_batch_size", "zeros_from_spec",
           "empty_block", "collect", "zero_dataset_like", "leading_size"]
