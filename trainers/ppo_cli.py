"""``rlds-lang train ppo``: every field of ``trainers.ppo.PPOConfig`` is an option (``--reward env``, ``--init DIR``).

Example::

    rlds-lang train ppo --task wordle --init runs/bc/checkpoint --reward env --updates 50 --out runs/ppo
"""

from __future__ import annotations

import argparse
import os


def cmd_train_ppo(args: argparse.Namespace) -> None:
    """Trains PPO with the config built from the command line and prints the last update's figures."""
    from trainers.config import dataclass_from_args
    from trainers.ppo import PPOConfig, train_ppo

    config = dataclass_from_args(PPOConfig, args)
    result = train_ppo(config, progress=args.progress)
    if int(os.environ.get("RANK", "0")) != 0:
        return
    shown = ", ".join(f"{k} {v:.4g}" for k, v in sorted(result.final_metrics.items()))
    print(f"ppo: {result.updates} updates in {result.seconds:.1f} s (rollouts {result.rollout_tokens_per_second:,.0f} "
          f"tokens/s, updates {result.update_tokens_per_second:,.0f} tokens/s) -> {result.out}\n  {shown}")


def add_ppo_parser(algorithms: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds the ``ppo`` parser to the ``train`` subcommands."""
    from trainers.config import add_dataclass_arguments
    from trainers.ppo import PPOConfig

    parser = algorithms.add_parser("ppo", help="online PPO in an environment, lm-human-preferences details",
                                   description="online PPO; options are the fields of trainers.ppo.PPOConfig")
    add_dataclass_arguments(parser, PPOConfig)
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    parser.set_defaults(func=cmd_train_ppo)
    return parser


__all__ = ["cmd_train_ppo", "add_ppo_parser"]
