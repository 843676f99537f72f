"""A trained reward model (``trainers.algorithms.reward.model.RewardModel``) as PPO's reward source.

The reward model predicts a reward ``r_hat_m(o_t, a_t)`` for every step of a clip from each member ``m``:
the observation an action was taken from and the action. A PPO turn (``trainers.algorithms.ppo.rewards.Turn``) is exactly
such a step: its last observation ``o_t`` and its response ``a_t``. ``RewardModelScorer.score_turns`` scores
each turn as a one-step clip, so PPO's return-to-go of a turn is the learned return of the rest of the game.

The score of a step is ``mean_m(r_hat_m / s_m)``, ``s_m`` the standard deviation of member ``m``'s raw rewards
over the normaliser's saved window (a gain only, as the recipe's reward normalisation scales the reward to
unit size). The normaliser's *bias* (``RewardModel.predict`` subtracts each member's window mean from every
step) is deliberately left out: in a multi-turn game it adds ``bias x number of turns`` to a game's return,
which reorders games of different lengths (Wordle games last 1 to 6 turns; ``docs/ppo.md`` result 2
measures how often each version ranks fresh games like their true returns). A game's gain-only return
orders games as a weighted mean of the members' raw returns, the quantity they were trained on. Scoring
never moves the window, so the scores are a fixed function of the checkpoint and a reloaded model scores
identically. A gain saved beside the model (``GAIN_FILE``, fit by ``fit_gain`` so that the games of the policy
PPO starts from have learned returns of standard deviation 1, the recipe's normalisation before PPO)
multiplies every score.

Example::

    from trainers.algorithms.reward.scorer import load_reward_model

    scorer = load_reward_model("runs/reward")          # the --out folder of `rlds-lang train reward`
    rewards = scorer.score_turns(turns)                # one float per trainers.algorithms.ppo.rewards.Turn
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rlds_lang.preferences.types import Clip
from trainers.algorithms.reward.model import RewardModel, checkpoint_folder

#: optional file beside a reward model (the ``--out`` folder of ``rlds-lang train reward``) holding the gain
#: PPO's scores are multiplied by (``fit_gain``); without it the gain is 1.
GAIN_FILE = "ppo_gain.json"


def turn_clip(turn: Any, index: int) -> Clip:
    """The one-step clip ``(o_t, a_t)`` of a PPO turn: its last observation and its response (true reward 0)."""
    observation = turn.observations[-1] if turn.observations else ""
    name = f"turn-{index}"
    return Clip(f"{name}:0", name, 0, 1, [observation], [turn.response], [0.0], [False])


class RewardModelScorer:
    """A turn scorer (``trainers.algorithms.ppo.rewards``) backed by a reward-model ensemble; ``model`` is the ensemble."""

    def __init__(self, model: Any, gain: float = 1.0, chunk: int = 512):
        self.model = model
        self.gain = float(gain)
        self.chunk = int(chunk)

    def scales(self) -> np.ndarray:
        """``s_m``: each member's standard deviation of raw step rewards over the saved window (1 if none)."""
        window = self.model.normalizer.state()
        if not window.size:
            return np.ones(len(self.model.members))
        std = window.std(axis=0)
        return np.where(std > 1e-8, std, 1.0)

    def score_clips(self, clips: Sequence[Clip]) -> list[np.ndarray]:
        """Gain-only per-step rewards of ``clips`` (0 on padding): ``mean_m(r_hat_m / s_m)``, window unchanged."""
        from trainers.algorithms.reward.model import scatter_steps

        scales = self.scales()
        out: list[np.ndarray] = []
        for start in range(0, len(clips), self.chunk):
            part = list(clips[start:start + self.chunk])
            raw, owner = self.model.member_step_rewards(part)
            values = self.gain * (raw.cpu().numpy().astype(np.float64) / scales).mean(axis=1)
            out.extend(scatter_steps(part, values, owner.cpu()))
        return out

    def returns(self, clips: Sequence[Clip]) -> np.ndarray:
        """Each clip's gain-only learned return (the sum of ``score_clips``)."""
        return np.array([r.sum() for r in self.score_clips(clips)], dtype=np.float64)

    def score_turns(self, turns: Sequence[Any]) -> list[float]:
        """One learned reward per turn: the gain-only reward of the step ``(o_t, a_t)``."""
        clips = [turn_clip(turn, i) for i, turn in enumerate(turns)]
        return [float(rewards[0]) for rewards in self.score_clips(clips)]

    def __repr__(self) -> str:
        model = self.model
        return f"RewardModelScorer({len(model.members)} members, inputs {model.inputs.kind}, gain {self.gain:g})"


def fit_gain(scorer: RewardModelScorer, clips: Sequence[Clip]) -> float:
    """The gain that gives the learned returns of ``clips`` (games of the policy PPO starts from) standard
    deviation 1, as the recipe normalises its reward on the policy's samples before PPO (detail 5)."""
    base = RewardModelScorer(scorer.model, 1.0, scorer.chunk).returns(clips)
    std = float(base.std())
    return 1.0 / std if std > 1e-8 else 1.0


def save_gain(folder: str | os.PathLike, gain: float, note: str) -> Path:
    """Writes ``folder/GAIN_FILE`` (``load_reward_model(folder)`` applies it): the gain and what it was fit on."""
    path = Path(folder) / GAIN_FILE
    path.write_text(json.dumps({"gain": float(gain), "fit_on": note}, indent=2))
    return path


def read_gain(folder: str | os.PathLike) -> float:
    """The gain saved in ``folder/GAIN_FILE``, 1 without that file; a malformed file is an error naming it."""
    path = Path(folder) / GAIN_FILE
    if not path.is_file():
        return 1.0
    try:
        gain = float(json.loads(path.read_text())["gain"])
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: expected {{\"gain\": <positive number>}} ({error!r})") from None
    if not gain > 0:
        raise ValueError(f"{path}: gain must be positive, got {gain}")
    return gain


def load_reward_model(path: str | os.PathLike, device: str | None = None) -> Any:
    """The turn scorer PPO's ``--reward model:<path>`` uses (``trainers.algorithms.reward.scorer.RewardModelScorer``),
    its model on ``device`` (``trainers.core.device``; None: ``auto``, PPO's device inside its run).

    ``path`` is the output folder of ``rlds-lang train reward --out DIR`` (its ``checkpoint/`` is loaded) or
    a checkpoint folder itself; errors name the folder or the file that is missing or malformed. A gain file
    in ``path`` (``trainers.algorithms.reward.scorer.GAIN_FILE``) scales the scores.
    """

    folder = checkpoint_folder(path)
    return RewardModelScorer(RewardModel.load(folder, device), gain=read_gain(path))


__all__ = ["GAIN_FILE", "RewardModelScorer", "fit_gain", "read_gain", "save_gain", "turn_clip", "load_reward_model"]
