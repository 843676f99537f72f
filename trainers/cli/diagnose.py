"""``rlds-lang top-advantage``: the actions of a dataset a value-based agent rates best and worst
(``trainers.experiments.top_advantage``).

Example::

    rlds-lang top-advantage --agent runs/ilql/checkpoint --dataset runs/tfds/wordle_synthetic/lmrl_gym/1.1.0 --top 10
"""

from __future__ import annotations

import argparse
from pathlib import Path


def cmd_top_advantage(args: argparse.Namespace) -> str:
    """Prints (and with ``--out`` writes) the markdown table of the top and bottom ``--top`` actions."""
    from trainers.algorithms.registry import load_agent_model
    from trainers.experiments.top_advantage import top_advantage

    loaded = load_agent_model(args.agent)
    result = top_advantage(loaded, args.dataset, split=args.split, episodes=args.episodes, batch_size=args.batch_size)
    table = result.table(args.top)
    print(f"{loaded.algorithm} ({args.agent}, step {loaded.step}) on {args.dataset} [{args.split}], "
          f"first {args.episodes} episodes\n{table}")
    if args.out:
        Path(args.out).write_text(table + "\n")
    return table


def add_top_advantage_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds the ``top-advantage`` command."""
    from trainers.cli.commands import COMMAND_HELP

    parser = sub.add_parser("top-advantage", help=COMMAND_HELP["top-advantage"])
    parser.add_argument("--agent", required=True, help="checkpoint folder of a value-based agent")
    parser.add_argument("--dataset", required=True, help="a folder written by tfds build, or a dataset name")
    parser.add_argument("--split", default="train")
    parser.add_argument("--episodes", type=int, default=1000, help="read the first N episodes of the split")
    parser.add_argument("--top", type=int, default=10, help="how many actions to list at each end")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--out", default=None, help="also write the table (markdown) to this file")
    parser.set_defaults(func=cmd_top_advantage)
    return parser


__all__ = ["cmd_top_advantage", "add_top_advantage_parser"]
