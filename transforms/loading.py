"""Loading rlds-lang TFDS datasets and the per-turn view.

``load`` opens a dataset by registered name or from a folder written by ``tfds build``;
``to_turns`` flattens episodes into turns (one per action, the ``is_last`` step excluded).

Example::

    from transforms.loading import load, to_turns

    episodes = load("wordle_synthetic", config="expert", data_dir="/tmp/tfds")
    for turn in to_turns(episodes).take(3).as_numpy_iterator():
        print(turn["observation"].decode(), turn["action"].decode(), turn["reward"], turn["done"])
"""

from __future__ import annotations

import os
from typing import Any

import tensorflow as tf

from transforms.specs import collect, is_dense


def load(name_or_dir: str | os.PathLike, split: str = "train", config: str | None = None,
         data_dir: str | os.PathLike | None = None, **as_dataset_kwargs: Any) -> tf.data.Dataset:
    """The episodes of an RLDS dataset as a ``tf.data.Dataset``.

    Args:
      name_or_dir: a dataset name (``wordle_synthetic``; found in ``data_dir`` even when its builder code
        is not imported) or a folder holding a built version (the one with ``dataset_info.json``).
      split: the split, e.g. ``"train"`` or ``"train[:10%]"``.
      config: the builder config when loading by name (ignored for a folder).
      data_dir: the TFDS data folder when loading by name.
      as_dataset_kwargs: passed to ``as_dataset`` (e.g. ``shuffle_files``, ``read_config``).

    ``tensorflow_datasets`` is imported here, not when ``transforms`` is imported (it adds seconds).

        >>> import tempfile, tensorflow_datasets as tfds
        >>> features = tfds.features.FeaturesDict({"episode_id": tfds.features.Text(), "steps": tfds.features.Dataset(
        ...     {"action": tfds.features.Text(), "reward": tf.float32, "is_last": tf.bool})})
        >>> game = {"episode_id": "game-1", "steps": [{"action": "crane", "reward": -1.0, "is_last": False},
        ...                                         {"action": "", "reward": 0.0, "is_last": True}]}
        >>> built = tfds.dataset_builders.store_as_tfds_dataset(
        ...     "tiny_games", "1.0.0", features, {"train": [("game-1", game)]}, data_dir=tempfile.mkdtemp())
        Downloading and preparing dataset ...
        Dataset tiny_games downloaded and prepared to ...
        >>> episode = next(iter(load(built.data_dir)))
        >>> episode["episode_id"].numpy(), [s["action"] for s in episode["steps"].as_numpy_iterator()]
        (b'game-1', [b'crane', b''])
    """
    import tensorflow_datasets as tfds

    path = os.fspath(name_or_dir)
    if os.path.isdir(path) and tf.io.gfile.exists(os.path.join(path, "dataset_info.json")):
        return tfds.builder_from_directory(path).as_dataset(split=split, **as_dataset_kwargs)
    name = f"{path}/{config}" if config else path
    builder = tfds.builder(name, data_dir=os.fspath(data_dir) if data_dir is not None else None)
    return builder.as_dataset(split=split, **as_dataset_kwargs)


def _observation_text(observation: Any) -> tf.Tensor:
    return observation["text"] if isinstance(observation, dict) else observation


def _turn_fields(step: dict[str, Any]) -> dict[str, Any]:
    return {"observation": _observation_text(step["observation"]), "action": step["action"],
            "reward": step["reward"], "is_last": step["is_last"]}


def _turns_of_episode(episode: dict[str, Any]) -> tf.data.Dataset:
    steps_dataset = episode["steps"]
    if not is_dense(steps_dataset.element_spec):  # other fields vary in shape: stack only the turn's fields
        steps_dataset = steps_dataset.map(_turn_fields)
    steps = collect(steps_dataset)  # the whole episode as one batch: turns are cut with slices
    episode_id = episode.get("episode_id", tf.constant("", tf.string))
    text = _observation_text(steps["observation"])
    turns = {
        "observation": text[:-1],
        "action": steps["action"][:-1],
        "reward": tf.cast(steps["reward"][:-1], tf.float64),
        "done": steps["is_last"][1:],
    }
    turns["episode_id"] = tf.fill(tf.shape(turns["done"]), episode_id)
    return tf.data.Dataset.from_tensor_slices(turns)


def to_turns(episodes: tf.data.Dataset) -> tf.data.Dataset:
    """One element per action: ``observation`` (text), ``action`` (text), ``reward``, ``done``, ``episode_id``.

    Turn i pairs step i's observation with the action taken from it and the reward it earned; ``done``
    is true on the episode's final action (the following step is ``is_last``). The ``is_last`` step,
    which carries no action, yields no turn. ``episode_id`` is ``""`` when episodes have none.

        >>> steps = {"observation": ["", "⬛🟨⬛⬛🟩", "🟩🟩🟩🟩🟩"], "action": ["crane", "abide", ""],
        ...          "reward": [-1.0, 0.0, 0.0], "is_last": [False, False, True]}
        >>> episodes = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps), "episode_id": "g1"})
        >>> [(t["action"], t["reward"], t["done"], t["episode_id"]) for t in to_turns(episodes).as_numpy_iterator()]
        [(b'crane', -1.0, False, b'g1'), (b'abide', 0.0, True, b'g1')]
    """
    return episodes.flat_map(_turns_of_episode)


__all__ = ["load", "to_turns"]
