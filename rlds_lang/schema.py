"""The RLDS text schema as code: TFDS feature specs for a task, and the RLDS episode invariants.

Every dataset of rlds-lang stores episodes ``{"steps": Dataset(step), **episode_metadata}`` where a step
holds ``observation`` (a dict with a ``text`` entry plus the task's structured fields), ``action``
(text), ``reward``, ``discount``, ``is_first``, ``is_last``, ``is_terminal`` and step metadata. Alignment
is SAR: step i holds o_i, the action a_i taken from it and the reward r_i it earned. On the ``is_last``
step the action is ``""``, and reward and discount are 0.0.

``TaskSchema`` describes a task's fields once; ``dataset_config`` turns it into a
``tfds.rlds.rlds_base.DatasetConfig`` for a builder. ``check_episode`` enforces the invariants with an
error naming the episode and step. TensorFlow is imported only by ``dataset_config``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

import numpy as np

#: metadata every episode carries, whatever the task (name -> numpy dtype or ``str`` for text).
COMMON_EPISODE_METADATA: dict[str, Any] = {
    "episode_id": str,     # unique within the dataset, stable across rebuilds
    "task": str,           # e.g. "wordle"
    "policy": str,         # the agent/policy name (or "human:<session>")
    "policy_params": str,  # canonical JSON of the policy's parameters
    "seed": np.int64,      # seed of the episode (env and policy)
}

STEP_KEYS = ("observation", "action", "reward", "discount", "is_first", "is_last", "is_terminal")


class EpisodeInvariantError(ValueError):
    """An episode breaks an RLDS invariant; the message names the episode and the step."""


@dataclasses.dataclass(frozen=True)
class FieldSpec:
    """A structured (non-text) field: numpy dtype and shape."""

    dtype: Any
    shape: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class TaskSchema:
    """The fields of one task's episodes.

    Attributes:
      task: task id (``wordle``, ``visdial``, ...).
      observation_fields: structured observation fields beside ``text``.
      step_metadata: per-step metadata fields (``str`` for text or a ``FieldSpec``).
      episode_metadata: task episode metadata beside ``COMMON_EPISODE_METADATA``.
    """

    task: str
    observation_fields: Mapping[str, FieldSpec] = dataclasses.field(default_factory=dict)
    step_metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    episode_metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def all_episode_metadata(self) -> dict[str, Any]:
        """Common plus task episode metadata fields."""
        return {**COMMON_EPISODE_METADATA, **self.episode_metadata}

    def dataset_config(self, name: str, description: str, **kwargs: Any):
        """A ``tfds.rlds.rlds_base.DatasetConfig`` with this schema's features."""
        import tensorflow_datasets as tfds
        from tensorflow_datasets.rlds import rlds_base

        def feature(spec: Any):
            if spec is str:
                return tfds.features.Text()
            if isinstance(spec, FieldSpec):
                return tfds.features.Tensor(shape=spec.shape, dtype=stored_dtype(spec.dtype))
            return tfds.features.Scalar(dtype=stored_dtype(spec))

        observation = {"text": tfds.features.Text()}
        observation.update({k: feature(v) for k, v in self.observation_fields.items()})
        return rlds_base.DatasetConfig(
            name=name,
            description=description,
            observation_info=tfds.features.FeaturesDict(observation),
            action_info=tfds.features.Text(),
            reward_info=tfds.features.Scalar(dtype=np.float32),
            discount_info=tfds.features.Scalar(dtype=np.float32),
            step_metadata_info={k: feature(v) for k, v in self.step_metadata.items()},
            episode_metadata_info={k: feature(v) for k, v in self.all_episode_metadata.items()},
            **kwargs,
        )


def stored_dtype(dtype: Any) -> np.dtype:
    """The dtype TFDS really stores: tf.train.Example keeps floats as float32, so float64 is declared float32.

    Declaring float64 would round silently on write; builders instead check that every float is exactly
    representable in float32 (``check_float32_exact``) and fail loudly otherwise.
    """
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype == np.float64 else dtype


class LossyValueError(ValueError):
    """A value would not survive storage exactly; the message names the episode, step and field."""


def check_float32_exact(value: Any, where: str) -> None:
    """Raises ``LossyValueError`` if a float leaf of ``value`` is not exactly representable as float32."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            check_float32_exact(v, f"{where}.{k}")
        return
    if isinstance(value, (str, bytes, bool, np.bool_)) or value is None:
        return
    arr = np.asarray(value)
    if arr.dtype.kind == "f" and not np.array_equal(arr.astype(np.float32).astype(arr.dtype), arr, equal_nan=True):
        raise LossyValueError(f"{where}: {value!r} is not exactly representable as float32, the float type TFDS "
                              "stores; scale or quantise it before recording")


def _steps_as_list(steps: Any) -> list[Mapping[str, Any]]:
    """Steps given as a list of dicts or as a columnar dict of equal-length sequences -> list of dicts."""
    if isinstance(steps, Mapping):
        n = len(steps["is_first"])

        def take(value: Any, i: int) -> Any:
            if isinstance(value, Mapping):
                return {k: take(v, i) for k, v in value.items()}
            return value[i]

        return [{k: take(v, i) for k, v in steps.items()} for i in range(n)]
    return list(steps)


def _is_neutral_action(action: Any) -> bool:
    if isinstance(action, (str, bytes)):
        return len(action) == 0
    if isinstance(action, Mapping):
        return all(_is_neutral_action(v) for v in action.values())
    arr = np.asarray(action)
    if arr.dtype == object or arr.dtype.kind in "SU":
        return all(len(x) == 0 for x in arr.reshape(-1))
    return not np.any(arr)


def check_episode(episode: Mapping[str, Any], episode_id: Any = None) -> None:
    """Raises ``EpisodeInvariantError`` unless ``episode`` obeys the RLDS invariants of our schema.

    Checked: at least one step; every step has the RLDS keys; ``is_first`` exactly on step 0;
    ``is_last`` exactly on the final step; ``is_terminal`` nowhere but the final step; on the final
    step the action is empty and reward and discount are 0.0.

    Example::

        check_episode({"steps": [{"observation": {"text": ""}, "action": "", "reward": 0.0,
                                  "discount": 0.0, "is_first": True, "is_last": True,
                                  "is_terminal": True}]}, episode_id="demo")
    """
    name = episode_id if episode_id is not None else episode.get("episode_id", "?")
    if isinstance(name, bytes):
        name = name.decode("utf-8", "replace")
    if "steps" not in episode:
        raise EpisodeInvariantError(f"episode {name}: no 'steps' field")
    steps = _steps_as_list(episode["steps"])
    if not steps:
        raise EpisodeInvariantError(f"episode {name}: has no steps")
    last = len(steps) - 1
    for i, step in enumerate(steps):
        where = f"episode {name}, step {i}"
        missing = [k for k in STEP_KEYS if k not in step]
        if missing:
            raise EpisodeInvariantError(f"{where}: missing {missing}")
        if bool(step["is_first"]) != (i == 0):
            raise EpisodeInvariantError(f"{where}: is_first={bool(step['is_first'])}, expected {i == 0}")
        if bool(step["is_last"]) != (i == last):
            raise EpisodeInvariantError(f"{where}: is_last={bool(step['is_last'])}, expected {i == last}")
        if i != last and bool(step["is_terminal"]):
            raise EpisodeInvariantError(f"{where}: is_terminal is set before the last step")
    final = steps[last]
    where = f"episode {name}, step {last} (is_last)"
    if not _is_neutral_action(final["action"]):
        raise EpisodeInvariantError(f"{where}: action must be empty, got {final['action']!r}")
    for key in ("reward", "discount"):
        if float(np.asarray(final[key])) != 0.0:
            raise EpisodeInvariantError(f"{where}: {key} must be 0.0, got {final[key]!r}")


def neutral_like(value: Any) -> Any:
    """The neutral value of a field on the last step: ``""`` for text, zeros for arrays, recursively."""
    if isinstance(value, Mapping):
        return {k: neutral_like(v) for k, v in value.items()}
    if isinstance(value, (str, bytes)) or value is None:
        return ""
    arr = np.asarray(value)
    if arr.dtype == object or arr.dtype.kind in "SU":
        return "" if arr.shape == () else np.full(arr.shape, "", dtype=object)
    return np.zeros_like(arr)


def map_nested(fn: Callable[[Any], Any], value: Any) -> Any:
    """Applies ``fn`` to every leaf of nested dicts."""
    if isinstance(value, Mapping):
        return {k: map_nested(fn, v) for k, v in value.items()}
    return fn(value)


def text_leaf(value: Any) -> Any:
    """Normalises a text leaf read back from Riegeli/TFDS (0-d object array, numpy str, bytes) to ``str``."""
    if isinstance(value, np.ndarray) and value.shape == () and (value.dtype == object or value.dtype.kind in "SU"):
        value = value.item()
    if isinstance(value, np.str_):
        return str(value)
    return value


