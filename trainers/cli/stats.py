"""``rlds-lang stats``: the statistics table of a built dataset, with the summaries of its task where the task is known.

Counts, returns, episode lengths and action lengths hold for any dataset (``transforms.statistics``); a win rate
only for a task that has a win rule (``WIN_REWARDS``: Wordle's game is won when its final guess earns 0), read from
the episodes' ``task`` metadata, or for any task given ``--win-reward``.
"""

from __future__ import annotations

import argparse
from typing import Any

#: the tasks whose statistics have a win rate: an episode is won when it terminated and its final action earned at
#: least this (Wordle: the winning guess earns 0, every other guess -1).
WIN_REWARDS = {"wordle": 0.0}


def dataset_task(episodes: Any) -> str:
    """The ``task`` episode metadata of a dataset's first episode (``""`` when its episodes carry none)."""
    if "task" not in episodes.element_spec:
        return ""
    for episode in episodes.take(1):
        task = episode["task"].numpy()
        return task.decode("utf-8") if isinstance(task, bytes) else str(task)
    return ""


def cmd_stats(args: argparse.Namespace) -> None:
    """Prints the statistics table of a dataset split and, with ``--plot``, writes the histograms PNG."""
    from transforms.loading import load
    from transforms.statistics import compute_statistics

    episodes = load(args.dataset, split=args.split, config=args.config, data_dir=args.data_dir)
    task = dataset_task(episodes)
    win_reward = args.win_reward if args.win_reward is not None else WIN_REWARDS.get(task)
    stats = compute_statistics(episodes, win_reward=win_reward, action_key=args.action_key,
                               reward_key=args.reward_key, batch_size=args.batch_size)
    name = f"{args.dataset}{'/' + args.config if args.config else ''} [{args.split}]"
    print(f"{name}, task {task or 'not recorded'}")
    print(stats.table())
    if args.win_reward is None and task not in WIN_REWARDS:
        print(f"(no win rate: {'this task' if task else 'a dataset without a task'} has no win rule here; "
              "--win-reward R counts the terminated episodes whose final action earned >= R)")
    if args.plot:
        print(f"plot -> {stats.plot(args.plot, title=name)}")


def add_stats_parser(sub: Any) -> None:
    """``rlds-lang stats DATASET [--config C --data-dir D] [--plot PNG] [--win-reward R]``."""
    from trainers.cli.commands import COMMAND_HELP

    stats = sub.add_parser("stats", help=COMMAND_HELP["stats"])
    stats.add_argument("dataset", help="a folder written by tfds build (with dataset_info.json) or a dataset name")
    stats.add_argument("--config", default=None, help="builder config when loading by name")
    stats.add_argument("--data_dir", "--data-dir", dest="data_dir", default=None,
                       help="TFDS data folder when loading by name")
    stats.add_argument("--split", default="train")
    stats.add_argument("--plot", default=None, help="write the histograms to this PNG")
    stats.add_argument("--win-reward", type=float, default=None,
                       help="an episode is won when it terminated and its final action earned at least this "
                            f"(default: the task's rule, for {', '.join(WIN_REWARDS)}: "
                            f"{', '.join(str(v) for v in WIN_REWARDS.values())}; no win rate for other tasks)")
    stats.add_argument("--action-key", default="action", help="action field or /-path to its text")
    stats.add_argument("--reward-key", default="reward")
    stats.add_argument("--batch-size", type=int, default=4096, help="steps per vectorised batch")
    stats.set_defaults(func=cmd_stats)


__all__ = ["WIN_REWARDS", "add_stats_parser", "cmd_stats", "dataset_task"]
