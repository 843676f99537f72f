"""A trained reward model (``trainers.reward_model.RewardModel``) as PPO's reward source.

The reward model predicts a reward ``r_hat(o_t, a_t)`` for every step of a clip: the observation an action
was taken from and the action. A PPO turn (``trainers.ppo_rewards.Turn``) is exactly such a step: its last
observation ``o_t`` and its response ``a_t``. ``RewardModelScorer.score_turns`` therefore scores each turn
as a one-step clip and returns the model's normalised per-step reward, the same number the model gives
that step inside a recorded clip (``RewardModel.predict``), so PPO's return-to-go of a turn is the learned
return of the rest of the game. Scoring never moves the normaliser: the scores are a fixed function of the
checkpoint (the normaliser's window saved by ``rlds-lang train reward``), so a reloaded model scores
identically and PPO's reward does not drift with its own samples.

Example::

    from trainers.reward_model import load_reward_model

    scorer = load_reward_model("runs/reward")          # the --out folder of `rlds-lang train reward`
    rewards = scorer.score_turns(turns)                # one float per trainers.ppo_rewards.Turn
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from rlds_lang.preferences.types import Clip


def turn_clip(turn: Any, index: int) -> Clip:
    """The one-step clip ``(o_t, a_t)`` of a PPO turn: its last observation and its response (true reward 0)."""
    observation = turn.observations[-1] if turn.observations else ""
    name = f"turn-{index}"
    return Clip(f"{name}:0", name, 0, 1, [observation], [turn.response], [0.0], [False])


class RewardModelScorer:
    """A turn scorer (``trainers.ppo_rewards``) backed by a reward-model ensemble; ``model`` is the ensemble."""

    def __init__(self, model: Any, chunk: int = 512):
        self.model = model
        self.chunk = int(chunk)

    def score_clips(self, clips: Sequence[Clip]) -> list[np.ndarray]:
        """Normalised per-step rewards of ``clips`` (0 on padding), without moving the normaliser."""
        out: list[np.ndarray] = []
        for start in range(0, len(clips), self.chunk):
            out.extend(self.model.predict(list(clips[start:start + self.chunk]), update_normalisation=False))
        return out

    def score_turns(self, turns: Sequence[Any]) -> list[float]:
        """One learned reward per turn: the model's normalised reward of the step ``(o_t, a_t)``."""
        clips = [turn_clip(turn, i) for i, turn in enumerate(turns)]
        return [float(rewards[0]) for rewards in self.score_clips(clips)]

    def __repr__(self) -> str:
        return f"RewardModelScorer({len(self.model.members)} members, inputs {self.model.inputs.kind})"


__all__ = ["RewardModelScorer", "turn_clip"]
