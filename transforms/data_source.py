"""Training batches from an ArrayRecord build without TensorFlow: ``tfds.data_source`` and a torch ``DataLoader``.

A dataset built with ``tfds build ... --file_format array_record`` (``rlds-lang build --file-format
array_record``) is read by random access: ``tfds.data_source`` decodes each episode, its nested ``steps``
included, into Python values (no TensorFlow: TFDS parses the stored ``tf.Example`` protos in Python), and a
``torch.utils.data.DataLoader`` (TFDS's own PyTorch path) turns batches of episode indices into padded token
batches. They are the batches of the ``tf.data`` reader (``transforms.token_mdp.token_batches`` with
``repeat=True, drop_remainder=True``) of the same episodes, tensor for tensor and in the same order:

* the same episodes: %BC's top ``p`` and a return cutoff by the same returns (``transforms.top_p``), then every
  ``world_size``-th for a ``torchrun`` process (``Dataset.shard``);
* the same order: ``transforms.shuffle_order.ShuffledRepeat`` hands out the positions that ``tf.data``'s
  seeded shuffle buffer hands out, epoch after epoch;
* the same tensors: ``transforms.token_layout.layout`` lays the episodes out (the code the ``tf.data`` reader
  runs too) and ``transforms.torch_bridge.collate_token_mdp`` pads them as ``pad_batches`` does.

A stream's position is the number of batches it handed out, so a resumed run starts where it stopped at the cost
of one epoch's order (``SourceBatches.save`` keeps it beside the checkpoint). ``workers`` DataLoader processes
decode and lay out batches in parallel, in order.

Example::

    from rlds_lang.tokenizers import wordle_tokenizer
    from transforms.array_record import open_source
    from transforms.data_source import SourceBatches
    from transforms.token_layout import TokenMDPConfig

    source = open_source("/tmp/tfds/wordle_synthetic/expert/1.1.0")
    batches = SourceBatches(source, wordle_tokenizer(), TokenMDPConfig(max_length=96), batch_size=32,
                            shuffle_buffer=10_000, seed=0)
    batch = next(batches)            # dict of torch tensors, as the tf.data reader gives them
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch.utils.data

from transforms.array_record import check_step_features, episode_return, resolved_source_config
from transforms.shuffle_order import ShuffledRepeat
from transforms.token_layout import StepsBatch, TokenMDPConfig, layout, sequences
from transforms.torch_bridge import collate_token_mdp

class EpisodeSequences(torch.utils.data.Dataset):
    """The token sequences of a data source's episodes (map-style: position -> ``token_mdp`` sequence).

    ``__getitems__`` (what a ``DataLoader`` calls with a batch of positions) decodes the episodes and lays them
    out in one ``layout`` call. ``returns`` (each episode's return, when the positions were chosen by it) are
    checked on every read, so a dataset rebuilt in place under a stale cache of returns fails instead of
    training on other episodes than the ones chosen.
    """

    def __init__(self, source: Any, tokenizer: Any, config: TokenMDPConfig, returns: np.ndarray | None = None):
        super().__init__()
        self.source, self.tokenizer, self.config, self.returns = source, tokenizer, config, returns

    def __len__(self) -> int:
        return len(self.source)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.__getitems__([index])[0]

    def __getitems__(self, indices: Sequence[int]) -> list[dict[str, Any]]:
        """The sequences of the episodes at ``indices``, in that order."""
        indices = [int(i) for i in indices]
        episodes = self.source.__getitems__(indices)
        if self.returns is not None:
            for index, episode in zip(indices, episodes):
                if episode_return(episode, self.config.reward_key) != self.returns[index]:
                    raise ValueError(f"episode {index} of the data source returns "
                                     f"{episode_return(episode, self.config.reward_key)}, the returns it was chosen "
                                     f"by say {self.returns[index]}: the dataset changed since (remove the cached "
                                     "returns, episode_returns.npz, and start again)")
        return sequences(layout(StepsBatch.of_episodes(episodes, self.config), self.tokenizer, self.config))


class ShuffledBatches(torch.utils.data.Sampler):
    """Batches of episode positions for a ``DataLoader``'s ``batch_sampler``, endless: ``positions`` (the episodes
    chosen, ``select_episodes``) in the order of ``tf.data``'s ``shuffle(shuffle_buffer, seed).repeat()``, cut into
    ``batch_size`` pieces, from batch number ``start`` on."""

    def __init__(self, positions: np.ndarray, batch_size: int, shuffle_buffer: int, seed: int, start: int = 0):
        super().__init__()
        if len(positions) == 0:
            raise ValueError("the data-source reader has no episodes to train on (an empty split, or every episode "
                             "filtered out by top_p/min_return, or more processes than episodes)")
        self.positions, self.batch_size, self.start = np.asarray(positions, np.int64), batch_size, start
        self.order = ShuffledRepeat(len(positions), shuffle_buffer, seed)

    def __iter__(self) -> Iterator[list[int]]:
        for batch in self.order.batches(self.batch_size, self.start):
            yield self.positions[batch].tolist()


#: how ``DataLoader`` workers start: a forked child of a process whose TensorFlow threads run (a dataset built or
#: read in-process by TFDS) crashes with a segmentation fault on its first read, so workers start from a fresh
#: fork server, which holds no such threads, and receive the data source pickled.
WORKER_START = "forkserver"


def worker_start(workers: int) -> str | None:
    """The ``multiprocessing_context`` of a ``DataLoader`` with ``workers`` processes: ``WORKER_START``, or None
    when it reads in its own process."""
    return WORKER_START if workers > 0 else None


def _collate(items: list[dict[str, Any]], pad_id: int, max_length: int,
             then: Callable[[Any], Any] | None) -> dict[str, Any]:
    batch = collate_token_mdp(items, pad_id, max_length)
    return batch if then is None else then(batch)


def ordered_batches(source: Any, tokenizer: Any, config: TokenMDPConfig, batch_size: int,
                    positions: Sequence[int] | None = None, then: Callable[[Any], Any] | None = None,
                    workers: int = 0) -> torch.utils.data.DataLoader:
    """Padded torch token batches of the episodes at ``positions`` (all, when None), each once, in their order,
    the last batch possibly smaller: what ``token_batches(episodes, ..., batch_size)`` gives without shuffling or
    repeating (held-out losses)."""
    config = resolved_source_config(source, config)
    check_step_features(source, config)
    if batch_size < 1:
        raise ValueError(f"ordered_batches: batch_size must be >= 1, got {batch_size}")
    positions = list(range(len(source))) if positions is None else [int(p) for p in positions]
    groups = [positions[start:start + batch_size] for start in range(0, len(positions), batch_size)]
    return torch.utils.data.DataLoader(
        EpisodeSequences(source, tokenizer, config), batch_sampler=groups, num_workers=workers,
        multiprocessing_context=worker_start(workers), collate_fn=functools.partial(_collate, pad_id=tokenizer.pad_id, max_length=config.max_length, then=then))


class SourceBatches:
    """Padded torch token batches of a data source, endless and resumable: the batches of
    ``token_batches(..., repeat=True, drop_remainder=True)`` over the same episodes (module docstring).

    Args:
      source: a ``tfds.data_source`` (``open_source``).
      tokenizer, config: the token view (``transforms.token_layout``).
      batch_size, shuffle_buffer, seed: as for ``token_batches``.
      positions: the episodes to train on (``select_episodes``); all of them when None.
      returns: the returns ``positions`` were chosen by (checked on every read).
      skip: batches to start after (a resumed run's position); ``restore``: a folder ``save`` wrote, whose
        position replaces ``skip``.
      then: applied to every batch (e.g. ``trim_padding``).
      workers: ``DataLoader`` worker processes (0: read in this process).
    """

    #: the file ``save`` writes into its folder.
    POSITION = "data_source_position.json"

    def __init__(self, source: Any, tokenizer: Any, config: TokenMDPConfig, batch_size: int, shuffle_buffer: int,
                 seed: int, positions: np.ndarray | None = None, returns: np.ndarray | None = None, skip: int = 0,
                 restore: str | os.PathLike | None = None, then: Callable[[Any], Any] | None = None, workers: int = 0):
        config = resolved_source_config(source, config)
        check_step_features(source, config)
        if batch_size < 1:
            raise ValueError(f"SourceBatches: batch_size must be >= 1, got {batch_size}")
        if restore is not None:
            skip = self.read_position(restore)
        self.position = skip
        positions = np.arange(len(source), dtype=np.int64) if positions is None else positions
        sampler = ShuffledBatches(positions, batch_size, shuffle_buffer, seed, start=skip)
        loader = torch.utils.data.DataLoader(
            EpisodeSequences(source, tokenizer, config, returns), batch_sampler=sampler, num_workers=workers,
            multiprocessing_context=worker_start(workers), collate_fn=functools.partial(_collate, pad_id=tokenizer.pad_id, max_length=config.max_length, then=then),
            persistent_workers=False)
        self._iterator = iter(loader)

    def __iter__(self) -> "SourceBatches":
        return self

    def __next__(self) -> Any:
        batch = next(self._iterator)
        self.position += 1
        return batch

    def save(self, folder: str | os.PathLike) -> None:
        """Writes the stream's position (batches handed out) into ``folder`` (created if missing)."""
        os.makedirs(folder, exist_ok=True)
        path = Path(folder) / self.POSITION
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"batches": self.position}) + "\n")
        os.replace(tmp, path)

    @classmethod
    def read_position(cls, folder: str | os.PathLike) -> int:
        """The position ``save`` wrote into ``folder``; ``FileNotFoundError``/``ValueError`` naming the file."""
        path = Path(folder) / cls.POSITION
        try:
            batches = json.loads(path.read_text())["batches"]
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise ValueError(f"{path}: not a data-source position ({error})") from error
        if not isinstance(batches, int) or batches < 0:
            raise ValueError(f"{path}: 'batches' must be a count of batches, got {batches!r}")
        return batches


__all__ = ["EpisodeSequences", "ShuffledBatches", "ordered_batches", "SourceBatches"]
