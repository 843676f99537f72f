"""Reddit commands: ``rlds-lang reddit tokenizer`` (a subword tokenizer for open text) and ``rlds-lang eval --task reddit``.

``reddit-tokenizer`` trains a byte-level BPE (``rlds_lang.subword.SubwordTokenizer``) on the parent and
comment texts of the ``train`` split of a manual folder (either layout) and saves it; training then uses it
with ``--tokenizer file:PATH`` and the checkpoint carries it as ``tokenizer.json``.

``eval --task reddit`` samples replies of each ``--agent`` checkpoint to held-out parents (the ``test``
split of ``--data``, as in the paper: 1,024 episodes, seed 0, replies up to 256 tokens), scores them with
``--reward`` through ``RedditEnv`` (``raw * scale + shift``, the kind's published scale unless given) and
prints mean ± standard error per agent. ``upvotes_real`` cannot score new text (it knows only the data's
comments), so it is refused here.

Example::

    rlds-lang reddit tokenizer --data DIR --out runs/reddit-tokenizer.json
    rlds-lang train bc --dataset /tmp/reddit-data/reddit_comments/toxicity/1.0.0 --tokenizer file:runs/reddit-tokenizer.json
    rlds-lang eval --task reddit --data DIR --reward toxicity --agent bc=runs/train/checkpoint --episodes 64
"""

from __future__ import annotations

import json
from typing import Any

from rlds_lang.reddit.env import RedditEnv


def evaluate_agent(policy: Any, env: RedditEnv, episodes: int, seed: int, batch: int = 32) -> list[float]:
    """Rewards of ``episodes`` replies of ``policy``: episode ``i`` draws its parent with seed ``seed + i``."""
    rewards: list[float] = []
    for start in range(0, episodes, batch):
        seeds = list(range(seed + start, seed + min(episodes, start + batch)))
        observations = []
        for s in seeds:
            env.seed(s)
            observations.append(env.reset().observation)
        replies = policy.act_batch([([o], []) for o in observations], seeds=seeds)
        env.prefetch(replies)
        for s, reply in zip(seeds, replies):
            env.seed(s)
            env.reset()
            rewards.append(float(env.step(reply).reward))
    return rewards


def write_results(path: str | None, results: dict[str, Any]) -> None:
    """Writes an eval command's results as JSON to ``path`` (nothing when ``path`` is empty)."""
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)


__all__ = ["evaluate_agent", "write_results"]
