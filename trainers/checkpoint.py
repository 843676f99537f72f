"""Checkpoints: one folder that both resumes training exactly and loads a trained agent for evaluation.

Layout of ``<out>/checkpoint/``:

| file | what |
| --- | --- |
| ``lm/`` | the causal LM, ``save_pretrained`` format (loads with ``ModelConfig(checkpoint=...)`` or transformers; spelled embeddings are saved as the plain table they sum to) |
| ``model.pt`` | ``state_dict`` of the whole trained module (LM + value heads + target heads) |
| ``trainer_state.pt`` | optimizer, scheduler, step, torch RNG state (what exact resumption needs), training seconds so far |
| ``config.json`` | ``{"algorithm": "bc" or "ilql", "config": {...}}`` |
| ``tokenizer.json`` | the tokenizer |
| ``data_state/`` | the training data stream's position (``transforms.torch_bridge.ResumableBatches``), so a resumed run does not replay the stream; absent under ``torchrun`` and in checkpoints from before it existed |

A checkpoint is written into a temporary folder and renamed over the previous one, so a run killed while
saving keeps its last complete checkpoint.

Example::

    from trainers.checkpoint import load_agent_model

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


def checkpoint_dir(out: str | os.PathLike) -> Path:
    """The checkpoint folder of a training output folder."""
    return Path(out) / CHECKPOINT


def save_checkpoint(out: str | os.PathLike, algorithm: str, config: Any, model: nn.Module, tokenizer: Any,
                    trainer_state: dict[str, Any], data_state: Callable[[Path], None] | None = None) -> Path:
    """Writes ``out/checkpoint`` atomically (temporary folder, then rename) and returns its path.

    ``data_state``, if given, writes the data stream's position into the folder it is passed
    (``checkpoint/DATA_STATE``; ``transforms.torch_bridge.ResumableBatches.save``), inside the same atomic
    write, so a resumed run finds the stream's position of exactly the step it resumes from."""
    from trainers.config import config_to_dict
    from trainers.model import plain_language_model

    final = checkpoint_dir(out)
    tmp = final.with_name(CHECKPOINT + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    plain_language_model(model.lm).save_pretrained(tmp / "lm")
    torch.save(model.state_dict(), tmp / "model.pt")
    torch.save(trainer_state, tmp / "trainer_state.pt")
    (tmp / "config.json").write_text(json.dumps({"algorithm": algorithm, "config": config_to_dict(config)},
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


def read_checkpoint_config(path: str | os.PathLike) -> tuple[str, dict[str, Any]]:
    """``(algorithm, config dict)`` of a checkpoint folder; a clear error when it is not one."""
    path = Path(path)
    config_file = path / "config.json"
    if not config_file.is_file():
        raise FileNotFoundError(f"{path} is not a checkpoint folder: it has no config.json "
                                f"(give the 'checkpoint' folder inside a training output folder)")
    data = json.loads(config_file.read_text())
    return data["algorithm"], data["config"]


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


def checkpoint_step(path: str | os.PathLike) -> int:
    """The optimizer step a checkpoint folder was saved at (its ``trainer_state.pt``); 0 when there is none."""
    state = Path(path) / "trainer_state.pt"
    return int(torch.load(state, map_location="cpu", weights_only=False)["step"]) if state.exists() else 0


def load_agent_model(path: str | os.PathLike) -> LoadedModel:
    """Rebuilds the trained module of a checkpoint folder (see the module docstring for the layout)."""
    from rlds_lang.tokenizers import load_tokenizer
    from trainers.algorithms import algorithm_by_name

    path = Path(path)
    algorithm, config_dict = read_checkpoint_config(path)
    spec = algorithm_by_name(algorithm)
    config = spec.config_from_dict(config_dict)
    tokenizer = load_tokenizer(path / "tokenizer.json")
    model = spec.model_class(config, tokenizer)
    model.load_state_dict(torch.load(path / "model.pt", map_location="cpu", weights_only=True))
    model.eval().requires_grad_(False)
    return LoadedModel(algorithm, config, model, tokenizer, checkpoint_step(path))


def load_policy(path: str | os.PathLike, allowed_actions: Any = None, name: str | None = None,
                beta: float | None = None, greedy: bool = False, temperature: float = 1.0, seed: int = 0,
                max_action_tokens: int = 16):
    """A checkpoint as a playing agent (``trainers.agents.LanguageModelPolicy``).

    ``beta`` defaults to the checkpoint's own (ILQL's ``config.beta``; BC has no value heads, so 0).
    ``allowed_actions``: a word list (name, ``WordList`` or sequence of words) to constrain decoding to.
    ``max_action_tokens``: longest free-text action (e.g. a Visual Dialogue question).
    """
    from rlds_lang.wordle.words import WordList, resolve_word_list
    from trainers.agents import LanguageModelPolicy

    loaded = load_agent_model(path)
    if beta is None:
        beta = float(getattr(loaded.config, "beta", 0.0)) if loaded.heads is not None else 0.0
    if isinstance(allowed_actions, (str, WordList)):
        allowed_actions = resolve_word_list(allowed_actions).words
    policy = LanguageModelPolicy(loaded.lm, loaded.tokenizer, heads=loaded.heads, beta=beta, temperature=temperature,
                                 greedy=greedy, allowed_actions=allowed_actions, name=name or loaded.algorithm,
                                 seed=seed, max_action_tokens=max_action_tokens)
    policy.info = {"checkpoint": str(path), "algorithm": loaded.algorithm, "step": loaded.step}
    return policy


__all__ = ["CHECKPOINT", "DATA_STATE", "checkpoint_dir", "checkpoint_step", "save_checkpoint", "read_checkpoint_config",
           "LoadedModel", "load_agent_model", "load_policy"]
