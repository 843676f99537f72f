"""``RedditEnv``: the one-step reply environment of the Reddit comments task, on ``LanguageEnv``.

An episode shows a parent comment (observation ``text``; ``""`` when ``include_parent=False``), takes
one action -- the reply -- and terminates with reward ``raw(reply) * reward_scale + reward_shift``,
``raw`` being the reward function's value (``rlds_lang.reddit.rewards``). The parent comes from a data
comment: drawn with the environment's seeded generator, or fixed with ``set_next_comment`` (how a
dataset recipe replays the data). The episode metadata describes that data comment and the reward.

Example::

    from rlds_lang.reddit.env import RedditEnv
    from rlds_lang.reddit.rewards import make_reward

    env = RedditEnv(comments, make_reward("toxicity"))
    timestep = env.reset()                 # timestep.observation["text"] is a parent comment
    timestep = env.step("Thanks, that helps!")
    print(timestep.reward, timestep.last())
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from dm_env import specs

from rlds_lang.env import LanguageEnv, Observation, text_spec
from rlds_lang.reddit.data import RedditComment
from rlds_lang.reddit.rewards import DEFAULT_SCALE, RewardFunction


class RedditEnv(LanguageEnv):
    """One-step reply environment (see the module docstring).

    Args:
      comments: the data comments whose parents are shown (at least one).
      reward: a ``RewardFunction`` (``make_reward(kind)``).
      reward_scale, reward_shift: default to the kind's published values (``DEFAULT_SCALE``).
      include_parent: show the parent comment (else an empty observation).
      seed: seed of the parent draws.
    """

    task_name = "reddit"

    def __init__(self, comments: Sequence[RedditComment], reward: RewardFunction, reward_scale: float | None = None,
                 reward_shift: float | None = None, include_parent: bool = True, seed: int = 0):
        super().__init__(seed)
        if not comments:
            raise ValueError("RedditEnv needs at least one data comment to draw parents from")
        self.comments = list(comments)
        self.reward = reward
        scale, shift = DEFAULT_SCALE.get(reward.kind, (1.0, 0.0))
        self.reward_scale = float(scale if reward_scale is None else reward_scale)
        self.reward_shift = float(shift if reward_shift is None else reward_shift)
        self.include_parent = bool(include_parent)
        self.comment: RedditComment = self.comments[0]
        self._next: RedditComment | None = None
        self._memo: dict[str, float] = {}

    def set_next_comment(self, comment: RedditComment) -> None:
        """The next episode shows this comment's parent (instead of a random draw)."""
        self._next = comment

    def prefetch(self, texts: Sequence[str]) -> None:
        """Computes the raw rewards of ``texts`` in one batch, so the coming steps need no model call."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._memo]
        self._memo.update(zip(todo, self.reward.rewards(todo)))

    def raw_reward(self, text: str) -> float:
        """The reward function's value for ``text`` (before scale and shift)."""
        if text not in self._memo:
            self._memo[text] = float(self.reward.rewards([text])[0])
        return self._memo[text]

    def observation_spec(self) -> dict[str, specs.Array]:
        return {"text": text_spec("text")}

    def _reset(self) -> Observation:
        if self._next is not None:
            self.comment, self._next = self._next, None
        else:
            self.comment = self.comments[int(self._rng.integers(len(self.comments)))]
        return {"text": self.comment.parent_text if self.include_parent else ""}

    def _step(self, action: str) -> tuple[Observation, float, bool]:
        reward = self.raw_reward(action) * self.reward_scale + self.reward_shift
        return {"text": ""}, reward, True

    def episode_metadata(self) -> dict[str, Any]:
        c = self.comment
        return {"task": self.task_name, "comment_id": c.comment_id, "parent_id": c.parent_id,
                "subreddit": c.subreddit, "score": np.int64(c.score), "split": c.split,
                "reward_kind": self.reward.kind, "reward_scale": np.float64(self.reward_scale),
                "reward_shift": np.float64(self.reward_shift), "include_parent": np.bool_(self.include_parent)}

    def __getstate__(self):  # the memo is a per-process speed-up: do not ship it to workers
        state = dict(self.__dict__)
        state["_memo"] = {}
        return state


class DataReplyPolicy:
    """Replies with the text of a data comment (the dataset's behaviour policy), byte for byte.

    ``reply`` is set before each episode (by the recipe's hook) to the comment the environment shows.
    """

    name = "reddit_data"

    def __init__(self) -> None:
        self.reply = ""

    def reset(self, seed: int) -> None:
        """Nothing to reset: the reply is fixed by the data."""

    def act(self, observations, actions) -> str:
        """The data comment's text."""
        return self.reply

    def params(self) -> dict[str, Any]:
        """No parameters: the data decides every reply."""
        return {}


__all__ = ["DataReplyPolicy", "RedditEnv"]
