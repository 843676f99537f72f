"""ArrayRecord builds read without TensorFlow: finding a built dataset and its file format, opening a split as a
``tfds.data_source``, checking its steps hold what the token layout reads, every episode's return and the
episodes a run trains on. Plain numpy and TFDS (no TensorFlow, no torch); ``transforms.data_source`` makes
training batches of them.

Example::

    from transforms.array_record import episode_returns, open_source, select_episodes

    source = open_source("/tmp/tfds/wordle_synthetic/expert/1.1.0")   # built with --file_format array_record
    best = select_episodes(len(source), episode_returns(source), top_p=0.1)
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from transforms.token_layout import TokenMDPConfig, for_plain_text_observation, step_field, step_fields

#: ``dataset_info.json``'s ``fileFormat`` of a build that ``tfds.data_source`` reads.
ARRAY_RECORD = "array_record"
#: Episodes decoded per read while passing over a whole dataset (returns for %BC).
_READ_CHUNK = 256


def built_folder(name_or_dir: str | os.PathLike, config: str | None = None,
                 data_dir: str | os.PathLike | None = None) -> Path | None:
    """The folder of a built dataset (the one with ``dataset_info.json``): ``name_or_dir`` itself, or the newest
    version of ``name[/config]`` under ``data_dir`` (TFDS's default without one: ``$TFDS_DATA_DIR`` or
    ``~/tensorflow_datasets``); None if not built."""
    path = Path(os.path.expanduser(os.fspath(name_or_dir)))
    if (path / "dataset_info.json").is_file():
        return path
    if data_dir is None:  # TFDS's default data folder
        data_dir = os.environ.get("TFDS_DATA_DIR") or Path.home() / "tensorflow_datasets"
    root = Path(os.path.expanduser(os.fspath(data_dir)))
    folder = root / os.fspath(name_or_dir) / (config or "")
    versions = sorted((p.parent for p in folder.glob("*/dataset_info.json")),
                      key=lambda p: tuple(int(x) if x.isdigit() else 0 for x in p.name.split(".")))
    return versions[-1] if versions else None


def file_format(folder: str | os.PathLike) -> str:
    """The file format a built dataset's episodes are stored in (``dataset_info.json``'s ``fileFormat``;
    ``tfrecord`` when it names none, as TFDS assumes)."""
    path = Path(folder) / "dataset_info.json"
    try:
        info = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not JSON ({error})") from error
    if not isinstance(info, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(info).__name__}")
    return str(info.get("fileFormat") or "tfrecord")


def open_source(name_or_dir: str | os.PathLike, split: str = "train", config: str | None = None,
                data_dir: str | os.PathLike | None = None) -> Any:
    """The episodes of a split of an ArrayRecord build as a ``tfds.data_source`` (random access, ``len``,
    items decoded into Python: text as ``bytes``, the nested ``steps`` as a sequence of step dicts).

    A build in another format (TFRecord, what ``tfds build`` writes by default) is a ``ValueError`` naming its
    folder and how to build it as ArrayRecord.
    """
    import tensorflow_datasets as tfds

    folder = built_folder(name_or_dir, config, data_dir)
    if folder is None:
        where = f" under {data_dir}" if data_dir is not None else ""
        raise FileNotFoundError(f"{os.fspath(name_or_dir)}{'/' + config if config else ''}: no built dataset{where} "
                                "(no dataset_info.json); build it with `rlds-lang build NAME --config CONFIG "
                                "--data-dir DIR --file-format array_record`")
    stored = file_format(folder)
    if stored != ARRAY_RECORD:
        raise ValueError(f"{folder}: its episodes are stored as {stored}, which only tf.data reads (TensorFlow); "
                         f"the data-source reader needs {ARRAY_RECORD}: build the dataset again with "
                         "`tfds build ... --file_format array_record` (`rlds-lang build ... --file-format array_record`)")
    return tfds.builder_from_directory(os.fspath(folder)).as_data_source(split=split)


def resolved_source_config(source: Any, config: TokenMDPConfig) -> TokenMDPConfig:
    """``config`` with the default ``observation_key`` read as ``observation`` when a data source's steps hold the
    observation as one text (a plain ``dm_env`` text environment's dataset): what ``transforms.token_mdp`` does
    on a ``tf.data`` element spec (``for_plain_text_observation``)."""
    import tensorflow_datasets as tfds

    features = source.dataset_info.features
    steps = features["steps"].feature if "steps" in features.keys() else {}
    observation = steps["observation"] if "observation" in steps.keys() else None
    plain = isinstance(observation, tfds.features.Text) and tuple(observation.shape) == ()
    return for_plain_text_observation(config, plain)


def check_step_features(source: Any, config: TokenMDPConfig) -> None:
    """Fails early, naming the field, when a data source's steps lack a field the layout needs or hold the
    wrong type (what ``transforms.token_mdp`` checks on a ``tf.data`` element spec)."""
    import tensorflow_datasets as tfds

    features = source.dataset_info.features
    if "steps" not in features.keys() or not isinstance(features["steps"], tfds.features.Dataset):
        raise KeyError(f"token_mdp: episodes need a 'steps' dataset; features are {sorted(features.keys())}")
    for what, path, kind in step_fields(config):
        feature = step_field(features["steps"].feature, path, what)
        if not isinstance(feature, tfds.features.Tensor) or tuple(feature.shape) != ():
            raise ValueError(f"token_mdp: step field {path!r} ({what}) must be a scalar {kind}, got {feature!r}")
        if (kind == "text") != isinstance(feature, tfds.features.Text):
            raise ValueError(f"token_mdp: step field {path!r} ({what}) must be {kind}, got {feature!r}")


def episode_returns(source: Any, reward_key: str = "reward", progress: bool = False) -> np.ndarray:
    """The undiscounted return of every episode of a data source, in its order, float64: the sum of the rewards
    of the steps that are not ``is_last``, added from the last step back (as ``transforms.returns`` adds them,
    so both readers rank episodes alike)."""
    returns = np.zeros(len(source), np.float64)
    starts = range(0, len(source), _READ_CHUNK)
    if progress:
        from tqdm import tqdm

        starts = tqdm(starts, desc="episode returns", unit="chunk")
    for start in starts:
        indices = list(range(start, min(start + _READ_CHUNK, len(source))))
        returns[indices] = [episode_return(episode, reward_key) for episode in source.__getitems__(indices)]
    return returns


def episode_return(episode: Mapping[str, Any], reward_key: str = "reward") -> float:
    """One decoded episode's undiscounted return (``episode_returns``).

    >>> episode_return({"steps": [{"reward": 0.5, "is_last": False}, {"reward": 9.0, "is_last": True}]})
    0.5
    """
    rewards = np.array([0.0 if step["is_last"] else np.float64(step[reward_key]) for step in episode["steps"]],
                       np.float64)
    return float(np.cumsum(rewards[::-1])[-1]) if len(rewards) else 0.0


def select_episodes(size: int, returns: np.ndarray | None = None, top_p: float | None = None,
                    min_return: float | None = None, world_size: int = 1, rank: int = 0) -> np.ndarray:
    """The positions of the episodes a run trains on, in dataset order: the top ``top_p`` by return (ties to the
    earlier), then those with a return of at least ``min_return``, then every ``world_size``-th from ``rank``
    (``Dataset.shard``): the ``tf.data`` reader's ``filter_top_p``, ``filter_min_return`` and ``shard``.

    >>> select_episodes(6, np.array([3.0, 9.0, 1.0, 7.0, 7.0, 0.0]), top_p=0.5, min_return=7.5).tolist()
    [1]
    >>> select_episodes(5, world_size=2, rank=1).tolist()
    [1, 3]
    """
    from transforms.top_p import top_p_mask

    kept = np.arange(size, dtype=np.int64)
    if (top_p is not None or min_return is not None) and (returns is None or len(returns) != size):
        raise ValueError(f"select_episodes: {size} episodes need as many returns, got "
                         f"{None if returns is None else len(returns)}")
    if top_p is not None:
        kept = kept[top_p_mask(returns, top_p)]
    if min_return is not None:
        kept = kept[returns[kept] >= min_return]
    return kept[rank::world_size]


__all__ = ["ARRAY_RECORD", "built_folder", "file_format", "open_source", "check_step_features", "resolved_source_config", "episode_return",
           "episode_returns", "select_episodes"]
