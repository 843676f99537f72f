"""The PyTorch bridge: ``tf.data`` datasets and numpy batches handed to PyTorch (TensorFlow imported on use:
``to_torch``, ``trim_padding`` and ``collate_token_mdp`` serve the data-source reader, which runs without it).

``TurnDataset`` yields Python values (``str`` decoded from UTF-8, ``float``, ``bool``) of the per-turn view, so
trainers tokenise with any tokenizer; with a multi-worker ``DataLoader`` each worker reads a disjoint shard.
``TensorBatches`` turns padded ``tf.data`` batches (``transforms.token_mdp.token_batches``) into torch tensors,
``ResumableBatches`` resumes them at a saved position, and ``collate_token_mdp`` is the ``DataLoader`` collate of
unbatched token-MDP sequences.

Example::

    from torch.utils.data import DataLoader
    from transforms.loading import load
    from transforms.statistics import compute_statistics
    from transforms.torch_bridge import TurnDataset

    episodes = load("wordle_synthetic", config="expert", data_dir="/tmp/tfds")
    print(compute_statistics(episodes).table())
    for batch in DataLoader(TurnDataset(episodes), batch_size=32):
        print(batch["observation"][:2], batch["reward"][:2])
        break
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import torch.utils.data

if TYPE_CHECKING:  # pragma: no cover - type hints only
    import tensorflow as tf


def _decode(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


class TurnDataset(torch.utils.data.IterableDataset):
    """Turns of an episodes dataset as dicts of Python values.

    Args:
      episodes: a ``tf.data.Dataset`` of RLDS episodes (as ``transforms.loading.load`` returns).
      turns: give the per-turn view directly instead (``transforms.loading.to_turns``); one of the two.

    Yields ``{"observation": str, "action": str, "reward": float, "done": bool, "episode_id": str}``.

        >>> steps = {"observation": ["", "⬛🟨⬛⬛🟩", "🟩🟩🟩🟩🟩"], "action": ["crane", "abide", ""],
        ...          "reward": [-1.0, 0.0, 0.0], "is_last": [False, False, True]}
        >>> episodes = tf.data.Dataset.from_tensors({"steps": tf.data.Dataset.from_tensor_slices(steps), "episode_id": "g1"})
        >>> [(t["observation"], t["action"], t["done"]) for t in TurnDataset(episodes)]
        [('', 'crane', False), ('⬛🟨⬛⬛🟩', 'abide', True)]
    """

    def __init__(self, episodes: tf.data.Dataset | None = None, turns: tf.data.Dataset | None = None):
        super().__init__()
        if (episodes is None) == (turns is None):
            raise ValueError("give exactly one of episodes= or turns=")
        self._episodes = episodes
        self._turns = turns

    def __iter__(self) -> Iterator[dict[str, Any]]:
        from transforms.loading import to_turns

        info = torch.utils.data.get_worker_info()
        if self._turns is not None:
            turns = self._turns
            if info is not None and info.num_workers > 1:
                turns = turns.shard(info.num_workers, info.id)
        else:
            episodes = self._episodes
            if info is not None and info.num_workers > 1:  # whole episodes per worker
                episodes = episodes.shard(info.num_workers, info.id)
            turns = to_turns(episodes)
        for turn in turns.as_numpy_iterator():
            yield {k: _decode(v) for k, v in turn.items()}


class ResumableBatches:
    """Torch batches of a batched ``tf.data.Dataset`` from one iterator whose position can be saved and restored.

    ``save(folder)`` writes tf.data's own checkpoint of the iterator (its shuffle buffer, shuffle seeds, file
    positions and prefetched batches; a few MB for a 10,000-sequence buffer), and ``ResumableBatches(batches,
    restore=folder)`` continues the stream exactly where it was saved, without replaying it: a training run
    resumed at step 16,000 of a 1M-episode dataset would otherwise read and tokenise 16,000 batches again before
    its first step (about 30 minutes for %BC at step 16,000, beside one other training job). The dataset must be
    built the same way both times; ``then`` is applied to every torch batch (e.g. ``trim_padding``); ``skip``
    batches are dropped first (the replay, for a position that was not saved).

        >>> import tempfile
        >>> ds = tf.data.Dataset.range(10).shuffle(10, seed=0).batch(2)
        >>> first = ResumableBatches(ds)
        >>> _ = next(first)
        >>> folder = tempfile.mkdtemp()
        >>> first.save(folder)
        >>> next(ResumableBatches(ds, restore=folder)).tolist() == next(first).tolist()
        True
    """

    #: the checkpoint's file prefix inside the folder given to ``save``.
    PREFIX = "iterator"

    def __init__(self, batches: tf.data.Dataset, restore: str | os.PathLike | None = None,
                 then: Callable[[Any], Any] | None = None, skip: int = 0):
        import tensorflow as tf

        self._then, self._nest = then, tf.nest
        options = tf.data.Options()
        # token_mdp reads each episode's nested steps with get_single_element, which tf.data calls stateful
        # (it would refuse to save the iterator) although it is a pure function of its input; no op of our
        # pipelines keeps random state of its own (shuffle's seeds are saved by the shuffle itself)
        options.experimental_external_state_policy = tf.data.experimental.ExternalStatePolicy.IGNORE
        self._iterator = iter(batches.with_options(options))
        self._checkpoint = tf.train.Checkpoint(iterator=self._iterator)
        if restore is not None:
            self._checkpoint.read(os.path.join(os.fspath(restore), self.PREFIX)).assert_consumed()
        for _ in range(skip):  # here rather than Dataset.skip, so the saved iterator's graph never depends on it
            next(self._iterator)

    def __iter__(self) -> "ResumableBatches":
        return self

    def __next__(self) -> Any:
        batch = to_torch(self._nest.map_structure(lambda tensor: tensor.numpy(), next(self._iterator)))
        return batch if self._then is None else self._then(batch)

    def save(self, folder: str | os.PathLike) -> None:
        """Writes the iterator's position into ``folder`` (created if missing) for ``restore``."""
        os.makedirs(folder, exist_ok=True)
        self._checkpoint.write(os.path.join(os.fspath(folder), self.PREFIX))


def to_torch(batch: Any) -> Any:
    """A numpy batch (as ``as_numpy_iterator`` yields) as torch: numbers and flags become tensors
    (sharing memory when the array is writable), text becomes lists of ``str`` decoded from UTF-8.

        >>> out = to_torch({"reward": np.array([1.0, 2.0], np.float32), "action": np.array([b"a", "é".encode()])})
        >>> out["reward"].dtype, out["action"]
        (torch.float32, ['a', 'é'])
    """
    if isinstance(batch, dict):
        return {key: to_torch(value) for key, value in batch.items()}
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_torch(value) for value in batch)
    array = np.asarray(batch)
    if array.dtype.kind in "OSU":
        return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in array.reshape(-1).tolist()] \
            if array.ndim <= 1 else [to_torch(row) for row in array]
    if not array.flags.writeable:  # tf.data hands out read-only buffers; torch wants to own writable ones
        array = array.copy()
    return torch.from_numpy(array)


def trim_padding(batch: dict[str, Any]) -> dict[str, Any]:
    """A right-padded token batch cut to its longest sequence: every tensor shaped ``[batch, length, ...]`` like
    ``attention_mask`` loses the trailing columns that are padding in every row.

    ``token_mdp.pad_batches`` pads to a fixed ``max_length`` (tf.data needs static shapes); a causal model's
    outputs at the real positions do not depend on padding that follows them, so the cut changes no result
    and saves the compute of the padded columns (Wordle's longest episode is 74 tokens of the usual 96).

        >>> b = {"input_ids": torch.tensor([[1, 2, 0, 0], [1, 0, 0, 0]]), "attention_mask": torch.tensor([[1, 1, 0, 0],
        ...      [1, 0, 0, 0]]), "reward": torch.tensor([1.0, 2.0])}
        >>> {k: v.tolist() for k, v in trim_padding(b).items()}
        {'input_ids': [[1, 2], [1, 0]], 'attention_mask': [[1, 1], [1, 0]], 'reward': [1.0, 2.0]}
    """
    mask = batch["attention_mask"]
    longest = int(mask.sum(dim=1).max()) if mask.numel() else 0
    if longest == mask.shape[1]:
        return batch
    return {key: value[:, :longest] if isinstance(value, torch.Tensor) and value.shape[:2] == mask.shape else value
            for key, value in batch.items()}


class TensorBatches(torch.utils.data.IterableDataset):
    """A batched ``tf.data.Dataset`` as an iterable of torch batches (see ``to_torch``), prefetched.

    The dataset is already batched in tf.data (vectorised), so PyTorch receives whole batches: use
    ``DataLoader(TensorBatches(ds), batch_size=None)``. With several DataLoader workers each reads a
    disjoint shard of the batches.

        >>> ds = tf.data.Dataset.from_tensor_slices({"reward": [1.0, 2.0, 3.0]}).batch(2)
        >>> [b["reward"].tolist() for b in TensorBatches(ds)]
        [[1.0, 2.0], [3.0]]
    """

    def __init__(self, batches: tf.data.Dataset):
        super().__init__()
        self._batches = batches

    def __iter__(self) -> Iterator[Any]:
        import tensorflow as tf

        info = torch.utils.data.get_worker_info()
        batches = self._batches
        if info is not None and info.num_workers > 1:
            batches = batches.shard(info.num_workers, info.id)
        for batch in batches.prefetch(tf.data.AUTOTUNE).as_numpy_iterator():
            yield to_torch(batch)


def _as_numpy(value: Any) -> Any:
    """A torch tensor as numpy; anything else as it is."""
    if hasattr(value, "detach"):  # a torch tensor
        return value.detach().cpu().numpy()
    return value


def collate_token_mdp(items: Sequence[Mapping[str, Any]], pad_id: int,
                      max_length: int | None = None) -> dict[str, Any]:
    """PyTorch collate for unbatched ``transforms.token_mdp.token_mdp`` sequences (numpy, as ``as_numpy_iterator`` gives, or torch).

    Pads per-token fields to the longest sequence (or to ``max_length``) with ``pad_id`` for
    ``input_ids`` and ``False``/``0`` elsewhere, and adds ``attention_mask``: the same keys and dtypes
    as ``TensorBatches(pad_batches(...))`` (integers int64, flags bool, floats float32, ``episode_id`` a
    list of ``str``). Use as ``DataLoader(..., collate_fn=functools.partial(collate_token_mdp, pad_id=...))``.

    >>> items = [{"input_ids": np.array([1, 6, 2], np.int32), "length": np.int32(3)},
    ...          {"input_ids": np.array([1, 2], np.int32), "length": np.int32(2)}]
    >>> batch = collate_token_mdp(items, pad_id=0)
    >>> batch["input_ids"].tolist(), batch["attention_mask"].tolist(), batch["input_ids"].dtype
    ([[1, 6, 2], [1, 2, 0]], [[1, 1, 1], [1, 1, 0]], torch.int64)
    """
    if not items:
        raise ValueError("collate_token_mdp: no items to collate")
    items = [{key: _as_numpy(value) for key, value in item.items()} for item in items]
    lengths = [len(item["input_ids"]) for item in items]
    width = max(lengths) if max_length is None else max_length
    for index, length in enumerate(lengths):
        if length > width:
            raise ValueError(f"collate_token_mdp: item {index} (episode_id {items[index].get('episode_id', '?')!r}) "
                             f"has {length} tokens, more than max_length={width}")
    batch: dict[str, Any] = {}
    for key, first in items[0].items():
        first = np.asarray(first)
        if first.ndim == 1:
            fill = pad_id if key == "input_ids" else 0
            column = np.full((len(items), width), fill, first.dtype)
            for row, item in enumerate(items):
                column[row, :lengths[row]] = item[key]
        else:
            column = np.asarray([item[key] for item in items], dtype=object if first.dtype.kind in "OSU" else first.dtype)
        batch[key] = column.astype(np.int64) if column.dtype == np.int32 else column
    batch["attention_mask"] = (np.arange(width)[None, :] < np.asarray(lengths)[:, None]).astype(np.int64)
    return to_torch(batch)


__all__ = ["TurnDataset", "TensorBatches", "ResumableBatches", "collate_token_mdp", "to_torch", "trim_padding"]
