"""Checks that the trainers keep their tensors on their configured device, on a machine without a GPU.

``forgotten_device()`` is a torch function mode under which a tensor made by ``trainers/`` code with a torch
factory (``torch.zeros``, ``torch.tensor``, ``torch.arange``, ``torch.rand``, ``torch.as_tensor``, ...) without an
explicit ``device=`` raises ``ForgottenDevice`` naming the file and line: such a tensor lands on torch's default
device (the CPU), not on the run's, and a GPU run fails there or, worse, silently computes on the CPU. Factories
called by torch or transformers themselves (a layer's parameters, made on the CPU while a module is built, then
moved with it), and calls inside a ``with torch.device(...)`` block (which gives them their device), pass. ``tensors_off(obj, device)`` lists every tensor reachable from a module or an agent (its
parameters, buffers, plain tensor attributes and the tensors of the objects it holds) that is not on ``device``.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any, Iterator

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors

import trainers

#: the code whose tensors must carry their device.
CHECKED = Path(trainers.__file__).resolve().parent
_CONSTRUCTORS = _device_constructors()


class ForgottenDevice(AssertionError):
    """A tensor made by the trainers without an explicit device."""


class _ForgottenDeviceMode(TorchFunctionMode):
    """Raises ``ForgottenDevice`` for a factory call of ``CHECKED`` code without ``device=``."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _CONSTRUCTORS and kwargs.get("device") is None:
            frame = sys._getframe(1)  # the code that called the factory (torch's own calls, e.g. a layer's
            # parameters made while a module is built on the CPU before it is moved, are not ours to check)
            if Path(frame.f_code.co_filename).resolve().is_relative_to(CHECKED):
                where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
                raise ForgottenDevice(f"torch.{func.__name__} without device= at {where}")
        return func(*args, **kwargs)


@contextlib.contextmanager
def forgotten_device() -> Iterator[None]:
    """Within the block, a factory call of ``trainers/`` code without ``device=`` raises ``ForgottenDevice``."""
    with _ForgottenDeviceMode():
        yield


def tensors_off(obj: Any, device: torch.device, path: str = "", seen: set[int] | None = None) -> list[str]:
    """The paths of the tensors reachable from ``obj`` (modules, dataclasses, plain objects of our packages,
    dicts, lists and tuples) that are not on ``device``."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        return [] if obj.device.type == device.type else [f"{path or 'tensor'} on {obj.device}"]
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    elif isinstance(obj, torch.nn.Module):
        items = [*obj.named_parameters(recurse=False), *obj.named_buffers(recurse=False),
                 *((k, v) for k, v in vars(obj).items() if not k.startswith("_")), *obj.named_children()]
    elif type(obj).__module__.split(".")[0] in ("trainers", "rlds_lang") and hasattr(obj, "__dict__"):
        items = vars(obj).items()
    else:
        return []
    found = []
    for key, value in items:
        found += tensors_off(value, device, f"{path}.{key}" if path else str(key), seen)
    return found


def eager_attention(module: torch.nn.Module) -> torch.nn.Module:
    """``module`` with every Hugging Face model in it set to eager attention (returned for chaining): the SDPA
    path asks whether the padding mask is all ones (``Tensor.item``), which ``meta`` tensors cannot answer."""
    for part in module.modules():
        config = getattr(part, "config", None)
        if config is not None and hasattr(config, "_attn_implementation"):
            config._attn_implementation = "eager"
    return module


__all__ = ["CHECKED", "ForgottenDevice", "forgotten_device", "tensors_off", "eager_attention"]
