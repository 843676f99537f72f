"""What a preference judgement is made of: clips (segments of episodes), labels and judgements.

A ``Clip`` is a run of consecutive steps of one recorded episode (``segment_length`` of them; the last
segment of an episode is padded with its last observation and reward 0, the padded steps marked in
``padding``). A ``Judgement`` is a labeller's answer about a pair of clips: which one is better
(``Label.LEFT`` / ``Label.RIGHT``), both as good (``Label.EQUAL``), or incomparable (``Label.SKIP``).
These are the units every part of the preference pipeline exchanges: the segmenting wrapper makes
clips, pair selection pairs them, labellers (synthetic or a person in ``creator_web``) judge them,
``loggers`` records them as RLDS and the reward model (``trainers.algorithms.reward.model``) learns from them.

Example::

    from rlds_lang.preferences.types import Clip, Judgement, Label

    left = Clip("ep-1:0", "ep-1", 0, 2, observations=["", "⬛⬛🟨⬛🟩"], actions=["crane", "abide"],
                rewards=[-1.0, 0.0], padding=[False, False])
    right = Clip("ep-2:0", "ep-2", 0, 2, observations=["", "⬛⬛⬛⬛⬛"], actions=["crane", "fluff"],
                 rewards=[-1.0, -1.0], padding=[False, False])
    judgement = Judgement(left, right, Label.LEFT, labeller="synthetic")
    assert judgement.target == 1.0
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Sequence


class Label(str, enum.Enum):
    """A labeller's answer about a pair (left, right); the value is what the RLDS log stores as the action."""

    LEFT = "left"
    RIGHT = "right"
    EQUAL = "equal"
    SKIP = "skip"

    @property
    def target(self) -> float | None:
        """P(left is preferred) as a training target: 1, 0, 0.5 for equal; ``None`` for skip (not trained on)."""
        return {Label.LEFT: 1.0, Label.RIGHT: 0.0, Label.EQUAL: 0.5}.get(self)

    @classmethod
    def parse(cls, value: str | bytes, where: str = "label") -> "Label":
        """The label named ``value``; the error names ``where`` and the accepted values."""
        text = value.decode("utf-8") if isinstance(value, bytes) else str(value)
        try:
            return cls(text)
        except ValueError:
            raise ValueError(f"{where}: {text!r} is not a label; expected one of "
                             f"{[label.value for label in cls]}") from None


@dataclasses.dataclass
class Clip:
    """``stop - start`` consecutive steps of episode ``source_episode_id`` (steps ``[start, stop)``).

    Attributes:
      clip_id: unique id, ``{source_episode_id}:{start}`` by convention.
      source_episode_id: the episode the steps come from.
      start: index of the first step in the source episode.
      stop: one past the last real step (padded steps are beyond it).
      observations: what the labeller is shown of each step (text, or an array for non-text tasks).
      actions: the action of each step (text, or an array).
      rewards: the environment's (true) reward of each step; 0 on padded steps.
      padding: ``True`` on steps added to fill the last segment of an episode.
    """

    clip_id: str
    source_episode_id: str
    start: int
    stop: int
    observations: Sequence[Any]
    actions: Sequence[Any]
    rewards: Sequence[float]
    padding: Sequence[bool]

    def __post_init__(self) -> None:
        n = len(self.observations)
        lengths = {"actions": len(self.actions), "rewards": len(self.rewards), "padding": len(self.padding)}
        bad = {k: v for k, v in lengths.items() if v != n}
        if bad:
            raise ValueError(f"clip {self.clip_id}: {n} observations but {bad}")
        if not 0 <= self.start <= self.stop:
            raise ValueError(f"clip {self.clip_id}: need 0 <= start <= stop, got start={self.start}, stop={self.stop}")

    @property
    def true_return(self) -> float:
        """Sum of the clip's true rewards (padded steps add 0)."""
        return float(sum(self.rewards))

    def __len__(self) -> int:
        return len(self.observations)


@dataclasses.dataclass
class Judgement:
    """A labeller's answer about one pair of clips, with how it came about.

    Attributes:
      left, right: the clips as shown (left first).
      label: the answer.
      labeller: who answered (``synthetic``, ``human:<annotator id>``).
      seconds: time the labeller took.
      selection: how the pair was chosen (``random``, ``disagreement``, ``manual``...).
      disagreement: the reward-model ensemble's disagreement on the pair when it was chosen (0 if none).
    """

    left: Clip
    right: Clip
    label: Label
    labeller: str
    seconds: float = 0.0
    selection: str = "random"
    disagreement: float = 0.0

    @property
    def target(self) -> float | None:
        """P(left preferred) for training, ``None`` for a skip."""
        return self.label.target

    @property
    def pair_key(self) -> tuple[str, str]:
        """The unordered pair of clip ids (a pair is never asked twice, in either order)."""
        a, b = self.left.clip_id, self.right.clip_id
        return (a, b) if a <= b else (b, a)


__all__ = ["Clip", "Judgement", "Label"]
