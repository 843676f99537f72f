"""Mean and standard deviation of step fields over a dataset, with a per-field validity mask.

``mean_and_std`` has rlds' signature and semantics (float64 results, sample standard deviation with
``n - 1``); ``sar_fields_mask`` is the mask for SAR steps, where action and reward carry no information
on ``is_last`` steps. It works in one pass over batches and merges the batch moments exactly (Chan et
al.'s parallel update), so it reads the dataset once where rlds reads it twice.

Example::

    import tensorflow as tf
    from transforms.moments import mean_and_std, sar_fields_mask

    steps = {"observation": [1.0, 2.0, 3.0], "action": [1.0, 3.0, 0.0], "reward": [0.5, 1.5, 0.0],
             "is_last": [False, False, True]}
    episodes = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps)})
    mean, std = mean_and_std(episodes, sar_fields_mask)
    float(mean["action"]), float(std["observation"])    # 2.0 (the last step is masked), 1.0
"""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf

from transforms.specs import BATCH_AUTO_TUNE, broadcast_rows, resolve_batch_size

FieldsAndMask = tuple[dict[str, Any], dict[str, Any]]


def sar_fields_mask(step: dict[str, Any]) -> FieldsAndMask:
    """Observation, action and reward of a SAR step, with action and reward masked on ``is_last`` steps.

    >>> fields, mask = sar_fields_mask({"observation": 1.0, "action": 2.0, "reward": 0.0, "is_last": True})
    >>> bool(mask["observation"]), bool(mask["action"])
    (True, False)
    """
    valid = tf.logical_not(tf.cast(step["is_last"], tf.bool))
    data = {key: step[key] for key in ("observation", "action", "reward")}
    return data, {"observation": tf.constant(True), "action": valid, "reward": valid}


def _batch_moments(data: dict[str, Any], mask: dict[str, tf.Tensor]) -> dict[str, Any]:
    """Count, mean and sum of squared deviations of each field of one batch (masked rows excluded)."""
    out = {}
    for key, value in data.items():
        valid = tf.cast(mask[key], tf.bool)
        count = tf.reduce_sum(tf.cast(valid, tf.float64))

        values = tf.nest.map_structure(lambda v: tf.cast(v, tf.float64), value)
        mean = tf.nest.map_structure(
            lambda v, count=count, valid=valid: tf.math.divide_no_nan(
                tf.reduce_sum(tf.where(broadcast_rows(valid, v), v, tf.zeros_like(v)), 0), count), values)
        m2 = tf.nest.map_structure(
            lambda v, m, valid=valid: tf.reduce_sum(tf.where(broadcast_rows(valid, v), tf.square(v - m), tf.zeros_like(v)), 0), values, mean)
        out[key] = {"count": count, "mean": mean, "m2": m2}
    return out


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Chan et al.'s exact merge of two (count, mean, M2) summaries."""
    out = {}
    for key in a:
        na, nb = a[key]["count"], b[key]["count"]
        n = na + nb
        share = tf.math.divide_no_nan(nb, n)
        cross = tf.math.divide_no_nan(na * nb, n)
        mean = tf.nest.map_structure(lambda ma, mb: ma + (mb - ma) * share, a[key]["mean"], b[key]["mean"])
        m2 = tf.nest.map_structure(lambda sa, sb, ma, mb: sa + sb + tf.square(mb - ma) * cross,
                                   a[key]["m2"], b[key]["m2"], a[key]["mean"], b[key]["mean"])
        out[key] = {"count": n, "mean": mean, "m2": m2}
    return out


def mean_and_std(episodes_dataset: tf.data.Dataset, get_step_fields: Callable[[dict[str, Any]], FieldsAndMask],
                 optimization_batch_size: int = BATCH_AUTO_TUNE) -> tuple[dict[str, Any], dict[str, Any]]:
    """Mean and (sample) standard deviation of the fields ``get_step_fields`` selects, over all steps.

    Args:
      episodes_dataset: a dataset of episodes.
      get_step_fields: ``step -> (fields, mask)``: ``fields`` a dict of numeric (nested) tensors,
        ``mask`` a dict with the same keys, true where that field is valid in this step.
      optimization_batch_size: steps per batch (``BATCH_AUTO_TUNE``: a count, or 1 when a step field's
        shape varies between steps).

    Returns:
      ``(mean, std)``, dicts shaped like ``fields``, float64. A field valid in fewer than two steps has
      a NaN standard deviation, and one valid in no step a NaN mean too (as with rlds).

    >>> steps = {"observation": [1.0, 2.0, 3.0], "action": [1.0, 3.0, 0.0], "reward": [0.0, 1.0, 0.0],
    ...          "is_last": [False, False, True]}
    >>> eps = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps)})
    >>> mean, std = mean_and_std(eps, sar_fields_mask)
    >>> float(mean["action"]), float(std["observation"])
    (2.0, 1.0)
    """
    per_step = tf.function(get_step_fields)
    steps = episodes_dataset.flat_map(lambda episode: episode["steps"])
    steps = steps.batch(resolve_batch_size(optimization_batch_size, steps.element_spec))
    summaries = steps.map(lambda b: _batch_moments(*tf.vectorized_map(per_step, b, fallback_to_while_loop=True)),
                          num_parallel_calls=tf.data.AUTOTUNE)
    zero = tf.nest.map_structure(lambda s: tf.zeros(s.shape, s.dtype), summaries.element_spec)
    total = summaries.reduce(zero, _merge)
    # Too few valid steps give NaN (rlds' 0/0), never a made-up 0: no mean without a step, no sample
    # standard deviation without two.
    def unless_fewer(value: tf.Tensor, count: tf.Tensor, minimum: int) -> tf.Tensor:
        return tf.where(count >= minimum, value, tf.constant(float("nan"), value.dtype))

    mean = {key: tf.nest.map_structure(lambda m, n=total[key]["count"]: unless_fewer(m, n, 1), total[key]["mean"])
            for key in total}
    std = {key: tf.nest.map_structure(lambda m2, n=total[key]["count"]: unless_fewer(tf.sqrt(m2 / (n - 1)), n, 2),
                                      total[key]["m2"]) for key in total}
    return mean, std


__all__ = ["mean_and_std", "sar_fields_mask"]
