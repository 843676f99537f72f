"""Checkpoints: one folder that both resumes training exactly and loads a trained agent for evaluation.

Layout of ``<out>/checkpoint/``:

| file | what |
| --- | --- |
| ``lm/`` | the causal LM, ``save_pretrained`` format (loads with ``ModelConfig(checkpoint=...)`` or transformers; spelled embeddings are saved as the plain table they sum to, LoRA adapters merged into the weights they adapt) |
| ``model.pt`` | ``state_dict`` of the whole trained module (LM + value heads + target heads, and ILQL's target trunk when it has one; LoRA adapters merged as in ``lm/``) |
| ``trainer_state.pt`` | optimizer, scheduler, step, torch RNG state (what exact resumption needs), training seconds so far |
| ``config.json`` | ``{"algorithm": "bc" or "ilql", "config": {...}, "command": "rlds-lang ..."}`` (``command``: the one that saved it, when a command line did) |
| ``tokenizer.json`` | the tokenizer |
| ``data_state/`` | the training data stream's position (``transforms.torch_bridge.ResumableBatches``), so a resumed run does not replay the stream; absent under ``torchrun`` and in checkpoints from before it existed |

A checkpoint is written into a temporary folder and renamed over the previous one, so a run killed while
saving keeps its last complete checkpoint.

Example::

    from trainers.algorithms.registry import load_agent_model

    loaded = load_agent_model("runs/ilql/checkpoint")
    print(loaded.algorithm, loaded.step, loaded.tokenizer.vocab_size)
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

CHECKPOINT = "checkpoint"
#: the checkpoint's sub-folder holding the data stream's position (``save_checkpoint``'s ``data_state``).
DATA_STATE = "data_state"


@dataclasses.dataclass
class LoadedModel:
    """A trained module back from a checkpoint, ready to act (``eval()`` mode, no gradients)."""

    algorithm: str
    config: Any
    model: nn.Module
    tokenizer: Any
    step: int

    @property
    def lm(self) -> nn.Module:
        """The causal LM (the behaviour policy's logits)."""
        return self.model.lm

    @property
    def heads(self) -> nn.Module | None:
        """ILQL's value heads, or None for BC."""
        return getattr(self.model, "heads", None)


def checkpoint_dir(out: str | os.PathLike) -> Path:
    """The checkpoint folder of a training output folder."""
    return Path(out) / CHECKPOINT


def built_from_checkpoint(config: Any, path: str | os.PathLike) -> Any:
    """``config`` to rebuild a checkpoint's module with: one trained from a pretrained model
    (``ModelConfig.pretrained``) starts from the checkpoint's own ``lm/`` folder (its architecture and resized
    embedding table), so the model it was fine-tuned from need not be at hand where the checkpoint is played."""
    model = getattr(config, "model", None)
    if model is None or not getattr(model, "pretrained", None):
        return config
    return dataclasses.replace(config, model=dataclasses.replace(model, pretrained=os.fspath(Path(path) / "lm"),
                                                                 lora_rank=0))  # adapters are merged into lm/


def save_checkpoint(out: str | os.PathLike, algorithm: str, config: Any, model: nn.Module, tokenizer: Any,
                    trainer_state: dict[str, Any], data_state: Callable[[Path], None] | None = None) -> Path:
    """Writes ``out/checkpoint`` atomically (temporary folder, then rename) and returns its path.

    ``data_state``, if given, writes the data stream's position into the folder it is passed
    (``checkpoint/DATA_STATE``; ``transforms.torch_bridge.ResumableBatches.save``), inside the same atomic
    write, so a resumed run finds the stream's position of exactly the step it resumes from."""
    from trainers.core.config import config_to_dict
    from trainers.core.lora import merged_copy
    from trainers.core.model import plain_language_model, transformers_progress_bars_off
    from trainers.core.provenance import running_command

    final = checkpoint_dir(out)
    tmp = final.with_name(CHECKPOINT + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    model = merged_copy(model)  # LoRA adapters folded into the weights: lm/ and model.pt load without peft
    with transformers_progress_bars_off():  # a bar of one shard per checkpoint, in every run's output otherwise
        plain_language_model(model.lm).save_pretrained(tmp / "lm")
    torch.save(model.state_dict(), tmp / "model.pt")
    torch.save(trainer_state, tmp / "trainer_state.pt")
    command = running_command()  # what saved it, when a command line did: a page can name it
    (tmp / "config.json").write_text(json.dumps({"algorithm": algorithm, "config": config_to_dict(config),
                                                 **({"command": command} if command else {})},
                                                sort_keys=True, indent=2))
    tokenizer.save(tmp / "tokenizer.json")
    if data_state is not None:
        data_state(tmp / DATA_STATE)
    old = final.with_name(CHECKPOINT + ".old")
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    if old.exists():
        shutil.rmtree(old)
    return final


#: the folder of a training output folder that holds the checkpoints kept by ``TrainConfig.keep_every``
SNAPSHOTS = "snapshots"


def keep_snapshot(out: str | os.PathLike, step: int) -> Path:
    """Copies the latest checkpoint of ``out`` (written at ``step``) to ``out/snapshots/step_<step>`` without the
    data stream's position (a loadable model whose ``checkpoint_step`` is ``step``); atomic like the latest."""
    final = Path(out) / SNAPSHOTS / f"step_{step}"
    tmp = final.with_name(final.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    shutil.copytree(checkpoint_dir(out), tmp, ignore=shutil.ignore_patterns(DATA_STATE))
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    return final


def snapshots(out: str | os.PathLike) -> list[tuple[int, Path]]:
    """The kept checkpoints of ``out`` (``keep_snapshot``) as ``(step, folder)``, by step."""
    root = Path(out) / SNAPSHOTS
    found = [(int(p.name.removeprefix("step_")), p) for p in root.glob("step_*")
             if p.is_dir() and p.name.removeprefix("step_").isdigit()]
    return sorted(found)


def _config_json(path: str | os.PathLike) -> dict[str, Any]:
    """A checkpoint folder's ``config.json``, read; a clear error when the folder is not a checkpoint."""
    path = Path(path)
    config_file = path / "config.json"
    if not config_file.is_file():
        raise FileNotFoundError(f"{path} is not a checkpoint folder: it has no config.json "
                                f"(give the 'checkpoint' folder inside a training output folder)")
    return json.loads(config_file.read_text())


def read_checkpoint_config(path: str | os.PathLike) -> tuple[str, dict[str, Any]]:
    """``(algorithm, config dict)`` of a checkpoint folder; a clear error when it is not one."""
    data = _config_json(path)
    return data["algorithm"], data["config"]


def saved_by(path: str | os.PathLike) -> str | None:
    """The ``rlds-lang`` command that saved a checkpoint folder (its ``config.json``'s ``command``), or None when it
    was saved from Python or before checkpoints recorded it; a clear error when the folder is not a checkpoint."""
    return _config_json(path).get("command")


def checkpoint_step(path: str | os.PathLike) -> int:
    """The optimizer step a checkpoint folder was saved at (its ``trainer_state.pt``); 0 when there is none."""
    state = Path(path) / "trainer_state.pt"
    return int(load_state_file(state, weights_only=False)["step"]) if state.exists() else 0


def trainer_state(optimizer, scheduler, step: int, train_seconds: float | None) -> dict[str, Any]:
    """What exact resumption needs, and the run's training seconds up to ``step`` (``TrainResult.total_seconds``).
    On a machine with CUDA the CUDA generators' states are kept too (dropout on the GPU draws from them)."""
    state = {"step": step, "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
             "torch_rng": torch.get_rng_state(), "train_seconds": train_seconds}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda_rng"] = torch.cuda.get_rng_state_all()
    return state


def load_state_file(path: str | os.PathLike, weights_only: bool = True) -> Any:
    """A ``torch.save`` file of a checkpoint read onto the CPU, wherever its tensors were when it was saved (a
    checkpoint written on a GPU loads on a machine without one); the caller moves what it needs."""
    return torch.load(path, map_location="cpu", weights_only=weights_only)


def load_trainer_state(config: Any, module: nn.Module) -> dict[str, Any] | None:
    """When ``config.resume`` and ``out/checkpoint`` holds a trainer state: loads the checkpoint's weights into
    ``module`` and returns that state (the step, the optimizer's, the schedule's, the RNG's and whatever the loop
    saved besides); None for a fresh run."""
    path = checkpoint_dir(config.out)
    if not (config.resume and (path / "trainer_state.pt").exists()):
        return None
    if getattr(getattr(config, "model", None), "lora_rank", 0):
        raise ValueError(f"{path}: a LoRA run (model.lora_rank={config.model.lora_rank}) does not resume: its "
                         f"checkpoint holds the adapters merged into the weights; start a new run from it with "
                         f"--model.pretrained {path / 'lm'}")
    module.load_state_dict(load_state_file(path / "model.pt"))
    return load_state_file(path / "trainer_state.pt", weights_only=False)


def restore_trainer_state(state: dict[str, Any], optimizer: Any, scheduler: Any) -> None:
    """Puts a saved trainer state back: the optimizer (its state moves to its parameters' device), the
    learning-rate schedule and torch's RNG (the CUDA generators' too when saved with as many devices as here)."""
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["torch_rng"])
    cuda_rng = state.get("cuda_rng")
    if cuda_rng is not None and torch.cuda.is_available() and len(cuda_rng) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(cuda_rng)


def resume_trainer(config: Any, module: nn.Module, optimizer: Any, scheduler: Any) -> tuple[int, float | None]:
    """Loads ``out/checkpoint`` into the module/optimizer/scheduler when resuming; returns the step and the
    training seconds recorded up to it (0 for a fresh run, None if the checkpoint predates that record)."""
    state = load_trainer_state(config, module)
    if state is None:
        return 0, 0.0
    restore_trainer_state(state, optimizer, scheduler)
    return int(state["step"]), state.get("train_seconds")


__all__ = ["SNAPSHOTS", "keep_snapshot", "snapshots", "load_trainer_state", "restore_trainer_state", "LoadedModel", "CHECKPOINT", "DATA_STATE", "checkpoint_dir", "built_from_checkpoint", "checkpoint_step", "save_checkpoint", "read_checkpoint_config", "saved_by", "trainer_state", "resume_trainer",
           "load_state_file"]
