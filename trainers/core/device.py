"""Where the trainers, agents and evaluations run: the device and numeric precision of a run, resolved in one place.

Every trainer's config has two fields (``TrainConfig`` and the configs of the trainers with loops of their own),
which ``rlds-lang train`` shows as options; ``rlds-lang eval`` and ``rlds-lang results`` have the same two options:

- ``--device``: ``auto`` (CUDA when this machine has it, else the CPU), ``cpu``, ``cuda`` (``cuda:LOCAL_RANK``
  under ``torchrun``, else ``cuda:0``) or ``cuda:N``. A CUDA device asked for and absent is an error naming it.
- ``--precision``: ``auto`` (``fp32`` unless a command chose otherwise), ``fp32`` (float32 throughout, matmuls
  in full float32 on CUDA too: the setting whose losses match the CPU's), ``tf32`` (CUDA only: float32 weights
  and activations, matmuls in TF32) or ``bf16`` (autocast: matmuls in bfloat16, weights, optimizer state and
  the losses' reductions in float32; TF32 for the float32 matmuls left). ``bf16`` is allowed on the CPU too,
  where torch's CPU autocast runs it (tested there, usually slower than ``fp32`` on CPUs without bfloat16
  units); ``tf32`` is a CUDA matmul mode and refused on the CPU.

``placement_of(config)`` (or ``placement(device, precision)``) resolves the two into a ``Placement``: the
``torch.device`` every tensor of the run lives on, ``autocast()`` for forward passes and ``move(batch)`` for
batches read on the CPU. Models are built on the CPU (so that a seed gives the same initial weights on every
device) and then moved. A command that runs several trainers or loads agents (``rlds-lang results``, ``eval``,
MALT's rounds, online %BC) chooses for all of them with ``chosen(device, precision)``: inside it ``auto``
means that choice. ``torchrun`` jobs use NCCL between CUDA processes and gloo on the CPU
(``distributed_backend``).

Example::

    from trainers.core.device import placement

    place = placement("auto", "fp32")          # CUDA when present
    batch = place.move({"input_ids": ids})     # on place.device
    with place.autocast():
        loss = model(batch).loss
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Any, Iterator, Mapping

import torch

from trainers.core.device_options import (
    DEVICE_FORMS,
    DEVICE_HELP,
    PRECISION_HELP,
    PRECISIONS,
    RUNTIME_FIELDS,
    add_device_arguments,
)


#: the choices of the enclosing ``chosen`` blocks, innermost last: what ``auto`` means.
_CHOSEN: list[tuple[str, str]] = []


class DeviceError(ValueError):
    """A device or precision that cannot be used here (absent, malformed, or not for this device)."""


def _cuda_count() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _chosen_device() -> str:
    return next((device for device, _ in reversed(_CHOSEN) if device != "auto"), "auto")


def _chosen_precision() -> str:
    return next((precision for _, precision in reversed(_CHOSEN) if precision != "auto"), "auto")


def resolve_device(spec: str | torch.device | None = "auto") -> torch.device:
    """The ``torch.device`` of a ``--device`` value (``DEVICE_FORMS``; a ``torch.device`` is taken as it is, after
    the CUDA checks). ``auto`` (or None) is the enclosing ``chosen`` block's device, else CUDA when present.

    >>> resolve_device("cpu")
    device(type='cpu')
    """
    if isinstance(spec, torch.device):
        return _checked_cuda(spec, str(spec)) if spec.type == "cuda" else spec
    text = "auto" if spec is None else str(spec).strip().lower()
    if text == "auto":
        inherited = _chosen_device()
        if inherited != "auto":
            return resolve_device(inherited)
        return resolve_device("cuda") if _cuda_count() else torch.device("cpu")
    if text == "cpu":
        return torch.device("cpu")
    kind, sep, index = text.partition(":")
    if kind != "cuda" or (sep and not index.isdigit()):
        raise DeviceError(f"--device {spec!r}: expected {DEVICE_FORMS}")
    if sep:
        return _checked_cuda(torch.device("cuda", int(index)), text)
    local = int(os.environ.get("LOCAL_RANK", "0")) if int(os.environ.get("WORLD_SIZE", "1")) > 1 else 0
    return _checked_cuda(torch.device("cuda", local), text)


def _checked_cuda(device: torch.device, asked: str) -> torch.device:
    """``device`` when this machine has it; a ``DeviceError`` naming what was asked for otherwise."""
    count = _cuda_count()
    if count == 0:
        raise DeviceError(f"--device {asked}: this machine has no CUDA device (torch.cuda.is_available() is False)")
    index = 0 if device.index is None else device.index
    if index >= count:
        raise DeviceError(f"--device {asked}: this machine has {count} CUDA device(s), cuda:0 to cuda:{count - 1}")
    return torch.device("cuda", index)


def resolve_precision(spec: str | None, device: torch.device) -> str:
    """The precision (``fp32``, ``tf32`` or ``bf16``) of a ``--precision`` value on ``device``: ``auto`` (or
    None) is the enclosing ``chosen`` block's, else ``fp32``; ``tf32`` off CUDA is an error."""
    text = "auto" if spec is None else str(spec).strip().lower()
    if text not in PRECISIONS:
        raise DeviceError(f"--precision {spec!r}: expected one of {', '.join(PRECISIONS)}")
    if text == "auto":
        text = _chosen_precision()
        text = "fp32" if text == "auto" else text
    if text == "tf32" and device.type != "cuda":
        raise DeviceError(f"--precision tf32 is a CUDA matmul mode; on {device.type} use fp32 or bf16")
    return text


@dataclasses.dataclass(frozen=True)
class Placement:
    """A run's device and precision (``placement``): where its tensors live and how its forward passes compute."""

    device: torch.device
    precision: str = "fp32"

    def autocast(self) -> contextlib.AbstractContextManager:
        """The context of forward passes: bfloat16 autocast with ``bf16``, nothing otherwise."""
        if self.precision == "bf16":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def move(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        """``batch`` with every tensor on the device (the same tensors when they are there already)."""
        return {key: value.to(self.device, non_blocking=True) if isinstance(value, torch.Tensor) else value
                for key, value in batch.items()}

    def facts(self) -> dict[str, str]:
        """What a run's ``config.json`` records of where it computed: the resolved device and precision."""
        return {"device": str(self.device), "precision": self.precision}


def placement(device: str | torch.device | None = "auto", precision: str | None = "auto") -> Placement:
    """The ``Placement`` of a ``--device`` and ``--precision`` (see the module); on CUDA it also sets whether float32
    matmuls may use TF32 (only with ``tf32`` and ``bf16``)."""
    resolved = resolve_device(device)
    mode = resolve_precision(precision, resolved)
    if resolved.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = mode != "fp32"
        torch.backends.cudnn.allow_tf32 = mode != "fp32"
    return Placement(resolved, mode)


def placement_of(config: Any) -> Placement:
    """The ``Placement`` of a config's ``device`` and ``precision`` fields (``auto`` where it has none)."""
    return placement(getattr(config, "device", "auto"), getattr(config, "precision", "auto"))


@contextlib.contextmanager
def chosen(device: str | None = "auto", precision: str | None = "auto") -> Iterator[None]:
    """Within the block, ``auto`` means ``device`` and ``precision`` (``auto`` itself keeps the outer choice).

    The values are checked on entry, so a device that is absent is an error before any work starts."""
    if not isinstance(device, torch.device):
        placement(device, precision)  # checked now: an absent device fails before any work
    _CHOSEN.append((str(device or "auto"), str(precision or "auto")))
    try:
        yield
    finally:
        _CHOSEN.pop()


def module_device(module: torch.nn.Module) -> torch.device:
    """The device of a module's first parameter (or buffer); the CPU for a module that has neither."""
    for tensor in module.parameters():
        return tensor.device
    for tensor in module.buffers():
        return tensor.device
    return torch.device("cpu")


def distributed_backend(device: torch.device) -> str:
    """The ``torch.distributed`` backend of processes computing on ``device``: NCCL on CUDA, gloo otherwise."""
    return "nccl" if device.type == "cuda" else "gloo"


def ddp_device_ids(device: torch.device) -> list[int] | None:
    """``DistributedDataParallel``'s ``device_ids`` for a module on ``device`` (its CUDA index; None on the CPU)."""
    return [device.index] if device.type == "cuda" else None


def numbers(values: list[Any]) -> list[float]:
    """Python floats of scalar tensors (or numbers) with one device synchronisation for all of them (``float`` of
    each would wait for the device once per value); each is the value ``float(value)`` gives."""
    tensors = [value for value in values if isinstance(value, torch.Tensor)]
    if not tensors:
        return [float(value) for value in values]
    device = tensors[0].device
    stacked = torch.stack([value.detach().reshape(()).to(device=device, dtype=torch.float64)
                           if isinstance(value, torch.Tensor)
                           else torch.tensor(float(value), dtype=torch.float64, device=device)
                           for value in values]).tolist()
    return [float(value) for value in stacked]


__all__ = ["RUNTIME_FIELDS", "PRECISIONS", "DEVICE_FORMS", "DEVICE_HELP", "PRECISION_HELP", "DeviceError",
           "resolve_device", "resolve_precision", "Placement", "placement", "placement_of", "chosen",
           "module_device", "distributed_backend", "ddp_device_ids", "add_device_arguments", "numbers"]
