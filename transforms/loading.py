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
import tensorflow_datasets as tfds

from transforms.specs import collect


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
    """
    path = os.fspath(name_or_dir)
    if os.path.isdir(path) and tf.io.gfile.exists(os.path.join(path, "dataset_info.json")):
        return tfds.builder_from_directory(path).as_dataset(split=split, **as_dataset_kwargs)
    name = f"{path}/{config}" if config else path
    builder = tfds.builder(name, data_dir=os.fspath(data_dir) if data_dir is not None else None)
    return builder.as_dataset(split=split, **as_dataset_kwargs)


def _turns_of_episode(episode: dict[str, Any]) -> tf.data.Dataset:
    steps = collect(episode["steps"])  # the whole episode as one batch: turns are cut with slices
    episode_id = episode.get("episode_id", tf.constant("", tf.string))
    observation = steps["observation"]
    text = observation["text"] if isinstance(observation, dict) else observation
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
    """
    return episodes.flat_map(_turns_of_episode)


__all__ = ["load", "to_turns"]
