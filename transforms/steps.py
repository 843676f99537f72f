"""Per-step and per-episode operations on RLDS steps datasets, with rlds' names and semantics.

``map_steps`` / ``map_nested_steps`` (a function of one step), ``apply_nested_steps`` (a function of an
episode's steps dataset), ``sum_dataset`` / ``sum_nested_steps``, ``episode_length``, ``final_step``,
``concatenate``, ``concat_if_terminal`` (absorbing steps) and ``truncate_after_condition``.

Work is batched: steps are batched (by count, ``optimization_batch_size``), the function runs on the
whole batch (``tf.vectorized_map`` for a per-step function, or directly with ``batched=True``), then the
result is unbatched or reduced. String-only steps work (rlds' byte-based auto size divides by zero).

Example::

    import tensorflow as tf
    from transforms.steps import map_nested_steps, sum_nested_steps

    steps = {"action": ["a", "bb", ""], "reward": [1.0, 2.0, 0.0], "is_last": [False, False, True]}
    episodes = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps)})
    sum_nested_steps(episodes, lambda s: s["reward"])                          # 3.0
    lengths = map_nested_steps(episodes, lambda s: tf.strings.length(s["action"]))
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import tensorflow as tf

from transforms.specs import BATCH_AUTO_TUNE, collect, is_dense, leading_size, resolve_batch_size, zeros_from_spec

Step = dict[str, Any]
STEPS = "steps"


def _on_batch(fn: Callable[[Any], Any], batched: bool) -> Callable[[Any], Any]:
    if batched:
        return fn
    return lambda steps: tf.vectorized_map(fn, steps, fallback_to_while_loop=True)


def map_steps(steps_dataset: tf.data.Dataset, transform_step: Callable[[Step], Any],
              optimization_batch_size: int = BATCH_AUTO_TUNE, batched: bool = False) -> tf.data.Dataset:
    """Applies ``transform_step`` to every step of a steps dataset.

    Args:
      steps_dataset: a dataset of steps.
      transform_step: a function of one step (or of a batch of steps when ``batched``); its output need
        not be a step.
      optimization_batch_size: steps per batch (``1`` maps step by step). ``BATCH_AUTO_TUNE`` picks a
        count, or 1 when a field's shape varies between steps (such steps cannot be stacked).
      batched: ``transform_step`` already works on a batch of steps (leading dimension); fastest.

    >>> ds = tf.data.Dataset.from_tensor_slices({"r": [1.0, 2.0]})
    >>> list(map_steps(ds, lambda s: s["r"] * 2).as_numpy_iterator())
    [2.0, 4.0]
    """
    size = resolve_batch_size(optimization_batch_size, steps_dataset.element_spec)
    if size == 1 and not batched:
        return steps_dataset.map(transform_step, num_parallel_calls=tf.data.AUTOTUNE)
    return steps_dataset.batch(size).map(_on_batch(transform_step, batched), num_parallel_calls=tf.data.AUTOTUNE).unbatch()


def _with_steps(episode: dict[str, Any], steps: tf.data.Dataset) -> dict[str, Any]:
    out = dict(episode)
    out[STEPS] = steps
    return out


def map_nested_steps(episodes_dataset: tf.data.Dataset, transform_step: Callable[[Step], Any],
                     optimization_batch_size: int = BATCH_AUTO_TUNE, batched: bool = False) -> tf.data.Dataset:
    """Applies ``transform_step`` to every step of every episode; episode metadata is kept.

    >>> eps = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices({"r": [1.0, 2.0]})})
    >>> [list(e["steps"].as_numpy_iterator()) for e in map_nested_steps(eps, lambda s: s["r"] + 1)]
    [[2.0, 3.0]]
    """
    return episodes_dataset.map(lambda episode: _with_steps(
        episode, map_steps(episode[STEPS], transform_step, optimization_batch_size, batched)))


def apply_nested_steps(episodes_dataset: tf.data.Dataset,
                       transform_step_dataset: Callable[[tf.data.Dataset], tf.data.Dataset]) -> tf.data.Dataset:
    """Replaces each episode's steps dataset by ``transform_step_dataset(steps)``; metadata is kept.

    >>> eps = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.range(5)})
    >>> [list(e["steps"].as_numpy_iterator()) for e in apply_nested_steps(eps, lambda s: s.take(2))]
    [[0, 1]]
    """
    return episodes_dataset.map(lambda episode: _with_steps(episode, transform_step_dataset(episode[STEPS])))


def sum_dataset(steps_dataset: tf.data.Dataset, data_to_sum: Callable[[Step], Any],
                optimization_batch_size: int = BATCH_AUTO_TUNE, batched: bool = False) -> Any:
    """The sum over all steps of ``data_to_sum(step)`` (any nested structure of numbers).

    >>> ds = tf.data.Dataset.from_tensor_slices({"r": [1.0, 2.0, 3.5]})
    >>> float(sum_dataset(ds, lambda s: s["r"]))
    6.5
    """
    size = resolve_batch_size(optimization_batch_size, steps_dataset.element_spec)
    if size == 1 and not batched:
        values = steps_dataset.map(data_to_sum, num_parallel_calls=tf.data.AUTOTUNE)
    else:
        on_batch = _on_batch(data_to_sum, batched)
        values = steps_dataset.batch(size).map(
            lambda b: tf.nest.map_structure(lambda v: tf.reduce_sum(v, 0), on_batch(b)),
            num_parallel_calls=tf.data.AUTOTUNE)
    # Per-batch sums (one per `size` steps) are collected and summed at once: no Dataset.reduce, which is
    # slow when this runs per episode inside a map.
    return tf.nest.map_structure(lambda v: tf.reduce_sum(v, 0), collect(values))


def sum_nested_steps(episodes_dataset: tf.data.Dataset, data_to_sum: Callable[[Step], Any],
                     optimization_batch_size: int = BATCH_AUTO_TUNE, batched: bool = False) -> Any:
    """The sum of ``data_to_sum(step)`` over all steps of all episodes (see ``sum_dataset``).

    >>> eps = tf.data.Dataset.range(3).map(lambda i: {"steps": tf.data.Dataset.range(i + 1)})
    >>> int(sum_nested_steps(eps, lambda s: s))   # (0) + (0 + 1) + (0 + 1 + 2)
    4
    """
    return sum_dataset(episodes_dataset.flat_map(lambda episode: episode[STEPS]), data_to_sum,
                       optimization_batch_size, batched)


def episode_length(steps_dataset: tf.data.Dataset, optimization_batch_size: int = BATCH_AUTO_TUNE) -> tf.Tensor:
    """The number of steps (int32), from the cardinality when known, else counted in one batch.

    >>> int(episode_length(tf.data.Dataset.range(7).filter(lambda x: x > 2)))
    4
    """
    cardinality = steps_dataset.cardinality()
    known = tf.reduce_all([cardinality != tf.data.UNKNOWN_CARDINALITY, cardinality != tf.data.INFINITE_CARDINALITY])
    del optimization_batch_size  # the steps are read as one batch; kept for rlds' signature
    # Steps whose fields vary in shape cannot be stacked: count a flag per step instead.
    countable = steps_dataset if is_dense(steps_dataset.element_spec) else steps_dataset.map(lambda *_: True)
    return tf.cast(tf.cond(known, lambda: cardinality, lambda: leading_size(collect(countable))), tf.int32)


def final_step(steps_dataset: tf.data.Dataset) -> Any:
    """The last step of a steps dataset (a step of zeros when it is empty).

    >>> int(final_step(tf.data.Dataset.range(4).filter(lambda x: x < 3)))
    2
    """
    zeros = zeros_from_spec(steps_dataset.element_spec)
    if not is_dense(steps_dataset.element_spec):  # steps of varying shape cannot be stacked: skip to the last
        skip = tf.maximum(tf.cast(episode_length(steps_dataset), tf.int64) - 1, 0)
        return steps_dataset.skip(skip).concatenate(tf.data.Dataset.from_tensors(zeros)).take(1).get_single_element()
    whole = collect(steps_dataset)
    last = tf.maximum(leading_size(whole) - 1, 0)
    padded = tf.nest.map_structure(lambda b, z: tf.concat([b, z[None]], 0), whole, zeros)
    return tf.nest.map_structure(lambda b: b[last], padded)


def _add_missing(step: Step, spec: dict[str, Any]) -> Step:
    out = dict(step)
    for key, field_spec in spec.items():
        if key not in out:
            out[key] = zeros_from_spec(field_spec)
    return out


def concatenate(steps1: tf.data.Dataset, steps2: tf.data.Dataset) -> tf.data.Dataset:
    """``steps1`` then ``steps2``; a top-level field present in only one of them is zero-filled in the other.

    >>> a = tf.data.Dataset.from_tensor_slices({"x": [1]})
    >>> b = tf.data.Dataset.from_tensor_slices({"y": ["t"]})
    >>> list(concatenate(a, b).as_numpy_iterator())
    [{'x': 1, 'y': b''}, {'x': 0, 'y': b't'}]
    """
    spec1, spec2 = steps1.element_spec, steps2.element_spec
    if set(spec1) == set(spec2):
        return steps1.concatenate(steps2)
    return steps1.map(functools.partial(_add_missing, spec=spec2)).concatenate(
        steps2.map(functools.partial(_add_missing, spec=spec1)))


def concat_if_terminal(steps: tf.data.Dataset,
                       make_extra_steps: Callable[[Step], tf.data.Dataset]) -> tf.data.Dataset:
    """Appends ``make_extra_steps(final step)`` when the episode ends in a terminal step (absorbing steps).

    Fields of the extra steps missing from ``steps`` (or the reverse) are zero-filled, as in
    ``concatenate``. Usable inside ``apply_nested_steps``.

    >>> steps = tf.data.Dataset.from_tensor_slices({"r": [1.0, 0.0], "is_terminal": [False, True]})
    >>> absorb = lambda last: tf.data.Dataset.from_tensors({"r": 0.0, "is_terminal": True}).repeat(2)
    >>> len(list(concat_if_terminal(steps, absorb).as_numpy_iterator()))
    4
    """
    last = final_step(steps)
    extra = make_extra_steps(last).filter(lambda *_: last["is_terminal"])
    return concatenate(steps, extra)


def truncate_after_condition(steps_dataset: tf.data.Dataset, truncate_condition: Callable[[Step], Any],
                             optimization_batch_size: int = BATCH_AUTO_TUNE, batched: bool = False) -> tf.data.Dataset:
    """The steps up to and including the first one for which ``truncate_condition(step)`` holds.

    Vectorised: the condition runs on whole batches; a scan over batches (not steps) carries whether the
    cut has happened, and reading stops at the batch that holds it. With a batch of one step (steps whose
    fields vary in shape) the scan runs over steps and masks nothing: TF 2.15's ``boolean_mask`` crashes
    on a batch holding one empty row.

    >>> ds = tf.data.Dataset.range(10)
    >>> list(truncate_after_condition(ds, lambda x: x == 3, optimization_batch_size=2).as_numpy_iterator())
    [0, 1, 2, 3]
    """
    size = resolve_batch_size(optimization_batch_size, steps_dataset.element_spec)
    if size == 1 and not batched:  # step by step (steps that cannot be stacked): no masking needed
        def step_cut(stopped: tf.Tensor, step: Any) -> tuple[tf.Tensor, tuple[Any, tf.Tensor]]:
            hit = tf.reshape(tf.cast(truncate_condition(step), tf.bool), [])
            return tf.logical_or(stopped, hit), (step, stopped)

        return (steps_dataset.scan(tf.constant(False), step_cut)
                .take_while(lambda step, stopped_before: tf.logical_not(stopped_before))
                .map(lambda step, stopped_before: step))
    condition = _on_batch(truncate_condition, batched)

    def cut(stopped: tf.Tensor, batch: Any) -> tuple[tf.Tensor, tuple[Any, tf.Tensor]]:
        hits = tf.cast(tf.reshape(condition(batch), [-1]), tf.int32)
        before_first = tf.equal(tf.cumsum(hits) - hits, 0)  # rows up to and including the first hit
        keep = tf.logical_and(before_first, tf.logical_not(stopped))
        kept = tf.nest.map_structure(lambda v: tf.boolean_mask(v, keep), batch)
        return tf.logical_or(stopped, tf.reduce_any(hits > 0)), (kept, stopped)

    return (steps_dataset.batch(size)
            .scan(tf.constant(False), cut)
            .take_while(lambda kept, stopped_before: tf.logical_not(stopped_before))
            .map(lambda kept, stopped_before: kept)
            .unbatch())


__all__ = ["map_steps", "map_nested_steps", "apply_nested_steps", "sum_dataset", "sum_nested_steps",
           "episode_length", "final_step", "concatenate", "concat_if_terminal", "truncate_after_condition"]
