"""Moving fields between step alignments (SAR ↔ ARS / RSA) with ``shift_keys``, as rlds does.

RLDS steps are SAR-aligned: step i holds observation o_i, the action a_i taken from it and the reward r_i
it earned. ``shift_keys(steps, ["observation"], 1)`` gives step i the observation o_{i+1} — the
(a_i, r_i, o_{i+1}) view — dropping one step; negative shifts move fields the other way.

Example::

    import tensorflow as tf
    from transforms.alignment import shift_keys

    steps = tf.data.Dataset.from_tensor_slices({"observation": ["o0", "o1", "o2"], "action": ["a0", "a1", ""]})
    list(shift_keys(steps, ["observation"], 1).as_numpy_iterator())
    # [{'observation': b'o1', 'action': b'a0'}, {'observation': b'o2', 'action': b'a1'}]
"""

from __future__ import annotations

import enum
from typing import Any, Sequence

import tensorflow as tf

from transforms.specs import BATCH_AUTO_TUNE, resolve_batch_size
from transforms.windows import batch

ALIGNMENT = "alignment"


@enum.unique
class AlignmentType(enum.Enum):
    """How a step groups observation, action and reward (values equal rlds' ``AlignmentType``)."""

    UNKNOWN = 1
    SAR = 2
    ARS = 3
    RSA = 4


def add_alignment_to_step(step: dict[str, Any], alignment: AlignmentType) -> dict[str, Any]:
    """The step with an ``alignment`` field naming its alignment (an int, ``AlignmentType.value``).

    >>> add_alignment_to_step({"reward": 1.0}, AlignmentType.SAR)["alignment"]
    2
    """
    out = dict(step)
    out[ALIGNMENT] = alignment.value
    return out


def shift_keys(steps: tf.data.Dataset, keys: Sequence[str], shift: int,
               batch_size: int = BATCH_AUTO_TUNE) -> tf.data.Dataset:
    """Step i takes the fields ``keys`` from step i + ``shift`` and keeps its other fields.

    The result has ``|shift|`` fewer steps: the steps whose shifted fields would fall outside the episode
    are dropped. Apply it to one episode's steps (``apply_nested_steps``), never to a flat stream.

    Args:
      steps: one episode's steps (dicts).
      keys: the top-level fields to move.
      shift: how far; positive takes values from later steps.
      batch_size: steps per vectorised block; must exceed ``|shift|``.

    >>> ds = tf.data.Dataset.from_tensor_slices({"a": [0, 1, 2], "b": [10, 11, 12]})
    >>> [(s["a"], s["b"]) for s in shift_keys(ds, ["b"], -1).as_numpy_iterator()]
    [(1, 10), (2, 11)]
    """
    missing = set(keys) - set(steps.element_spec)
    if missing:
        raise KeyError(f"shift_keys: no field(s) {sorted(missing)} in steps with fields {sorted(steps.element_spec)}")
    if shift == 0:
        return steps
    size = max(resolve_batch_size(batch_size), 4 * abs(shift)) if batch_size == BATCH_AUTO_TUNE else batch_size
    if abs(shift) >= size:
        raise ValueError(f"shift_keys: |shift|={abs(shift)} must be smaller than batch_size={size}")
    moved = set(keys)

    def realign(block: dict[str, Any]) -> dict[str, Any]:
        def cut(key: str, value: Any) -> Any:
            offset = shift if key in moved else -shift
            return tf.nest.map_structure(lambda v: v[offset:] if offset > 0 else v[:offset], value)

        return {key: cut(key, value) for key, value in block.items()}

    return batch(steps, size=size, shift=size - abs(shift)).map(realign).unbatch()


#: From SAR, which fields move and how far to reach each alignment (step i of the result holds ...):
#: ARS: (a_i, r_i, o_{i+1}) — the observation comes from the next step;
#: RSA: (r_{i-1}, o_i, a_i) — the reward comes from the previous step.
_FROM_SAR = {AlignmentType.SAR: ("reward", 0), AlignmentType.ARS: ("observation", 1),
             AlignmentType.RSA: ("reward", -1)}


def realign(steps: tf.data.Dataset, source: AlignmentType, target: AlignmentType,
            batch_size: int = BATCH_AUTO_TUNE) -> tf.data.Dataset:
    """One episode's steps moved from the ``source`` alignment to ``target`` (SAR, ARS or RSA).

    Each move is one ``shift_keys`` and drops one step (the one whose moved field would fall outside the
    episode); going through SAR composes two moves. Apply per episode with ``apply_nested_steps``.

    >>> sar = tf.data.Dataset.from_tensor_slices({"observation": ["o0", "o1", "o2"], "action": ["a0", "a1", ""],
    ...                                           "reward": [1.0, 2.0, 0.0]})
    >>> [(s["action"], s["reward"], s["observation"])
    ...  for s in realign(sar, AlignmentType.SAR, AlignmentType.ARS).as_numpy_iterator()]
    [(b'a0', 1.0, b'o1'), (b'a1', 2.0, b'o2')]
    """
    for alignment in (source, target):
        if alignment not in _FROM_SAR:
            raise ValueError(f"realign: supports SAR, ARS and RSA, got {alignment}")
    if source == target:
        return steps
    if source != AlignmentType.SAR:  # back to SAR first: undo source's move
        key, shift = _FROM_SAR[source]
        steps = shift_keys(steps, [key], -shift, batch_size)
    if target != AlignmentType.SAR:
        key, shift = _FROM_SAR[target]
        steps = shift_keys(steps, [key], shift, batch_size)
    return steps


__all__ = ["AlignmentType", "add_alignment_to_step", "shift_keys", "realign", "ALIGNMENT"]
