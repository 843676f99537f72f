"""``python -m trainers.experiments.lmrl_gym``: our LMRL-Gym Wordle setting beside LMRL-Gym's published figures.

By default it measures the data (behaviour) policy and the scripted policy on seeded games and prints the table
of ``trainers.experiments.lmrl_gym.setting``; ``--consistency CHECKPOINT`` prints how much of the data's
consistent-word regularity a trained model learned, and ``--linear-reference`` what a linear model of the board
learns of the data (``trainers.experiments.lmrl_gym.linear``). ``--device`` and ``--precision`` say where those two
compute (``auto``: CUDA when present).
"""

from __future__ import annotations

import argparse
from typing import Sequence

from rlds_lang.wordle import lmrl_gym
from trainers.core.device_options import add_device_arguments
from trainers.experiments.lmrl_gym.setting import (
    consistency_learned,
    measure_setting,
    setting_table,
)


def main(argv: Sequence[str] | None = None) -> str:
    """Measures the setting and prints (and returns) the table."""
    from trainers.experiments.lmrl_gym.linear import (
        add_linear_arguments,
        linear_reference_from_args,
    )

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20_000, help="games of the data (behaviour) policy")
    parser.add_argument("--scripted-games", type=int, default=lmrl_gym.PUBLISHED_EVAL_GAMES)
    parser.add_argument("--seed", type=int, default=0, help="game i is seeded with seed + i")
    parser.add_argument("--consistency", action="append", default=[], metavar="CHECKPOINT",
                        help="instead: how much of the data's consistent-word regularity a trained model learned "
                             "(consistency_learned; repeatable)")
    parser.add_argument("--consistency-games", type=int, default=100)
    parser.add_argument("--linear-reference", action="store_true",
                        help="instead: held-out nats per guess of a softmax bilinear in the board and the "
                             "word's spelling (linear_reference)")
    add_linear_arguments(parser)
    add_device_arguments(parser)
    args = parser.parse_args(argv)
    if args.linear_reference:
        table = linear_reference_from_args(args).line()
    elif args.consistency:
        from trainers.algorithms.registry import load_agent_model
        from trainers.core.device import chosen

        with chosen(args.device, args.precision):
            table = "\n".join(f"{path}: {consistency_learned(load_agent_model(path), args.consistency_games).line()}"
                              for path in args.consistency)
    else:
        table = setting_table(*measure_setting(args.games, args.scripted_games, args.seed, progress=True))
    print(table)
    return table


if __name__ == "__main__":
    main()
