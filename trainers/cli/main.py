"""rlds-lang: record, build, load, train and evaluate language RL datasets (RLDS episodes) from the command line.

``rlds-lang demo`` runs the main job small (``trainers.experiments.demo``): record games of a 32-word Wordle, mostly
random play and a minority by an expert, with ``loggers.record``, ``tfds build`` them with
``builders/wordle_synthetic`` (config ``manual_dir``), ``tfds.load`` them back, train BC and ILQL briefly, play them
beside the random player and the expert on the same new games, print the table with the computed verdicts (ILQL
against BC first) and write the run's report and plot (``--doc PATH``: the same as a markdown guide).
``rlds-lang record`` records any Wordle policy to a log folder (``trainers.cli.record``); ``rlds-lang build`` runs
``tfds build`` of a dataset by name, or builds a folder of your own logs (``--name``); ``rlds-lang datasets list|show``
prints the catalog (``trainers.cli.datasets``).
``rlds-lang stats`` prints the statistics table of a built dataset (by folder or by name), with a win rate where the
task has a win rule, and plots its return, episode length and action length distributions to a PNG
(``trainers.cli.stats``). Without the ``train`` extra (PyTorch) the commands that need it say what to install
(``trainers.cli.extras``).
``rlds-lang train bc|ilql --dataset DIR [--field value ...]`` trains an algorithm (every field of its config
dataclass is an option: ``rlds-lang train ilql --help``); it runs unchanged under ``torchrun``.
``rlds-lang eval --agent NAME=CHECKPOINT[,beta=B,greedy=true] [--optimal] --games N`` plays seeded games
with each agent and prints one table (mean reward ± SE, win rate, guesses), writing JSON and a PNG.
``rlds-lang web --data-dir DIR`` serves the browser tool (``creator_web``) on 127.0.0.1:8765.
``rlds-lang malt --task wordle --init CHECKPOINT [--field value ...]`` runs expert-iteration then MALT (response
trees + DPO) rounds (``trainers.algorithms.malt.malt``).
``rlds-lang visdial serve|guesser|tokenizer`` and ``rlds-lang reddit upvotes|tokenizer`` are each task's tools.
``rlds-lang results PAGE`` regenerates a results page of ``docs/`` (``trainers.cli.results``).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from typing import Any, Callable


def cmd_train(args: argparse.Namespace) -> None:
    """Trains ``args.algorithm`` with the config built from the command line's dataclass options."""
    from trainers.algorithms.registry import algorithm_by_name, train
    from trainers.core.config import dataclass_from_args

    config = dataclass_from_args(algorithm_by_name(args.algorithm).config_class, args)
    result = train(args.algorithm, config, progress=args.progress)
    if int(os.environ.get("RANK", "0")) == 0:
        shown = ", ".join(f"{k} {v:.4g}" for k, v in result.final_metrics.items())
        print(f"{args.algorithm}: {result.steps} steps in {result.seconds:.1f} s "
              f"({result.tokens_per_second:,.0f} tokens/s, {100 * result.data_wait_share:.1f}% waiting for data) "
              f"-> {result.out}\n  {shown}")


def cmd_eval(args: argparse.Namespace) -> list:
    """Evaluates every ``--agent`` (and the optimal policy with ``--optimal``) on the same seeded games."""
    if getattr(args, "task", "wordle") == "reddit":
        from trainers.cli.tasks import cmd_reddit_eval

        return cmd_reddit_eval(args)
    if getattr(args, "task", "wordle") == "visdial":
        from trainers.cli.tasks import cmd_visdial_eval

        return cmd_visdial_eval(args)
    from rlds_lang.wordle.policies import OptimalPolicy
    from trainers.algorithms.registry import agent_options, load_policy
    from trainers.evaluation.wordle import (
        EvalConfig,
        evaluate,
        plot_results,
        results_table,
        save_results,
    )

    config = EvalConfig(games=args.games, seed=args.seed, rule=args.rule, mode=args.mode, answers=args.answers,
                        guesses=args.guesses, batch_games=args.batch_games)
    results = []
    for name, path, options in args.agent:
        policy = load_policy(path, allowed_actions=config.guesses, name=name, **agent_options(options))
        results.append(evaluate(policy, config, name=name, progress=args.progress))
    if args.optimal:
        optimal = OptimalPolicy(answers=config.answers, guesses=config.guesses, rule=config.rule)
        results.append(evaluate(optimal, config, name="optimal", progress=args.progress))
    if not results:
        raise SystemExit("rlds-lang eval: give at least one --agent or --optimal")
    print(f"{config.games} games, rule {config.rule}, mode {config.mode}, seed {config.seed}")
    print(results_table(results, baseline=args.baseline))
    if args.out:
        print(f"results -> {save_results(results, args.out)}")
    if args.plot:
        print(f"plot -> {plot_results(results, args.plot)}")
    return results


#: the commands a light install has (no extra needed); ``main`` parses them without importing the others' modules
#: (PyTorch, the servers), so that e.g. ``rlds-lang datasets list`` or a manual-data error answers in seconds.
LIGHT_COMMANDS = ("record", "build", "datasets", "stats")


def build_parser(light_only: bool = False) -> argparse.ArgumentParser:
    """The argument parser of ``rlds-lang``; with ``light_only``, of the ``LIGHT_COMMANDS`` alone. Each command's
    options are built when the command is named (``trainers.cli.commands.LazySubParsers``): ``rlds-lang --help``
    and each command's ``--help`` import what that command's options need, and its run what the run needs."""
    from rlds_lang import __version__
    from trainers.cli.commands import LazySubParsers

    parser = CommandParser(prog="rlds-lang", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"rlds-lang {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=argparse.ArgumentParser,
                                action=LazySubParsers)
    for name, (help_text, add) in command_table(light_only).items():
        sub.add_lazy(name, help_text, add)
    return parser


def added_by(module: str, function: str) -> Callable[[Any], Any]:
    """The parser-adding function ``module.function``, imported when it is called (when its command is named)."""

    def add(sub: Any) -> Any:
        import importlib

        return getattr(importlib.import_module(module), function)(sub)

    return add


def command_table(light_only: bool = False) -> dict[str, tuple[str, Callable[[Any], Any]]]:
    """Every command of ``rlds-lang`` in the order its help lists them: name -> (help line, the function that adds
    its parser). A command whose extra is not installed parses anything and says what to install
    (``trainers.cli.extras``); with ``light_only``, the ``LIGHT_COMMANDS`` alone."""
    from trainers.cli.commands import COMMAND_HELP, results_help, train_help
    from trainers.cli.extras import (
        NEEDS_TRAIN,
        TRAIN_MODULES,
        WEB_MODULES,
        missing_extra,
        missing_modules,
    )

    light = {"record": (COMMAND_HELP["record"], added_by("trainers.cli.record", "add_record_parser")),
             "build": (COMMAND_HELP["build"], added_by("trainers.cli.build", "add_build_parser")),
             "datasets": (COMMAND_HELP["datasets"], added_by("trainers.cli.datasets", "add_datasets_parser")),
             "stats": (COMMAND_HELP["stats"], added_by("trainers.cli.stats", "add_stats_parser"))}
    if light_only:
        return light
    train_missing = missing_modules(TRAIN_MODULES)
    table = {} if train_missing else {"demo": (COMMAND_HELP["demo"], added_by("trainers.cli.demo", "add_demo_parser"))}
    table.update(light)
    if train_missing:
        table.update({name: missing_extra(name, what, "train", train_missing) for name, what in NEEDS_TRAIN.items()})
    else:
        table.update({
            "train": (train_help(), _add_train_parsers),
            "eval": (COMMAND_HELP["eval"], _add_eval_parser),
            "results": (results_help(), added_by("trainers.cli.results", "add_results_group")),
            "malt": (COMMAND_HELP["malt"], added_by("trainers.cli.train", "add_malt_parser")),
            "preferences": (COMMAND_HELP["preferences"], added_by("trainers.cli.preferences", "add_parser")),
            **{group: (help_text, functools.partial(_add_task_group, group))
               for group, (help_text, _) in TASK_GROUPS.items()},
            "top-advantage": (COMMAND_HELP["top-advantage"],
                              added_by("trainers.cli.diagnose", "add_top_advantage_parser")),
        })
    web_missing = missing_modules(WEB_MODULES)
    if web_missing:
        table["web"] = missing_extra("web", "the browser tool (creator_web)", "web", web_missing)
    else:
        table["web"] = (COMMAND_HELP["web"], _add_web_parser)
    return table


class FiledUnder:
    """A sub-command registry that files each command a parser-adding function registers under another name (a
    task group's)."""

    def __init__(self, sub: Any, names: dict[str, str]):
        self.sub, self.names = sub, names

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        """Adds the command ``name`` (renamed) with ``kwargs`` as ``argparse`` would."""
        return self.sub.add_parser(self.names.get(name, name), **kwargs)


class CommandParser(argparse.ArgumentParser):
    """The top-level parser of ``rlds-lang``: it reads a former spelling of a command as today's
    (``trainers.cli.former.canonical_argv``), so former names stay hidden aliases."""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> tuple[argparse.Namespace, list[str]]:
        """``argparse``'s, on the command line in today's spelling."""
        from trainers.cli.former import canonical_argv

        return super().parse_known_args(canonical_argv(sys.argv[1:] if args is None else list(args)), namespace)


#: task group -> (its help, [(parser-adding function of trainers.cli.tasks, former top-level name, name in group)]).
TASK_GROUPS = {
    "visdial": ("Visual Dialogue tools: the answerer/guesser server, the guesser, a subword tokenizer",
                [("add_visdial_serve_parser", "visdial-serve", "serve"),
                 ("add_visdial_guesser_parser", "visdial-guesser", "guesser"),
                 ("add_visdial_parser", "visdial-tokenizer", "tokenizer")]),
    "reddit": ("Reddit tools: the upvote model, a subword tokenizer",
               [("add_reddit_upvotes_parser", "reddit-upvotes", "upvotes"),
                ("add_reddit_parser", "reddit-tokenizer", "tokenizer")]),
}


def _add_task_group(group: str, sub: Any) -> None:
    """``rlds-lang visdial serve|guesser|tokenizer`` or ``rlds-lang reddit upvotes|tokenizer``; the former flat names
    (``visdial-serve``, ...) stay as hidden aliases (``trainers.cli.former``)."""
    from trainers.cli import tasks

    help_text, commands = TASK_GROUPS[group]
    parser = sub.add_parser(group, help=help_text, description=help_text)
    inner = parser.add_subparsers(dest=f"{group}_command", required=True, metavar="COMMAND")
    for function, former, name in commands:
        getattr(tasks, function)(FiledUnder(inner, {former: name}))


def _add_web_parser(sub) -> None:
    from trainers.cli.commands import COMMAND_HELP

    web = sub.add_parser("web", help=COMMAND_HELP["web"])
    web.add_argument("--host", default="127.0.0.1", help="interface to bind (default: this machine only)")
    web.add_argument("--port", type=int, default=8765)
    from creator_web.options import add_data_dir_argument, add_server_arguments

    add_data_dir_argument(web)
    add_server_arguments(web)
    web.set_defaults(func=cmd_web)


def cmd_web(args: argparse.Namespace) -> None:
    """Serves creator_web (imported only here) on ``args.host:args.port`` until interrupted."""
    from creator_web.server import app_options, serve

    serve(args.data_dir, args.host, args.port, **app_options(args))


def _add_train_parsers(sub) -> None:
    from trainers.algorithms.catalog import CATALOG
    from trainers.cli.commands import train_help
    from trainers.core.config import add_dataclass_arguments

    train = sub.add_parser("train", help=train_help())
    algorithms = train.add_subparsers(dest="algorithm", required=True)
    for name, spec in CATALOG.items():
        if name == "ppo":  # online: rollouts instead of a dataset, its own parser below
            continue
        # argparse %-formats help lines (bc's says "%BC"), not descriptions
        parser = algorithms.add_parser(name, help=spec.description.replace("%", "%%"),
                                       description=f"{spec.description}; options are the fields of "
                                                   f"{spec.config_class.__module__}.{spec.config_class.__name__}")
        add_dataclass_arguments(parser, spec.config_class)
        parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
        parser.set_defaults(func=cmd_train)
    from trainers.cli.train import add_ppo_parser

    add_ppo_parser(algorithms)
    from trainers.algorithms.online_pbc_config import OnlinePBCConfig
    from trainers.cli.train import cmd_train_online_pbc

    online = algorithms.add_parser("online_pbc", help="online filtered BC: rounds of play, record, keep the best, BC",
                                   description="options are the fields of trainers.algorithms.online_pbc.OnlinePBCConfig")
    add_dataclass_arguments(online, OnlinePBCConfig)
    online.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    online.set_defaults(func=cmd_train_online_pbc)
    from trainers.cli.preferences import (
        add_train_reward_parser,  # not a token-MDP trainer: its own parser
    )

    add_train_reward_parser(algorithms)


def _add_eval_parser(sub) -> None:
    from trainers.algorithms.catalog import parse_agent
    from trainers.cli.commands import COMMAND_HELP

    ev = sub.add_parser("eval", help=COMMAND_HELP["eval"])
    ev.add_argument("--agent", action="append", default=[], type=parse_agent,
                    help="NAME=CHECKPOINT[,beta=B,greedy=true,temperature=T,target_return=R] (repeatable); ILQL's "
                         "beta defaults to its config's, BC's to 0; target_return: what a Decision Transformer plays for")
    ev.add_argument("--optimal", action="store_true", help="add the optimal policy (upper reference)")
    ev.add_argument("--games", type=int, default=500)
    ev.add_argument("--seed", type=int, default=0)
    ev.add_argument("--rule", default="official", choices=["official", "ilql"])
    ev.add_argument("--mode", default="fixed", choices=["fixed", "adversarial_resample"])
    ev.add_argument("--answers", default="official_answers")
    ev.add_argument("--guesses", default="official_guesses")
    ev.add_argument("--batch-games", type=int, default=64,
                    help="games (Wordle) or episodes (VisDial) an agent plays at once, one batched forward pass per "
                         "turn on its device")
    ev.add_argument("--baseline", default=None, help="agent name to compare every row with (paired)")
    ev.add_argument("--out", default=None, help="write the results as JSON")
    ev.add_argument("--plot", default=None, help="write the results plot (PNG)")
    ev.add_argument("--no-progress", dest="progress", action="store_false")
    ev.add_argument("--task", default="wordle", help="wordle (default), reddit or visdial")
    from trainers.core.device_options import add_device_arguments

    add_device_arguments(ev)
    from trainers.cli.tasks import (
        add_reddit_eval_arguments as add_reddit_eval_arguments,
    )

    add_reddit_eval_arguments(ev)
    from trainers.cli.tasks import (
        add_visdial_eval_arguments as add_visdial_eval_arguments,
    )

    add_visdial_eval_arguments(ev)
    ev.set_defaults(func=cmd_eval)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``rlds-lang`` console script."""
    from trainers.cli.commands import UsageError
    from trainers.cli.former import canonical_argv
    from trainers.core.native_logs import quiet_native_logs
    from trainers.core.provenance import command_line, set_running_command

    quiet_native_logs()  # before any command loads TensorFlow or EnvLogger: their C++ INFO lines stay off
    given = sys.argv[1:] if argv is None else argv
    args = build_parser(light_only=bool(given) and given[0] in LIGHT_COMMANDS).parse_args(given)
    args.argv = canonical_argv(given)
    set_running_command(command_line(args, "rlds-lang"))  # what the checkpoints it saves record
    try:
        if hasattr(args, "device"):  # train, eval, results and the task models (the light commands import no PyTorch)
            run_on_device(args)
        else:
            args.func(args)
    except UsageError as error:  # as argparse's errors are: one line on stderr, exit status 2
        print(f"rlds-lang {args.command}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    except BrokenPipeError:  # the reader of stdout left (`rlds-lang datasets list | head`): stop without a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush has nowhere to fail
        sys.exit(1)
    finally:
        set_running_command(None)


def run_on_device(args: argparse.Namespace) -> None:
    """Runs a command that has ``--device`` and ``--precision`` with them as what ``auto`` means in all it runs
    (``trainers.core.device.chosen``); a device that is absent or malformed stops it before any work, as a usage
    error: one line on stderr naming it, exit status 2."""
    from trainers.core.device import DeviceError, chosen

    try:
        with chosen(args.device, getattr(args, "precision", "auto")):
            args.func(args)
    except DeviceError as error:  # a usage error, as argparse's are: one line on stderr, exit status 2
        print(f"rlds-lang {args.command}: {error}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
