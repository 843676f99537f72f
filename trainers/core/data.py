"""Which reader a training run reads its episodes with, and the data-source reader's batches.

Two readers give the same batches, tensor for tensor and in the same order for a seed (``tests/test_data_source.py``):

* ``tf_data``: ``transforms.loading.load`` and ``transforms.token_mdp.token_batches`` in ``tf.data``
  (``trainers.core.loop.training_dataset``), for builds stored as TFRecord (what ``tfds build`` writes by
  default); it needs TensorFlow.
* ``data_source``: ``tfds.data_source`` and a torch ``DataLoader`` (``transforms.data_source.SourceBatches``),
  for builds stored as ArrayRecord (``rlds-lang build ... --file-format array_record``); it needs no TensorFlow,
  which is how training runs on a machine that has torch but not TensorFlow.

``--reader auto`` (the default) takes ``data_source`` for an ArrayRecord build and ``tf_data`` otherwise.

Example::

    from trainers.core.data import chosen_reader

    chosen_reader(config)        # "data_source" for an ArrayRecord build
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - type hints only
    from transforms.data_source import SourceBatches

#: the readers a run may ask for (``TrainConfig.reader``).
READERS = ("auto", "tf_data", "data_source")
#: where a filtered-BC run keeps its dataset's episode returns (``transforms.top_p.cached_returns``; both readers
#: compute the same returns, so either reads the other's file).
RETURNS_CACHE = "episode_returns.npz"


def dataset_key(config: Any) -> dict[str, Any]:
    """What identifies a run's training episodes: the dataset as given and, for a built folder, its
    ``dataset_info.json`` (rewritten by every build)."""
    key = {name: getattr(config, name) for name in ("dataset", "split", "config", "data_dir")}
    info = Path(os.path.expanduser(str(config.dataset))) / "dataset_info.json"
    if info.is_file():
        key["dataset_info_sha256"] = hashlib.sha256(info.read_bytes()).hexdigest()
    return key


def returns_key(config: Any) -> dict[str, Any]:
    """The key of the cached returns of a run's episodes (undiscounted, from ``reward``), the same for both readers."""
    return {**dataset_key(config), "gamma": 1.0, "use_discount": False, "reward_key": "reward"}


def chosen_reader(config: Any) -> str:
    """``tf_data`` or ``data_source``: ``config.reader``, or for ``auto`` what the build holds (ArrayRecord files:
    ``data_source``). An unknown reader, or ``tf_data`` for an ArrayRecord build, is a ``ValueError`` saying what to
    do (``data_source`` for a TFRecord build fails in ``transforms.array_record.open_source``, saying the same)."""
    from transforms.array_record import ARRAY_RECORD, built_folder, file_format

    reader = getattr(config, "reader", "auto")
    if reader not in READERS:
        raise ValueError(f"reader must be one of {', '.join(READERS)}; got {reader!r}")
    folder = built_folder(config.dataset, config.config, config.data_dir) if config.dataset else None
    array_record = folder is not None and file_format(folder) == ARRAY_RECORD
    if reader == "tf_data" and array_record:
        raise ValueError(f"{folder}: its episodes are stored as {ARRAY_RECORD}, which tf.data does not read; train "
                         "with --reader data_source (or auto), or build the dataset again as tfrecord for tf_data")
    if reader != "auto":
        return reader
    return "data_source" if array_record else "tf_data"


def require_tensorflow(config: Any) -> None:
    """Raises ``ModuleNotFoundError`` saying what to do when the ``tf_data`` reader is chosen without TensorFlow."""
    import importlib.util

    if importlib.util.find_spec("tensorflow") is None:
        raise ModuleNotFoundError(
            f"{config.dataset}: the tf_data reader needs TensorFlow, which is not installed here. Build the dataset "
            "as ArrayRecord (`rlds-lang build NAME --config CONFIG --data-dir DIR --file-format array_record`) and "
            "train with --reader auto or data_source, which read it without TensorFlow; or install tensorflow",
            name="tensorflow")


def source_batches(config: Any, tokenizer: Any, info: Any, skip: int = 0,
                   restore: Path | None = None) -> SourceBatches:
    """The data-source reader's torch batches for this process (``info``: its ``trainers.core.loop.DistInfo``):
    the batches ``training_dataset`` gives in ``tf.data`` (top-p, return cutoff, shard, token MDP, shuffled and
    repeated), each cut to its longest sequence.

    The stream starts after ``skip`` batches, or at the position saved in ``restore``; either costs one epoch's
    order, not a replay. A saved position that cannot be read falls back to ``skip``, with a warning.
    """
    from transforms.array_record import episode_returns, open_source, select_episodes
    from transforms.data_source import SourceBatches
    from transforms.token_layout import TokenMDPConfig
    from transforms.top_p import cached_returns
    from transforms.torch_bridge import trim_padding

    if not config.dataset:
        raise ValueError("config.dataset is empty: give a folder written by `tfds build` or a dataset name")
    source = open_source(config.dataset, config.split, config.config, config.data_dir)
    min_return = getattr(config, "min_return", None)
    returns = None
    if config.top_p is not None or min_return is not None:
        returns = cached_returns(Path(config.out) / RETURNS_CACHE, returns_key(config),
                                 lambda: episode_returns(source, progress=info.is_main))
    positions = select_episodes(len(source), returns, config.top_p, min_return, info.world_size, info.rank)
    # returns-to-go discounted per action token by the config's gamma, if it has one (the MC-returns trainer's targets)
    mdp = TokenMDPConfig(max_length=config.max_length, token_reward=config.token_reward,
                         gamma=getattr(config, "gamma", 1.0))
    if restore is not None and (restore / SourceBatches.POSITION).exists():
        try:
            skip = SourceBatches.read_position(restore)
        except ValueError as error:
            warnings.warn(f"{restore}: the data stream's saved position could not be read ({error}); "
                          f"starting after {skip} batches instead")
    return SourceBatches(source, tokenizer, mdp, config.batch_size, config.shuffle_buffer, config.seed,
                         positions=positions, returns=returns, skip=skip, then=trim_padding,
                         workers=getattr(config, "reader_workers", 0))


__all__ = ["READERS", "RETURNS_CACHE", "dataset_key", "returns_key", "chosen_reader", "require_tensorflow",
           "source_batches"]
