"""The hyperparameters every trainer shares (``TrainConfig``), and dataclass configs as command lines.

Each algorithm module (``trainers.algorithms.bc``, ``trainers.algorithms.ilql.ilql``) subclasses ``TrainConfig`` with its own
documented fields; the CLI turns any such dataclass into ``--field value`` options (nested dataclasses as
``--model.n_layer 2``) with ``add_dataclass_arguments`` and reads them back with ``dataclass_from_args``.
A config is saved beside its checkpoint as JSON (``config_to_dict`` / ``config_from_dict``).

Example::

    import argparse
    from trainers.core.config import TrainConfig, add_dataclass_arguments, dataclass_from_args

    parser = argparse.ArgumentParser()
    add_dataclass_arguments(parser, TrainConfig)
    config = dataclass_from_args(TrainConfig, parser.parse_args(["--dataset", "/tmp/ds", "--model.n_layer", "2"]))
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import typing
from typing import Any, TypeVar

from rlds_lang.paths import default_run
from trainers.core.model_config import ModelConfig

C = TypeVar("C")


@dataclasses.dataclass
class TrainConfig:
    """What every trainer needs: the data, the optimisation schedule, logging and checkpoints, the model."""

    #: a folder written by ``tfds build`` (holding ``dataset_info.json``) or a registered dataset name.
    dataset: str = ""
    #: builder config when ``dataset`` is a name (e.g. ``branch``).
    config: str | None = None
    #: TFDS data folder when ``dataset`` is a name.
    data_dir: str | None = None
    #: TFDS split to train on (e.g. ``train`` or ``train[:90%]``).
    split: str = "train"
    #: output folder: checkpoint, metrics.jsonl, TensorBoard events, training_curves.png.
    out: str = default_run("train")
    #: optimizer steps to train for (each one ``batch_size * grad_accum * world_size`` episodes).
    steps: int = 1000
    #: episodes per micro-batch and process.
    batch_size: int = 32
    #: micro-batches accumulated into one optimizer step; the loss is normalised by the action tokens of
    #: the whole step, so ``batch_size=8, grad_accum=1`` and ``batch_size=1, grad_accum=8`` take the same step.
    grad_accum: int = 1
    #: AdamW learning rate (peak, after warm-up). The ILQL paper fine-tunes pretrained GPT-2 at 1e-5; a
    #: small randomly initialised model trains far faster at 3e-4.
    lr: float = 3e-4
    #: AdamW weight decay.
    weight_decay: float = 0.0
    #: AdamW's beta1 (decay of the gradient's running mean); PyTorch's default 0.9, as LMRL-Gym's.
    adam_beta1: float = 0.9
    #: AdamW's beta2 (decay of the squared gradient's running mean); PyTorch's default 0.999. LMRL-Gym's Wordle
    #: scripts use 0.95 (``llm_rl_scripts/wordle/{ilql,mc}/train_*_gpt2.py``).
    adam_beta2: float = 0.999
    #: linear learning-rate warm-up steps (then constant).
    warmup_steps: int = 50
    #: gradient-norm clipping (0 disables it).
    grad_clip: float = 1.0
    #: tokens per episode sequence; longer episodes keep their first ``max_length`` tokens.
    max_length: int = 96
    #: train on the top ``top_p`` fraction of episodes by return (filtered BC); None uses every episode.
    top_p: float | None = None
    #: train on the episodes whose return is at least ``min_return`` (%BC by a reward cutoff, the ILQL paper's
    #: Reddit filter); None keeps every episode. Applied after ``top_p`` when both are given.
    min_return: float | None = None
    #: shuffle buffer in episodes (0 keeps the dataset order).
    shuffle_buffer: int = 10_000
    #: how episodes are read: ``data_source`` (``tfds.data_source`` and a torch DataLoader, no TensorFlow; an
    #: ArrayRecord build), ``tf_data`` (TensorFlow; a TFRecord build) or ``auto`` (``data_source`` when the build is
    #: ArrayRecord); both give the same batches in the same order (``trainers.core.data``).
    reader: str = "auto"
    #: DataLoader worker processes that decode and lay out batches for the ``data_source`` reader (0: in this one).
    reader_workers: int = 0
    #: seed of parameters, data order and sampling.
    seed: int = 0
    #: optimizer steps between logged metrics (stdout progress bar, metrics.jsonl, TensorBoard).
    log_every: int = 10
    #: optimizer steps between checkpoints (the last step always writes one).
    checkpoint_every: int = 200
    #: optimizer steps between checkpoints also kept as ``out/snapshots/step_<N>`` (all but the data stream's
    #: position) beside the latest, so that a checkpoint can be chosen afterwards by held-out
    #: loss (LMRL-Gym's ``save_best``; ``trainers.evaluation.selection``); 0 keeps only the latest. A multiple
    #: of ``checkpoint_every``.
    keep_every: int = 0
    #: the causal transformer.
    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    #: tokenizer name (``wordle``: characters a-z and the colour squares); with ``model.pretrained`` that model's own
    #: tokenizer is used instead, and another name here is refused.
    tokenizer: str = "wordle"
    #: reward added on every action token of the token-level MDP (ILQL's per-token reward; 0 = none).
    token_reward: float = 0.0
    #: continue from ``out/checkpoint`` when it exists (exactly: same data order, optimizer and RNG state).
    resume: bool = True
    #: where to train: ``auto`` (CUDA when present, else the CPU), ``cpu``, ``cuda`` (``cuda:LOCAL_RANK`` under
    #: torchrun) or ``cuda:N`` (``trainers.core.device``); a checkpoint written on one device loads on any other.
    device: str = "auto"
    #: ``auto`` (fp32 unless the command chose), ``fp32``, ``tf32`` (CUDA matmuls in TF32) or ``bf16`` (autocast to
    #: bfloat16; allowed on the CPU, usually slower there) (``trainers.core.device``).
    precision: str = "auto"


def _field_type(cls: type, field: dataclasses.Field) -> Any:
    return _type_hints(cls)[field.name]


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    # resolved once per class: a config's options are built field by field, and resolving every annotation of a
    # class for each of its fields made a command's --help take seconds
    return typing.get_type_hints(cls)


def _scalar_parser(hint: Any):
    """``(argparse type, is_optional)`` for a field's type hint (str, int, float, bool, optional of those)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    optional = len(typing.get_args(hint)) > len(args)
    base = args[0] if optional and len(args) == 1 else hint
    if base is bool:
        return parse_bool, optional
    if base in (int, float, str):
        return base, optional
    raise TypeError(f"unsupported config field type {hint!r}")


def field_docs(cls: type) -> dict[str, str]:
    """The ``#:`` comments above each field of a dataclass (and its bases), by field name.

    >>> field_docs(TrainConfig)["grad_accum"].split(";")[0]
    'micro-batches accumulated into one optimizer step'
    """
    import inspect

    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        pending: list[str] = []
        for line in inspect.getsource(klass).splitlines():
            stripped = line.strip()
            if stripped.startswith("#:"):
                pending.append(stripped[2:].strip())
            elif pending and ":" in stripped and not stripped.startswith("#"):
                docs[stripped.split(":")[0].strip()] = " ".join(pending)
                pending = []
            elif not stripped.startswith("#"):
                pending = []
    return docs


def parse_bool(text: str) -> bool:
    """A command-line boolean: true/false, yes/no, on/off or 1/0 (any case); anything else is an argparse error.

    >>> parse_bool("Yes"), parse_bool("0")
    (True, False)
    """
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


def _optional(parse):
    def convert(text: str):
        return None if text.lower() == "none" else parse(text)
    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


def add_dataclass_arguments(parser: argparse.ArgumentParser, cls: type, prefix: str = "") -> None:
    """Adds ``--name`` for every field of the dataclass ``cls`` (``--model.n_layer`` for nested ones).

    Defaults are left unset (``argparse.SUPPRESS``) so ``dataclass_from_args`` keeps the dataclass' own.
    Each option's help is the field's ``#:`` comment and its default.
    """
    defaults = cls()
    docs = field_docs(cls)
    for field in dataclasses.fields(cls):
        hint = _field_type(cls, field)
        default = getattr(defaults, field.name)
        if dataclasses.is_dataclass(hint):
            add_dataclass_arguments(parser, hint, prefix=f"{prefix}{field.name}.")
            continue
        parse, optional = _scalar_parser(hint)
        parser.add_argument(f"--{prefix}{field.name}", dest=f"{prefix}{field.name}", default=argparse.SUPPRESS,
                            type=_optional(parse) if optional else parse,
                            metavar="BOOL" if parse is parse_bool else parse.__name__.upper(),
                            help=f"{docs.get(field.name, '')} (default: {default})".replace("%", "%%"))


def dataclass_from_args(cls: type[C], args: argparse.Namespace, prefix: str = "") -> C:
    """The dataclass ``cls`` with the options ``add_dataclass_arguments`` parsed into ``args`` applied."""
    values: dict[str, Any] = {}
    given = vars(args)
    for field in dataclasses.fields(cls):
        hint = _field_type(cls, field)
        key = f"{prefix}{field.name}"
        if dataclasses.is_dataclass(hint):
            values[field.name] = dataclass_from_args(hint, args, prefix=f"{key}.")
        elif key in given:
            values[field.name] = given[key]
    return cls(**values)


def module_summary(obj: Any) -> str:
    """The first line of the docstring of the module that defines ``obj`` (a command's ``--help`` description)."""
    import sys

    return (sys.modules[obj.__module__].__doc__ or "").strip().splitlines()[0]


def config_to_dict(config: Any) -> dict[str, Any]:
    """A (nested) config dataclass as plain JSON-able dicts."""
    return dataclasses.asdict(config)


def config_from_dict(cls: type[C], data: dict[str, Any]) -> C:
    """Rebuilds a config dataclass from ``config_to_dict``'s output; unknown keys raise ``ValueError``."""
    names = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown fields {unknown}")
    values = {}
    for name, value in data.items():
        hint = _field_type(cls, names[name])
        values[name] = config_from_dict(hint, value) if dataclasses.is_dataclass(hint) else value
    return cls(**values)


def dumps(config: Any) -> str:
    """Canonical JSON of a config (sorted keys), as written beside checkpoints."""
    return json.dumps(config_to_dict(config), sort_keys=True, indent=2)


__all__ = ["TrainConfig", "parse_bool", "module_summary", "add_dataclass_arguments", "dataclass_from_args", "config_to_dict", "config_from_dict",
           "dumps"]
