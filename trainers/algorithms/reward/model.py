"""Reward learning from preferences: an ensemble of per-step reward predictors trained on judgements of clip
pairs (Christiano, Leike, Brown, Martic, Legg, Amodei 2017, "Deep reinforcement learning from human
preferences", arXiv 1706.03741).

Each member ``m`` predicts a reward ``r_hat_m(o_t, a_t)`` for every step (``trainers.algorithms.reward.networks``: a small
transformer over the task's tokens for text, an MLP or a small conv net for arrays); a clip's predicted
return is the sum over its non-padded steps. Members are trained with the noisy Bradley-Terry loss
(``trainers.algorithms.reward.losses``), each on its own bootstrap of the labels, with an L2 coefficient tuned on the
validation loss (``trainers.algorithms.reward.trainer``). ``RewardModel`` is what the rest of the project calls: it
predicts per-step rewards of clips, normalised over a running window, and the ensemble's disagreement on
pairs (for the pair selector), and it saves to / loads from one checkpoint folder.

Where the defaults come from: an ensemble of 3 predictors, the 10% uniform-response rate, L2 kept so that
the validation loss is 1.1-1.5x the training loss, leaky ReLU 0.01, 64 hidden units and the conv shapes are
the paper's (section 2.2.3, appendix A); learning rate 2e-4 and 20% of labels for validation are in the
anchor implementation's ``params.py`` (mrahtz/learning-from-human-preferences, which validates every 5
mini-batches); validation every 10 optimizer steps (mini-batches), no dropout and no batch norm are the
defaults of its environment-wrapper version (HumanCompatibleAI's ``drlhp``: ``validation_interval=10``,
counted per mini-batch by its ``RewardPredictorEnsemble.train``). The pipeline's defaults and their units
are in ``rlds_lang.preferences.defaults``; the rest is marked "ours".

Checkpoint folder layout (``RewardModel.save``):

| file | what |
| --- | --- |
| ``config.json`` | ``{"kind": "reward_model", "config": {...}, "inputs": {...}, "state": {...}}`` |
| ``weights.pt`` | ``state_dict`` of the members (``nn.ModuleList``) |
| ``tokenizer.json`` | the tokenizer (text inputs only) |
| ``normalisation.npy`` | the normaliser's window of raw per-member step rewards ``[steps, members]`` |

Example::

    from trainers.algorithms.reward.model import RewardModel

    model = RewardModel.load("runs/reward/checkpoint")
    rewards = model.predict(clips)                  # one array of per-step rewards per clip (0 on padding)
    spread = model.disagreement([(a, b), (c, d)])   # std over members of P(left > right), per pair
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch
from torch import nn

from trainers.algorithms.reward.losses import RewardNormalizer
from trainers.algorithms.reward.networks import (
    StepInputs,
    build_predictor,
    clip_returns,
    encode_steps,
)
from trainers.core.checkpoint import load_state_file
from trainers.core.device import Placement, module_device, resolve_device
from trainers.algorithms.reward.config import RewardModelConfig

CHECKPOINT_KIND = "reward_model"
#: the folder of a checkpoint whose text trunk came from a pretrained LM: that LM's ``config.json`` (resized).
PRETRAINED_ARCHITECTURE = "lm"
#: the file of a training checkpoint that holds what exact resumption needs beside the weights.
TRAINER_STATE = "trainer_state.pt"


def eval_mode(module: nn.Module):
    """Context manager: ``module`` in eval mode without gradients, its previous mode restored afterwards."""
    import contextlib

    @contextlib.contextmanager
    def manager():
        was_training = module.training
        module.eval()
        try:
            with torch.no_grad():
                yield module
        finally:
            module.train(was_training)
    return manager()


class RewardModel:
    """A trained ensemble that predicts per-step rewards of clips (what the preference wrapper and PPO call).

    Attributes:
      members: the ensemble (``nn.ModuleList`` of per-step predictors).
      inputs: what a step looks like (``StepInputs``).
      tokenizer: the text tokenizer (None for array inputs).
      config: the ``RewardModelConfig`` it was trained with.
      normalizer: the running-window ``RewardNormalizer``.
      state: training state saved with it (step, L2 coefficients, last metrics).
    """

    def __init__(self, members: nn.ModuleList, inputs: StepInputs, tokenizer, config: RewardModelConfig,
                 normalizer: RewardNormalizer | None = None, state: dict[str, Any] | None = None):
        self.members = members
        self.inputs = inputs
        self.tokenizer = tokenizer
        self.config = config
        self.normalizer = normalizer or RewardNormalizer(config.normalisation_window)
        self.state = state if state is not None else {}

    @property
    def device(self) -> torch.device:
        """Where the members are (``to`` moves them)."""
        return module_device(self.members)

    def to(self, device: str | torch.device | None) -> "RewardModel":
        """Moves the members to ``device`` (``trainers.core.device.resolve_device``; None: ``auto``); returns self."""
        self.members.to(resolve_device(device))
        return self

    def encode(self, clips: Sequence[Any]) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """The members' inputs for the non-padded steps of ``clips`` and each step's clip index, on their device."""
        steps, owner = encode_steps(clips, self.inputs, self.tokenizer, self.config.max_tokens)
        place = Placement(self.device)
        return place.move(steps), owner.to(place.device)

    def member_step_rewards(self, clips: Sequence[Any]) -> tuple[torch.Tensor, torch.Tensor]:
        """Raw rewards ``[non-padded steps, members]`` (eval mode, no gradient) and each step's clip index."""
        steps, owner = self.encode(clips)
        if not len(owner):
            return torch.zeros((0, len(self.members)), device=owner.device), owner
        with eval_mode(self.members):
            rewards = torch.stack([member(steps) for member in self.members], dim=1)
        return rewards, owner

    def member_returns(self, clips: Sequence[Any]) -> np.ndarray:
        """Raw predicted returns ``[clips, members]``: each member's sum of rewards over non-padded steps."""
        rewards, owner = self.member_step_rewards(clips)
        return np.stack([clip_returns(rewards[:, m], owner, len(clips)).cpu().numpy()
                         for m in range(len(self.members))], axis=1)

    def predict(self, clips: Sequence[Any], update_normalisation: bool = True) -> list[np.ndarray]:
        """Per-step normalised rewards of each clip (``len(clip)`` values, 0 on padded steps).

        With ``update_normalisation`` the clips' steps first join the normaliser's window of recent steps.
        """
        rewards, owner = self.member_step_rewards(clips)
        raw = rewards.cpu().numpy()
        if update_normalisation and len(raw):
            self.normalizer.observe(raw)
        normalised = self.normalizer.normalise(raw) if len(raw) else np.zeros(0)
        return scatter_steps(clips, normalised, owner)

    def returns(self, clips: Sequence[Any], update_normalisation: bool = False) -> np.ndarray:
        """Normalised predicted return of each clip (sum of ``predict``'s per-step rewards)."""
        return np.array([r.sum() for r in self.predict(clips, update_normalisation)], dtype=np.float64)

    def preference_probabilities(self, pairs: Sequence[tuple[Any, Any]]) -> np.ndarray:
        """``sigmoid(R_left - R_right)`` of every member, ``[pairs, members]`` (raw returns, no noise term)."""
        if not pairs:
            return np.zeros((0, len(self.members)))
        returns = self.member_returns([clip for pair in pairs for clip in pair])
        diff = returns[0::2] - returns[1::2]
        return 1.0 / (1.0 + np.exp(-diff))

    def disagreement(self, pairs: Sequence[tuple[Any, Any]]) -> np.ndarray:
        """The ensemble's disagreement on each pair: std over members of ``P(left > right)``, ``[pairs]``.

        The paper queries the pairs "for which the predictions have the highest variance across ensemble
        members" (section 2.2.4); the std orders pairs the same way.
        """
        return self.preference_probabilities(pairs).std(axis=1)

    def save(self, path: str | os.PathLike, trainer_state: dict[str, Any] | None = None) -> Path:
        """Writes the checkpoint folder ``path`` atomically (a temporary folder renamed over it), with
        ``trainer_state`` (what exact resumption needs: ``TRAINER_STATE``) inside it when given."""
        from trainers.core.config import config_to_dict
        from trainers.core.lora import merged_copy

        final = Path(path)
        tmp = final.with_name(final.name + ".tmp")
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        torch.save(merged_copy(self.members).state_dict(), tmp / "weights.pt")  # LoRA adapters merged: no peft to load
        np.save(tmp / "normalisation.npy", self.normalizer.state())
        if self.tokenizer is not None:
            self.tokenizer.save(tmp / "tokenizer.json")
        if self.config.model.pretrained and self.inputs.kind == "text":  # the trunk's architecture, for ``load``
            self.members[0].trunk.config.save_pretrained(tmp / PRETRAINED_ARCHITECTURE)
        description = {"kind": CHECKPOINT_KIND, "config": config_to_dict(self.config),
                       "inputs": self.inputs.to_dict(), "state": self.state}
        (tmp / "config.json").write_text(json.dumps(description, sort_keys=True, indent=2))
        if trainer_state is not None:
            torch.save(trainer_state, tmp / TRAINER_STATE)
        old = final.with_name(final.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        if final.exists():
            final.rename(old)                 # a reader between these renames retries; never sees a partial folder
        tmp.rename(final)
        if old.exists():
            shutil.rmtree(old)
        return final

    @classmethod
    def load(cls, path: str | os.PathLike, device: str | torch.device | None = None) -> "RewardModel":
        """The reward model saved in the checkpoint folder ``path``, on ``device`` (None: ``auto``) wherever it was
        trained; errors name the folder or the bad file."""
        from rlds_lang.tokenizers import load_tokenizer
        from trainers.core.config import config_from_dict

        path = Path(path)
        config_file = path / "config.json"
        if not config_file.is_file():
            raise FileNotFoundError(f"{path} is not a reward-model checkpoint: it has no config.json")
        try:
            description = json.loads(config_file.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ValueError(f"{config_file}: not valid JSON ({error})") from None
        if not isinstance(description, dict) or description.get("kind") != CHECKPOINT_KIND:
            kind = description.get("kind") if isinstance(description, dict) else None
            raise ValueError(f"{config_file}: field 'kind' is {kind!r}, expected {CHECKPOINT_KIND!r}")
        for field in ("config", "inputs"):
            if not isinstance(description.get(field), dict):
                raise ValueError(f"{config_file}: field {field!r} is missing or not an object")
        try:
            config = config_from_dict(RewardModelConfig, description["config"])
            inputs = StepInputs.from_dict(description["inputs"])
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{config_file}: malformed 'config' / 'inputs' ({error!r})") from None
        needed = ["weights.pt", "normalisation.npy"] + (["tokenizer.json"] if inputs.kind == "text" else [])
        missing = [name for name in needed if not (path / name).is_file()]
        if missing:
            raise FileNotFoundError(f"{path}: reward-model checkpoint is missing {', '.join(missing)}")
        tokenizer = load_tokenizer(path / "tokenizer.json") if inputs.kind == "text" else None
        architecture = None
        if config.model.pretrained and inputs.kind == "text":  # its weights are weights.pt: no need of its folder
            from trainers.core.pretrained import pretrained_architecture

            architecture = lambda: pretrained_architecture(path / PRETRAINED_ARCHITECTURE)  # noqa: E731
        members = build_members(inputs, config, tokenizer, architecture)
        try:
            members.load_state_dict(load_state_file(path / "weights.pt"))
        except Exception as error:  # unpickling or shape errors: say which file
            raise ValueError(f"{path / 'weights.pt'}: cannot load the members' weights ({error})") from None
        members.to(resolve_device(device)).eval()
        normalizer = RewardNormalizer(config.normalisation_window)
        try:
            normalizer.load_state(np.load(path / "normalisation.npy"))
        except (ValueError, OSError) as error:
            raise ValueError(f"{path / 'normalisation.npy'}: cannot read the normaliser's window ({error})") from None
        return cls(members, inputs, tokenizer, config, normalizer, description.get("state", {}))


def checkpoint_folder(path: str | os.PathLike) -> Path:
    """The reward-model checkpoint folder of ``path``: ``path/checkpoint`` for a training run's output, else
    ``path`` (which must then hold ``config.json``)."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"reward model {path}: no such folder (train one with `rlds-lang train reward --out "
                                f"{path}`)")
    if (path / "checkpoint" / "config.json").is_file():
        return path / "checkpoint"
    if (path / "config.json").is_file():
        return path
    raise FileNotFoundError(f"reward model {path}: neither {path / 'checkpoint' / 'config.json'} nor "
                            f"{path / 'config.json'} exists (is it the --out folder of `rlds-lang train reward`?)")


def scatter_steps(clips: Sequence[Any], values: np.ndarray, owner: torch.Tensor) -> list[np.ndarray]:
    """Per-clip arrays (``len(clip)`` values, 0 on padded steps) of ``values`` given for the non-padded steps in
    ``encode`` order (``owner``: each step's clip index)."""
    out = [np.zeros(len(clip), np.float32) for clip in clips]
    cursor = {i: [t for t, pad in enumerate(clip.padding) if not pad] for i, clip in enumerate(clips)}
    seen = {i: 0 for i in range(len(clips))}
    for value, index in zip(values, owner.tolist()):
        out[index][cursor[index][seen[index]]] = value
        seen[index] += 1
    return out


def build_members(inputs: StepInputs, config: RewardModelConfig, tokenizer=None,
                  architecture: Callable[[], nn.Module] | None = None) -> nn.ModuleList:
    """``config.members`` freshly initialised predictors for ``inputs`` (member ``m`` seeded ``seed + m``);
    ``architecture`` builds each text member's LM (default: from ``config.model``)."""
    members = []
    for m in range(config.members):
        torch.manual_seed(config.seed + m)
        members.append(build_predictor(inputs, config, tokenizer, architecture() if architecture else None))
    return nn.ModuleList(members)


__all__ = ["RewardModelConfig", "RewardModel", "build_members", "checkpoint_folder", "eval_mode", "scatter_steps", "CHECKPOINT_KIND",
           "PRETRAINED_ARCHITECTURE", "TRAINER_STATE"]
