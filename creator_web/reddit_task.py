"""The Reddit task in the browser: a person replies to a parent comment drawn from a split of the server's Reddit
comments folder, and sees every reward config's value of their reply once it is submitted.

Each reply is one episode of ``rlds_lang.reddit.env.RedditEnv`` recorded through the session's ``LiveEpisode``:
the same one-step episode, observation, reward (``raw * reward_scale + reward_shift`` of the session's
``reward_kind``) and episode metadata (``REDDIT_SCHEMA``) that ``builders/reddit_comments`` records for a data
comment, plus the creator_web extras (annotator, session_id, task_config, client_ms). The parent is drawn with
the game's seed from the comments of the chosen split; the data comment it belongs to names the episode's
``comment_id``/``parent_id``/``subreddit``/``score`` (the data comment's, as in the builder).

After the reply, the page shows each reward config (``reward_table``): the toxicity label and its noised form,
the upvote model's verdict when the server was given one, and ``upvotes_real`` said to be unknown (a new reply
has no Reddit score). ``upvotes_real`` cannot be a session's recorded reward for the same reason.
"""

from __future__ import annotations

import collections
import functools
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from creator_web.tasks import TaskSources, WebTask, register, transcript_rows
from rlds_lang.env import InvalidActionError
from rlds_lang.reddit.data import RedditComment, read_folder, rejection_report
from rlds_lang.reddit.env import RedditEnv
from rlds_lang.reddit.rewards import DEFAULT_SCALE, REWARD_KINDS, RewardFunction, make_reward

#: the longest reply accepted (characters).
MAX_REPLY = 2000


class RedditConfig(BaseModel):
    """A Reddit session's configuration (recorded as ``task_config`` with every reply)."""

    model_config = ConfigDict(extra="forbid")

    split: Literal["train", "eval", "test"] = "train"
    reward_kind: Literal["toxicity", "toxicity_noised", "upvotes_model"] = Field(
        "toxicity", description="the reward recorded (upvotes_real needs a Reddit score, which a new reply lacks)")
    seed: int | None = Field(None, ge=0, lt=2**62, description="reply k's parent is drawn with seed + k")


@functools.lru_cache(maxsize=8)
def split_comments(folder: str, split: str) -> tuple[RedditComment, ...]:
    """The comments of ``split`` in the Reddit folder ``folder`` (read once per server); ``ValueError`` naming the
    folder and the rejection counts when the split holds none."""
    rejections: collections.Counter = collections.Counter()
    comments = list(read_folder(folder, rejections))
    chosen = tuple(c for c in comments if c.split == split)
    if not chosen:
        raise ValueError(f"config.split: the Reddit folder has no {split!r} comment "
                         f"({rejection_report(rejections, len(comments))})")
    return chosen


class WebRedditEnv(RedditEnv):
    """``RedditEnv`` that also remembers the reply and rates it with every reward config the server has."""

    def __init__(self, comments: tuple[RedditComment, ...], reward: RewardFunction,
                 others: dict[str, RewardFunction | None]):
        super().__init__(comments, reward)
        self.others = others
        self.reply: str | None = None
        self.recorded: float | None = None

    def _reset(self):
        self.reply, self.recorded = None, None
        return super()._reset()

    def _step(self, action: str):
        observation, reward, done = super()._step(action)
        self.reply, self.recorded = action, reward
        return observation, reward, done

    def reward_table(self) -> list[dict[str, Any]]:
        """Each reward config's value of the reply: ``kind``, ``raw``, ``reward`` (scaled and shifted as the
        published configs do), ``recorded`` (the session's kind), or ``note`` saying why there is none."""
        table = []
        for kind in REWARD_KINDS:
            row: dict[str, Any] = {"kind": kind, "recorded": kind == self.reward.kind}
            function = self.reward if kind == self.reward.kind else self.others.get(kind)
            if kind == "upvotes_real":
                row["note"] = "a new reply has no Reddit score"
            elif function is None:
                row["note"] = "no upvote model on this server"
            else:
                raw = float(function.rewards([self.reply or ""])[0])
                scale, shift = DEFAULT_SCALE[kind]
                row.update(raw=raw, reward=raw * scale + shift)
            table.append(row)
        return table


def _unavailable(sources: TaskSources) -> str | None:
    return None if sources.reddit_dir else "no Reddit comments folder was given (--reddit-dir)"


def _make_env(config: RedditConfig, sources: TaskSources) -> WebRedditEnv:
    if config.reward_kind == "upvotes_model" and not sources.upvote_model:
        raise ValueError("config.reward_kind: upvotes_model needs an upvote model on the server (--upvote-model)")
    comments = split_comments(str(sources.reddit_dir), config.split)

    def reward(kind: str) -> RewardFunction | None:
        if kind == "upvotes_model" and not sources.upvote_model:
            return None
        return make_reward(kind, model_dir=sources.upvote_model, cache=False)

    others = {kind: reward(kind) for kind in ("toxicity", "toxicity_noised", "upvotes_model")
              if kind != config.reward_kind}
    return WebRedditEnv(comments, reward(config.reward_kind), others)


def _prepare(env: WebRedditEnv, config: RedditConfig) -> None:
    """Nothing to fix: the parent is drawn with the game's seed."""


def _check(env: WebRedditEnv, action: str) -> None:
    if not action.strip():
        raise InvalidActionError("write a reply first (it is empty)")
    if len(action) > MAX_REPLY:
        raise InvalidActionError(f"the reply has {len(action)} characters, more than {MAX_REPLY}")


def _view(env: WebRedditEnv) -> dict[str, Any]:
    c = env.comment
    out: dict[str, Any] = {"kind": "text", "prompt": "Write a reply to this comment", "max_length": MAX_REPLY,
                           "context": {"subreddit": c.subreddit, "split": c.split, "parent_id": c.parent_id},
                           "rows": transcript_rows([env.reply or ""], [c.parent_text]), "can_stop": False}
    if env.reply is not None:
        out["rows"][0]["reward"] = env.recorded
        out["rewards"] = env.reward_table()
    return out


register(WebTask("reddit", RedditConfig, _make_env, _prepare, _check, _view, transcript_rows, kind="text",
                 unavailable=_unavailable))

__all__ = ["MAX_REPLY", "RedditConfig", "WebRedditEnv", "split_comments"]
