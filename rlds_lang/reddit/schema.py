"""The RLDS schema of Reddit episodes (``REDDIT_SCHEMA``).

Observation: ``text`` only -- the parent comment on the first step (``""`` with ``include_parent=False``
or for a post parent), ``""`` after the reply. Action: the reply. Episode metadata: the common fields plus
what ``RedditEnv.episode_metadata()`` reports about the data comment the episode comes from (its id,
parent id, subreddit, score and split) and the reward (kind, scale, shift, include_parent).
"""

from __future__ import annotations

import numpy as np

from rlds_lang.schema import TaskSchema

REDDIT_SCHEMA = TaskSchema(
    task="reddit",
    episode_metadata={
        "comment_id": str,
        "parent_id": str,
        "subreddit": str,
        "score": np.int64,
        "split": str,
        "reward_kind": str,
        "reward_scale": np.float64,
        "reward_shift": np.float64,
        "include_parent": np.bool_,
    },
)

__all__ = ["REDDIT_SCHEMA"]
