"""Per-step reward predictors ``r_hat(o, a)`` for the reward-model ensemble (``trainers.algorithms.reward.model``), and the
encoding of clips' steps into their inputs.

Three kinds of input, told apart by the clips' observations (``infer_inputs``):

- ``text`` (observations are str / bytes / ``{"text": ...}``): each step is the token sequence
  ``[BOS] o_t [EOO] a_t [EOA]`` of the task's tokenizer, read by a small causal transformer
  (``trainers.core.model.build_language_model``'s GPT-2 trunk); ``r_hat`` is a head on the last token's state.
- ``vector`` (flat numeric observations): observation and action concatenated, through the paper's MuJoCo
  predictor shape, hidden layers of 64 units with leaky ReLU (alpha 0.01) (arXiv 1706.03741, appendix A.1).
- ``image`` (observations of 2 or more dimensions, ``[H, W]`` or ``[H, W, C]``): the paper's Atari predictor
  shape (appendix A.2): 4 convolutions 7x7/3, 5x5/2, 3x3/1, 3x3/1 with 16 filters and leaky ReLU, then
  64 units and a scalar; here the convolutions are padded and pooled to a 4x4 grid (any image size works,
  positions survive), and the action joins before the 64-unit layer.

Every predictor ends in ``reward_head``: optional batch norm and dropout, the paper's two regularisers
besides L2. Only non-padded steps are encoded, so padding costs nothing and never adds reward.

Example::

    from trainers.algorithms.reward.networks import infer_inputs, encode_steps, build_predictor

    inputs = infer_inputs(clips)
    steps, owner = encode_steps(clips, inputs, tokenizer)   # tensors of the non-padded steps, their clip index
    net = build_predictor(inputs, config, tokenizer)
    rewards = net(steps)                                    # [number of non-padded steps]
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping, Sequence

import numpy as np
import torch
from torch import nn

#: leaky ReLU slope of the paper's predictors (appendix A).
LEAKY_SLOPE = 0.01


@dataclasses.dataclass(frozen=True)
class StepInputs:
    """What one step of a clip looks like to the predictor: ``kind`` and, for arrays, the shapes."""

    kind: str
    obs_shape: tuple[int, ...] = ()
    action_dim: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (saved in the checkpoint)."""
        return {"kind": self.kind, "obs_shape": list(self.obs_shape), "action_dim": self.action_dim}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "StepInputs":
        """The inverse of ``to_dict``."""
        return cls(str(data["kind"]), tuple(int(x) for x in data["obs_shape"]), int(data["action_dim"]))


def step_text(value: Any, where: str) -> str:
    """The text of a text observation or action: str, UTF-8 bytes, a 0-d array of them, or ``{"text": ...}``."""
    if isinstance(value, Mapping):
        if "text" not in value:
            raise ValueError(f"{where}: a dict observation needs a 'text' field, got keys {sorted(value)}")
        return step_text(value["text"], where)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str):
        return value
    raise ValueError(f"{where}: expected text, got {type(value).__name__}")


def _is_text(value: Any) -> bool:
    if isinstance(value, Mapping):
        return "text" in value
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "USO" and value.ndim == 0
    return isinstance(value, (str, bytes))


def _array(value: Any, where: str) -> np.ndarray:
    try:
        return np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: expected a numeric array, got {type(value).__name__} ({error})") from None


def infer_inputs(clips: Sequence[Any]) -> StepInputs:
    """The ``StepInputs`` of clips, from their first step (all steps must then look alike)."""
    if not clips or not len(clips[0]):
        raise ValueError("cannot tell the input kind from no clips (or an empty clip)")
    clip = clips[0]
    observation, action = clip.observations[0], clip.actions[0]
    if _is_text(observation):
        return StepInputs("text")
    obs = _array(observation, f"clip {clip.clip_id} step 0 observation")
    action_dim = int(_array(action, f"clip {clip.clip_id} step 0 action").size)
    if obs.ndim >= 2:
        return StepInputs("image", tuple(obs.shape), action_dim)
    return StepInputs("vector", (int(obs.size),), action_dim)


def _step_tokens(observation: Any, action: Any, tokenizer, max_tokens: int, where: str) -> list[int]:
    ids = ([tokenizer.bos_id] + tokenizer.encode(step_text(observation, where + " observation"), strict=False)
           + [tokenizer.eoo_id] + tokenizer.encode(step_text(action, where + " action"), strict=False)
           + [tokenizer.eoa_id])
    return ids[-max_tokens:]


def encode_steps(clips: Sequence[Any], inputs: StepInputs, tokenizer=None,
                 max_tokens: int = 64) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """The non-padded steps of ``clips`` as predictor inputs, and for each step the index of its clip.

    Text: ``{"input_ids", "attention_mask"}`` ``[steps, tokens]`` (right-padded; long steps keep their last
    ``max_tokens`` tokens, so the final ``[EOA]`` stays). Vector: ``{"features"}`` ``[steps, obs + action]``.
    Image: ``{"images"}`` ``[steps, C, H, W]`` and ``{"actions"}`` ``[steps, action_dim]``.
    """
    owner: list[int] = []
    rows: list[Any] = []
    for index, clip in enumerate(clips):
        for t, (observation, action, pad) in enumerate(zip(clip.observations, clip.actions, clip.padding)):
            if pad:
                continue
            where = f"clip {clip.clip_id} step {t}"
            owner.append(index)
            if inputs.kind == "text":
                rows.append(_step_tokens(observation, action, tokenizer, max_tokens, where))
            else:
                obs, act = _array(observation, where + " observation"), _array(action, where + " action").ravel()
                if obs.size != int(np.prod(inputs.obs_shape)) or act.size != inputs.action_dim:
                    raise ValueError(f"{where}: observation shape {obs.shape} / action size {act.size}, the model "
                                     f"expects {inputs.obs_shape} / {inputs.action_dim}")
                rows.append((obs, act))
    return _collate(rows, inputs, tokenizer), torch.tensor(owner, dtype=torch.long, device="cpu")


def _collate(rows: list[Any], inputs: StepInputs, tokenizer) -> dict[str, torch.Tensor]:
    if inputs.kind == "text":
        width = max((len(r) for r in rows), default=1)
        ids = torch.full((len(rows), width), tokenizer.pad_id if tokenizer else 0, dtype=torch.long, device="cpu")
        mask = torch.zeros((len(rows), width), dtype=torch.long, device="cpu")
        for i, row in enumerate(rows):
            ids[i, :len(row)] = torch.tensor(row, device="cpu")
            mask[i, :len(row)] = 1
        return {"input_ids": ids, "attention_mask": mask}
    actions = (torch.from_numpy(np.stack([a for _, a in rows])) if rows
               else torch.zeros((0, inputs.action_dim), device="cpu"))
    if inputs.kind == "vector":
        obs = (torch.from_numpy(np.stack([o.ravel() for o, _ in rows])) if rows
               else torch.zeros((0,) + inputs.obs_shape, device="cpu"))
        return {"features": torch.cat([obs, actions], dim=1)}
    shape = _channels_first(inputs.obs_shape)
    images = (torch.from_numpy(np.stack([o.reshape(inputs.obs_shape) for o, _ in rows])) if rows
              else torch.zeros((0,) + tuple(inputs.obs_shape), device="cpu"))
    images = images.unsqueeze(1) if len(shape) == 3 and len(inputs.obs_shape) == 2 else images.permute(0, 3, 1, 2)
    return {"images": images, "actions": actions}


def _channels_first(obs_shape: tuple[int, ...]) -> tuple[int, int, int]:
    """``[H, W]`` -> ``(1, H, W)``; ``[H, W, C]`` -> ``(C, H, W)``."""
    if len(obs_shape) == 2:
        return (1,) + tuple(obs_shape)
    if len(obs_shape) == 3:
        return (obs_shape[2], obs_shape[0], obs_shape[1])
    raise ValueError(f"image observations must be [H, W] or [H, W, C], got shape {obs_shape}")


def reward_head(in_dim: int, hidden: int, dropout: float, batch_norm: bool) -> nn.Sequential:
    """``Linear(in, hidden) -> [BatchNorm] -> LeakyReLU -> [Dropout] -> Linear(hidden, 1)``.

    >>> reward_head(4, 8, 0.1, True)(torch.zeros(3, 4)).shape
    torch.Size([3, 1])
    """
    layers: list[nn.Module] = [nn.Linear(in_dim, hidden)]
    if batch_norm:
        layers.append(nn.BatchNorm1d(hidden))
    layers.append(nn.LeakyReLU(LEAKY_SLOPE))
    if dropout:
        layers.append(nn.Dropout(dropout))
    layers.append(nn.Linear(hidden, 1))
    return nn.Sequential(*layers)


#: heads of a text step's last token: the anchor's MLP (``reward_head``), or the lm-human-preferences
#: recipe's single linear layer initialised ``N(0, 1/sqrt(d + 1))`` (``ppo_losses.reward_head_init_``).
TEXT_HEADS = ("mlp", "linear")


class TextStepReward(nn.Module):
    """``r_hat`` of a text step: a causal LM's trunk (a small GPT-2, or a pretrained LM's body with
    ``model_config.pretrained``) over ``[BOS] o [EOO] a [EOA]``, a head on the last token. ``lm``: the LM whose
    body becomes the trunk (default: ``language_model_for(model_config, tokenizer)``)."""

    def __init__(self, model_config, tokenizer, hidden: int, dropout: float, batch_norm: bool, head: str = "mlp",
                 lm: nn.Module | None = None):
        super().__init__()
        from trainers.core.model import hidden_size, language_model_for

        if head not in TEXT_HEADS:
            raise ValueError(f"head must be one of {TEXT_HEADS}, got {head!r}")
        lm = language_model_for(model_config, tokenizer) if lm is None else lm
        self.trunk = lm.base_model  # the body of any causal LM (GPT-2's .transformer, a Llama's .model)
        width = hidden_size(lm)
        self.head = reward_head(width, hidden, dropout, batch_norm) if head == "mlp" else \
            reward_head_init_(nn.Linear(width, 1))

    def forward(self, steps: dict[str, torch.Tensor]) -> torch.Tensor:
        """Rewards ``[steps]`` of a text batch from ``encode_steps``."""
        mask = steps["attention_mask"]
        hidden = self.trunk(input_ids=steps["input_ids"], attention_mask=mask).last_hidden_state
        last = (mask.sum(1) - 1).clamp(min=0)
        return self.head(hidden[torch.arange(len(last), device=last.device), last]).squeeze(-1)


class VectorStepReward(nn.Module):
    """``r_hat`` of a numeric step: ``[observation, action]`` through ``layers`` leaky-ReLU layers and the head."""

    def __init__(self, in_dim: int, hidden: int, layers: int, dropout: float, batch_norm: bool):
        super().__init__()
        body: list[nn.Module] = []
        for _ in range(max(layers - 1, 0)):
            body += [nn.Linear(in_dim, hidden), nn.LeakyReLU(LEAKY_SLOPE)]
            in_dim = hidden
        self.body = nn.Sequential(*body)
        self.head = reward_head(in_dim, hidden, dropout, batch_norm)

    def forward(self, steps: dict[str, torch.Tensor]) -> torch.Tensor:
        """Rewards ``[steps]`` of a vector batch from ``encode_steps``."""
        return self.head(self.body(steps["features"])).squeeze(-1)


class ImageStepReward(nn.Module):
    """``r_hat`` of an image step: the paper's Atari convolutions (padded, pooled), the action, the head."""

    KERNELS = ((7, 3), (5, 2), (3, 1), (3, 1))
    #: the feature maps are pooled to this grid (keeping where things are) before the 64-unit layer.
    GRID = 4

    def __init__(self, channels: int, action_dim: int, filters: int, hidden: int, dropout: float, batch_norm: bool):
        super().__init__()
        layers: list[nn.Module] = []
        for kernel, stride in self.KERNELS:
            layers.append(nn.Conv2d(channels, filters, kernel, stride, padding=kernel // 2))
            if batch_norm:
                layers.append(nn.BatchNorm2d(filters))
            layers.append(nn.LeakyReLU(LEAKY_SLOPE))
            if dropout:
                layers.append(nn.Dropout(dropout))
            channels = filters
        layers += [nn.AdaptiveAvgPool2d(self.GRID), nn.Flatten()]
        self.convolutions = nn.Sequential(*layers)
        self.head = reward_head(filters * self.GRID ** 2 + action_dim, hidden, dropout, batch_norm)

    def forward(self, steps: dict[str, torch.Tensor]) -> torch.Tensor:
        """Rewards ``[steps]`` of an image batch from ``encode_steps``."""
        features = self.convolutions(steps["images"])
        return self.head(torch.cat([features, steps["actions"]], dim=1)).squeeze(-1)


def build_predictor(inputs: StepInputs, config, tokenizer=None, lm: nn.Module | None = None) -> nn.Module:
    """One ensemble member for ``inputs``, sized by a ``RewardModelConfig`` (``lm``: a text member's LM, see
    ``TextStepReward``)."""
    if inputs.kind == "text":
        return TextStepReward(config.model, tokenizer, config.hidden, config.dropout, config.batch_norm,
                              getattr(config, "head", "mlp"), lm)
    if inputs.kind == "vector":
        return VectorStepReward(inputs.obs_shape[0] + inputs.action_dim, config.hidden, config.layers,
                                config.dropout, config.batch_norm)
    if inputs.kind == "image":
        return ImageStepReward(_channels_first(inputs.obs_shape)[0], inputs.action_dim, config.filters,
                               config.hidden, config.dropout, config.batch_norm)
    raise ValueError(f"unknown input kind {inputs.kind!r} (text, vector, image)")


def clip_returns(step_rewards: torch.Tensor, owner: torch.Tensor, n_clips: int) -> torch.Tensor:
    """Per-clip sums ``[n_clips]`` of per-step rewards (``owner[i]`` = clip of step ``i``).

    >>> clip_returns(torch.tensor([1.0, 2.0, 5.0]), torch.tensor([0, 0, 2]), 3).tolist()
    [3.0, 0.0, 5.0]
    """
    return torch.zeros(n_clips, dtype=step_rewards.dtype, device=step_rewards.device).index_add(0, owner, step_rewards)


def reward_head_init_(linear: torch.nn.Linear) -> torch.nn.Linear:
    """The recipe's reward-head initialisation: weights ``N(0, 1/sqrt(d + 1))`` for input size ``d``, bias 0."""
    with torch.no_grad():
        linear.weight.normal_(0.0, 1.0 / math.sqrt(linear.in_features + 1))
        if linear.bias is not None:
            linear.bias.zero_()
    return linear


__all__ = ["TEXT_HEADS", "StepInputs", "step_text", "infer_inputs", "encode_steps", "reward_head", "TextStepReward", "VectorStepReward", "ImageStepReward", "build_predictor", "clip_returns", "LEAKY_SLOPE", "reward_head_init_"]
