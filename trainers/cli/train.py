"""``rlds-lang train ppo``: every field of ``trainers.algorithms.ppo.config.PPOConfig`` is an option (``--reward env``, ``--init DIR``).

Example::

    rlds-lang train ppo --task wordle --init runs/bc/checkpoint --reward env --updates 50 --out runs/ppo
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from trainers.algorithms.malt.config import MALTConfig
from trainers.algorithms.online_pbc_config import OnlinePBCConfig

if TYPE_CHECKING:  # the commands import PyTorch when they run, not when their options are built
    from trainers.algorithms.malt.expert_iteration import RoundManifest


def cmd_train_ppo(args: argparse.Namespace) -> None:
    """Trains PPO with the config built from the command line and prints the last update's figures."""
    from trainers.algorithms.ppo.config import PPOConfig
    from trainers.algorithms.ppo.trainer import train_ppo
    from trainers.core.config import dataclass_from_args

    config = dataclass_from_args(PPOConfig, args)
    result = train_ppo(config, progress=args.progress)
    if int(os.environ.get("RANK", "0")) != 0:
        return
    shown = ", ".join(f"{k} {v:.4g}" for k, v in sorted(result.final_metrics.items()))
    print(f"ppo: {result.updates} updates in {result.seconds:.1f} s (rollouts {result.rollout_tokens_per_second:,.0f} "
          f"tokens/s, updates {result.update_tokens_per_second:,.0f} tokens/s) -> {result.out}\n  {shown}")


def add_ppo_parser(algorithms: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds the ``ppo`` parser to the ``train`` subcommands."""
    from trainers.algorithms.ppo.config import PPOConfig
    from trainers.core.config import add_dataclass_arguments

    parser = algorithms.add_parser("ppo", help="online PPO in an environment, lm-human-preferences details",
                                   description="online PPO; options are the fields of trainers.algorithms.ppo.config.PPOConfig")
    add_dataclass_arguments(parser, PPOConfig)
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    parser.set_defaults(func=cmd_train_ppo)
    return parser


def cmd_malt(args: argparse.Namespace) -> list[RoundManifest]:
    """``rlds-lang malt``: runs the rounds and prints one line per round."""
    from trainers.algorithms.malt.malt import rounds_table, run_malt
    from trainers.core.config import dataclass_from_args

    manifests = run_malt(dataclass_from_args(MALTConfig, args), progress=args.progress)
    print(rounds_table(manifests))
    return manifests


def add_malt_parser(sub: Any) -> None:
    """Adds ``rlds-lang malt`` (every ``MALTConfig`` field is an option)."""
    from trainers.cli.commands import COMMAND_HELP
    from trainers.core.config import add_dataclass_arguments, module_summary

    parser = sub.add_parser("malt", help=COMMAND_HELP["malt"], description=module_summary(MALTConfig))
    add_dataclass_arguments(parser, MALTConfig)
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bars")
    parser.set_defaults(func=cmd_malt)


def cmd_train_online_pbc(args: argparse.Namespace) -> None:
    """``rlds-lang train online_pbc``: runs the rounds with the config built from the command line."""
    from trainers.algorithms.online_pbc import run_online_pbc
    from trainers.core.checkpoint import checkpoint_dir
    from trainers.core.config import dataclass_from_args

    config = dataclass_from_args(OnlinePBCConfig, args)
    for summary in run_online_pbc(config, progress=args.progress):
        print(f"round {summary['round']}: {summary['games']} games, mean return {summary['mean_return']:.3f}, "
              f"kept {summary['kept']} (return >= {summary['kept_min_return']:g}), loss {summary['loss']:.4g}")
    print(f"-> {checkpoint_dir(config.out)}")


__all__ = ["cmd_train_ppo", "add_ppo_parser", "cmd_malt", "add_malt_parser", "cmd_train_online_pbc"]
