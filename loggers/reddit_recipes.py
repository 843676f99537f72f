"""Recording recipe of Reddit datasets: replay data comments through ``RedditEnv`` with ``loggers.record``.

Each comment becomes one episode: the environment shows its parent (or nothing with
``include_parent=False``), ``DataReplyPolicy`` replies with the comment's text, and the environment
scores it. Rewards of the whole batch are computed first in one call (``RedditEnv.prefetch``). The log
folder is temporary (``loggers.record_and_read``); builders and tests call ``record_comments``.

Example::

    from loggers.reddit_recipes import record_comments
    from rlds_lang.reddit.rewards import make_reward

    episodes = list(record_comments(comments, make_reward("toxicity"), run_name="reddit-train"))
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from loggers.roundtrip import record_and_read
from rlds_lang.reddit.data import RedditComment
from rlds_lang.reddit.env import DataReplyPolicy, RedditEnv
from rlds_lang.reddit.rewards import RewardFunction


class ReplayHook:
    """``before_episode`` hook: episode ``i`` shows ``comments[i]``'s parent and the policy replies with its text."""

    def __init__(self, policy: DataReplyPolicy, comments: Sequence[RedditComment]):
        self.policy = policy
        self.comments = comments

    def __call__(self, env: RedditEnv, i: int) -> None:
        env.set_next_comment(self.comments[i])
        self.policy.reply = self.comments[i].text


def record_comments(comments: Sequence[RedditComment], reward: RewardFunction, run_name: str, *,
                    reward_scale: float | None = None, reward_shift: float | None = None, include_parent: bool = True,
                    work_dir: str | None = None) -> Iterator[dict[str, Any]]:
    """Records one episode per comment and yields the RLDS episodes read back (ids ``{run_name}-{i:08d}``)."""
    if not comments:
        return iter(())
    env = RedditEnv(comments, reward, reward_scale, reward_shift, include_parent)
    env.prefetch([c.text for c in comments])
    policy = DataReplyPolicy()
    return record_and_read(env, policy, len(comments), work_dir, run_name=run_name,
                           before_episode=ReplayHook(policy, comments))


__all__ = ["ReplayHook", "record_comments"]
