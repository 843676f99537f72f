"""The PyTorch bridge: a ``torch.utils.data.IterableDataset`` over the per-turn view, and dataset statistics.

``TurnDataset`` yields Python values (``str`` decoded from UTF-8, ``float``, ``bool``), so trainers
tokenise with any tokenizer; with a multi-worker ``DataLoader`` each worker reads a disjoint shard.

Example::

    from torch.utils.data import DataLoader
    from transforms.loading import load
    from transforms.torch_bridge import TurnDataset, dataset_statistics

    episodes = load("wordle_synthetic", config="expert", data_dir="/tmp/tfds")
    print(dataset_statistics(episodes))
    for batch in DataLoader(TurnDataset(episodes), batch_size=32):
        print(batch["observation"][:2], batch["reward"][:2])
        break
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np
import tensorflow as tf
import torch.utils.data

from transforms.loading import to_turns


def _decode(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


class TurnDataset(torch.utils.data.IterableDataset):
    """Turns of an episodes dataset as dicts of Python values.

    Args:
      episodes: a ``tf.data.Dataset`` of RLDS episodes (as ``transforms.loading.load`` returns).
      turns: give the per-turn view directly instead (``transforms.loading.to_turns``); one of the two.

    Yields ``{"observation": str, "action": str, "reward": float, "done": bool, "episode_id": str}``.
    """

    def __init__(self, episodes: tf.data.Dataset | None = None, turns: tf.data.Dataset | None = None):
        super().__init__()
        if (episodes is None) == (turns is None):
            raise ValueError("give exactly one of episodes= or turns=")
        self._episodes = episodes
        self._turns = turns

    def __iter__(self) -> Iterator[dict[str, Any]]:
        info = torch.utils.data.get_worker_info()
        if self._turns is not None:
            turns = self._turns
            if info is not None and info.num_workers > 1:
                turns = turns.shard(info.num_workers, info.id)
        else:
            episodes = self._episodes
            if info is not None and info.num_workers > 1:  # whole episodes per worker
                episodes = episodes.shard(info.num_workers, info.id)
            turns = to_turns(episodes)
        for turn in turns.as_numpy_iterator():
            yield {k: _decode(v) for k, v in turn.items()}


def dataset_statistics(episodes: tf.data.Dataset, win_reward: float = 0.0) -> dict[str, float]:
    """Episodes, steps (all RLDS steps, ``is_last`` included), actions, mean/min/max return and win rate.

    An episode counts as won when it terminated (``is_terminal`` on its last step) and its final action
    earned at least ``win_reward`` (Wordle: the winning guess earns 0, every other guess -1).
    """
    def flags(step: dict[str, Any]) -> dict[str, tf.Tensor]:
        return {"reward": tf.cast(step["reward"], tf.float64), "is_last": step["is_last"],
                "is_terminal": step["is_terminal"]}

    steps = episodes.flat_map(lambda episode: episode["steps"].map(flags)).batch(4096)
    n_episodes = n_steps = n_actions = wins = 0
    returns: list[float] = []
    running, last_reward, actions = 0.0, 0.0, 0
    for batch in steps.as_numpy_iterator():  # a flat stream of steps; is_last closes an episode
        for reward, last, terminal in zip(batch["reward"], batch["is_last"], batch["is_terminal"]):
            n_steps += 1
            if not last:
                running += float(reward)
                last_reward = float(reward)
                actions += 1
                continue
            n_episodes += 1
            n_actions += actions
            returns.append(running)
            wins += int(bool(terminal) and actions > 0 and last_reward >= win_reward)
            running, last_reward, actions = 0.0, 0.0, 0
    arr = np.asarray(returns, dtype=np.float64)
    return {
        "episodes": n_episodes,
        "steps": n_steps,
        "actions": n_actions,
        "mean_return": float(arr.mean()) if n_episodes else float("nan"),
        "min_return": float(arr.min()) if n_episodes else float("nan"),
        "max_return": float(arr.max()) if n_episodes else float("nan"),
        "win_rate": wins / n_episodes if n_episodes else float("nan"),
    }


__all__ = ["TurnDataset", "dataset_statistics"]
