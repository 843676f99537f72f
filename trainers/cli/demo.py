"""``rlds-lang demo``: its options and what it runs (``trainers.experiments.demo``, where its settings live).

Example::

    import argparse
    from trainers.cli.demo import add_demo_parser

    parser = argparse.ArgumentParser(prog="rlds-lang")
    add_demo_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["demo", "--expert-share", "0.5"])
"""

from __future__ import annotations

import argparse
from typing import Any

from rlds_lang.paths import runs_dir
from trainers.experiments.demo import DOC_SEEDS
from trainers.experiments.demo import FULL as DEMO


def open_share(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1 (a share of games that leaves some to each player)."""
    try:
        share = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < share < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (exclusive), got {text}")
    return share


def cmd_demo(args: argparse.Namespace) -> None:
    """Runs ``trainers.experiments.demo`` with the command line's settings; prints its report, writes ``--doc``
    (with the verdicts of ``--doc-seeds`` seeds)."""
    import dataclasses

    from trainers.experiments.demo import run_seeds, timestamped, write_document

    settings = dataclasses.replace(DEMO, episodes=args.episodes, expert_share=args.expert_share,
                                   train_steps=args.train_steps,
                                   eval_games=args.eval_games, beta_games=args.beta_games, seed=args.seed,
                                   workers=args.workers)
    reports = run_seeds(settings, timestamped(args.workdir), args.doc_seeds if args.doc else 1)
    print(reports[0].text())
    if args.doc:
        print(f"guide -> {write_document(reports, args.doc)}")


def add_demo_parser(sub: Any) -> None:
    """Adds ``demo`` to the sub-command parsers ``sub`` of ``rlds-lang``; its defaults are ``DEMO``'s."""
    from trainers.cli.commands import COMMAND_HELP

    demo = sub.add_parser("demo", help=COMMAND_HELP["demo"],
                          description="Records a 32-word Wordle's games, a minority by an expert and the rest by a "
                                      "random player, builds them with tfds build, loads them with tfds.load, "
                                      "trains BC and ILQL on them and plays both beside the random player and the "
                                      "expert on the same new games; prints the table and the computed verdicts "
                                      "(does ILQL beat BC?) and writes the run's report, plot and results into its "
                                      "folder. Settings: trainers/experiments/demo.py.")
    demo.add_argument("--episodes", type=int, default=DEMO.episodes,
                      help=f"games recorded in all, {100 * DEMO.expert_share:.0f}%% of them by the expert "
                           f"(default: {DEMO.episodes})")
    demo.add_argument("--expert-share", type=open_share, default=DEMO.expert_share, metavar="SHARE",
                      help=f"the share of the games the expert plays, between 0 and 1 (default: {DEMO.expert_share}; "
                           "at 0.5 BC already plays much like the expert)")
    demo.add_argument("--train-steps", type=int, default=DEMO.train_steps,
                      help=f"optimizer steps of each trainer (default: {DEMO.train_steps})")
    demo.add_argument("--eval-games", type=int, default=DEMO.eval_games,
                      help=f"evaluation games per agent (default: {DEMO.eval_games})")
    demo.add_argument("--beta-games", type=int, default=DEMO.beta_games,
                      help=f"held-out games per ILQL beta of {list(DEMO.beta_grid)} that choose the one played "
                           f"(default: {DEMO.beta_games})")
    demo.add_argument("--workers", type=int, default=DEMO.workers,
                      help=f"recording processes (default: {DEMO.workers}: in this process)")
    demo.add_argument("--seed", type=int, default=DEMO.seed,
                      help=f"seed of the recorded games, of training and of the evaluation games "
                           f"(default: {DEMO.seed})")
    demo.add_argument("--workdir", default=str(runs_dir()),
                      help="a new timestamped folder under this one holds the run (default: $RLDS_LANG_RUNS or "
                           "'runs' in the user data directory)")
    demo.add_argument("--doc", default=None, metavar="PATH",
                      help="also write the report as a markdown guide to PATH, with its plot beside it as <stem>.png "
                           "(docs/demo.md is made by: rlds-lang demo --doc docs/demo.md)")
    demo.add_argument("--doc-seeds", type=int, default=DOC_SEEDS, metavar="N",
                      help=f"with --doc: run the demo with --seed and the next N-1 seeds and tabulate every seed's "
                           f"verdicts in the guide (default: {DOC_SEEDS})")
    demo.set_defaults(func=cmd_demo)


__all__ = ["open_share", "cmd_demo", "add_demo_parser"]
