"""Reading preference judgements back as ``Judgement`` objects, from a built TFDS folder or from raw logs (the
one reader of both, beside the writer in ``loggers.preferences``: a built example stores its steps in EnvLogger's codec).

``read_judgements(dataset, split)`` accepts:

- a built ``builders/preferences`` dataset: its data folder (``tfds build --data_dir``), the dataset's folder
  or its version folder -- any folder holding one ``dataset_info.json`` below it; ``split`` is a TFDS split
  (``train``, ``validation``, ``train[:50%]``...);
- raw logs written by ``loggers.preferences`` (any folder above them, e.g. one with ``segments/`` and
  ``sessions/``); ``split`` is ``train``, ``validation`` or ``straddling`` (by episode,
  ``rlds_lang.preferences.database.EpisodeSplit``, as the builder splits: no validation clip is in a training
  judgement, and a judgement with a clip on each side is ``straddling``) or ``all``.

Either way the clips come back whole: text byte-for-byte, arrays with their dtype and shape (the builder
stores each step serialised with EnvLogger's codec, decoded here by ``loggers.preferences.decode_value``).

Example::

    from loggers.preferences_dataset import read_judgements

    train = list(read_judgements("~/tensorflow_datasets/preferences", "train"))
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator, Mapping

from loggers.preferences import JUDGEMENT_SPLITS, decode_value, read_preference_logs
from rlds_lang.preferences.database import EpisodeSplit
from rlds_lang.preferences.types import Clip, Judgement, Label

#: the splits of raw preference logs: the builder's, and all of them.
RAW_SPLITS = JUDGEMENT_SPLITS + ("all",)


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def clip_from_example(row: Mapping[str, Any]) -> Clip:
    """The ``Clip`` of one clip feature of a ``builders/preferences`` example (as ``tfds.as_numpy`` gives it)."""
    steps = [decode_value(data) for data in row["steps"]]
    return Clip(_text(row["clip_id"]), _text(row["source_episode_id"]), int(row["start"]), int(row["stop"]),
                [s["observation"] for s in steps], [s["action"] for s in steps],
                [float(r) for r in row["rewards"]], [bool(p) for p in row["padding"]])


def judgement_from_example(example: Mapping[str, Any]) -> Judgement:
    """The ``Judgement`` of one ``builders/preferences`` example."""
    return Judgement(clip_from_example(example["left"]), clip_from_example(example["right"]),
                     Label.parse(example["label"], f"judgement {_text(example['judgement_id'])} label"),
                     labeller=_text(example["labeller"]), seconds=float(example["seconds"]),
                     selection=_text(example["selection"]), disagreement=float(example["disagreement"]))


def _built_dir(path: Path) -> Path | None:
    """The folder of the one ``dataset_info.json`` under ``path`` (None for raw logs); several is an error."""
    found = sorted(p.parent for p in path.rglob("dataset_info.json"))
    if len(found) > 1:
        raise ValueError(f"{path}: {len(found)} built datasets below it ({[str(f) for f in found]}); "
                         "give the one to read")
    return found[0] if found else None


def read_judgements(dataset: str | os.PathLike, split: str = "train") -> Iterator[Judgement]:
    """The judgements of ``split`` of a built preferences dataset or of raw preference logs (module docstring)."""
    path = Path(os.path.expanduser(os.fspath(dataset)))
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such preferences dataset or log folder")
    built = _built_dir(path)
    if built is not None:
        import tensorflow_datasets as tfds

        builder = tfds.builder_from_directory(str(built))
        for example in tfds.as_numpy(builder.as_dataset(split=split, shuffle_files=False)):
            yield judgement_from_example(example)
        return
    if not any(path.rglob("metadata.riegeli")):
        raise ValueError(f"{path}: neither a built preferences dataset (no dataset_info.json) nor preference "
                         "logs (no EnvLogger log directory)")
    if split not in RAW_SPLITS:
        raise ValueError(f"split {split!r} of raw preference logs {path}: expected one of {RAW_SPLITS}")
    splitter = EpisodeSplit()
    for judgement in read_preference_logs(path):
        if split == "all" or splitter.split(judgement) == split:
            yield judgement


__all__ = ["RAW_SPLITS", "clip_from_example", "judgement_from_example", "read_judgements"]
