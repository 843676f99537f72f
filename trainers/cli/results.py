"""``rlds-lang results PAGE``: the commands that regenerate the results pages of ``docs/`` from the experiments of
``trainers.experiments``: ``wordle`` (``docs/results.md``), ``lmrl-gym`` (``docs/lmrl_gym.md``), ``section5``
(``docs/section5.md``), ``ppo`` (``docs/ppo.md``), ``malt`` (``docs/malt.md``), ``malt-roles`` (its two-role section), ``preferences wordle|curves|dot``
(``docs/preference_curves.md``, ``docs/preference_dot.md``) and ``gpu`` (``docs/gpu.md``, from benchmark figures).
Every page's command takes ``--device`` and ``--precision`` (``trainers.core.device``): where its rows train and play. Each page names the command that wrote it and the
commit (``trainers.core.provenance``).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import Any, Callable

from rlds_lang.paths import cache_dir, runs_dir
from trainers.cli.commands import PAGES, LazySubParsers, results_help
from trainers.core.device_options import add_device_arguments
from trainers.core.provenance import command_line
from trainers.experiments.common import (
    DECODINGS,
    add_decodings_argument,
    count_parameters,
    experiment_config,
)


def cmd_results(args: argparse.Namespace) -> Path:
    """``rlds-lang results wordle``: runs every chosen setting and writes the document (plus a PNG and a JSON per
    setting and decoding); returns its path."""
    from trainers.evaluation.wordle import plot_results, save_results
    from trainers.experiments.results import (
        EXPERIMENTS,
        SETTINGS,
        render,
        render_setting,
        run_setting,
        verdict,
    )

    started = time.perf_counter()
    out = Path(args.out or "docs/results.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    sections, summary = [], []
    config = None
    for key in args.settings:
        outcome = run_setting(SETTINGS[key], args)
        plots = {}
        for decoding, results in outcome.results.items():
            stem = out.with_name(f"{out.stem}-{key}-{decoding}")
            plots[decoding] = plot_results(results, stem.with_suffix(".png")).name
            save_results(results, stem.with_suffix(".json"))
            summary.append(f"- {SETTINGS[key].title}, {DECODINGS[decoding].title}:\n"
                           + "\n".join("  " + line for line in verdict(results).splitlines()))
        config = experiment_config(EXPERIMENTS[0], outcome.dataset, Path(args.runs), args.steps)
        sections.append(render_setting(outcome, plots, args))
    document = render(sections, config, count_parameters(config), time.perf_counter() - started, args,
                      "\n".join(summary))
    out.write_text(document)
    print(document)
    return out


def page_parser(pages: Any, name: str) -> argparse.ArgumentParser:
    """Adds the page ``name`` of ``PAGES`` to ``pages`` with its help line (escaped for argparse) as help and
    description, and ``--device`` / ``--precision`` (where its rows train and play: ``trainers.core.device``)."""
    parser = pages.add_parser(name, help=PAGES[name].replace("%", "%%"), description=PAGES[name])
    add_device_arguments(parser)
    return parser


def add_results_group(sub: Any) -> None:
    """Adds ``rlds-lang results PAGE``: one sub-command per page of ``PAGES``."""
    from trainers.cli.preferences import add_preference_pages_parser

    help_text = results_help()
    group = sub.add_parser("results", help=help_text,
                           description=help_text + "; each page names the command that wrote it and its commit")
    pages = group.add_subparsers(dest="page", required=True, metavar="PAGE", action=LazySubParsers)
    adders = {"wordle": add_wordle_parser, "lmrl-gym": add_lmrl_gym_parser, "section5": add_section5_parser,
              "ppo": add_ppo_results_parser, "malt": add_malt_results_parser,
              "malt-roles": add_malt_roles_results_parser, "baselines": add_baselines_parser, "gpu": add_gpu_parser,
              "preferences": lambda sub: add_preference_pages_parser(sub, PAGES["preferences"])}
    for name, add in adders.items():  # each page's options are built when it is named
        pages.add_lazy(name, PAGES[name], add)


def _add_run_folders(parser: argparse.ArgumentParser, page: str) -> None:
    """The options every page that builds a dataset and trains has: where data, runs and the page go."""
    parser.add_argument("--data-dir", default=str(cache_dir() / "results" / "tfds"),
                        help="TFDS data folder, built there when absent (default: results/tfds in $RLDS_LANG_CACHE "
                             "or the user cache directory)")
    parser.add_argument("--runs", default=str(runs_dir() / "results"),
                        help="training output folders (default: results in $RLDS_LANG_RUNS or the user data "
                             "directory)")
    parser.add_argument("--steps", type=int, default=None, help="override the committed optimizer steps")
    parser.add_argument("--out", default=None, help=f"the document (default: {page})")


def _add_row_selection(parser: argparse.ArgumentParser) -> None:
    """``--small`` and ``--train-only`` (the pages whose rows train one after another)."""
    parser.add_argument("--small", type=int, default=None, help="cap each split (each recipe) at this many games")
    parser.add_argument("--train-only", action="append", default=[], metavar="ROW",
                        help="only build and train (or resume) this row (its name, e.g. 'ILQL'), then stop without "
                             "evaluating; repeat it, or run two such commands side by side on 2 cores, then the "
                             "plain command evaluates and writes the document")


def _add_evaluation(parser: argparse.ArgumentParser, games_help: str = "evaluation games per agent") -> None:
    """``--games``, ``--eval-seed`` and ``--fresh`` (the pages that play their rows on seeded games)."""
    parser.add_argument("--games", type=int, default=2000, help=games_help)
    parser.add_argument("--eval-seed", type=int, default=0)
    parser.add_argument("--fresh", action="store_true", help="re-evaluate even when a result JSON exists")


def _add_trained_page(pages: Any, name: str, page: str, add_options: Callable[[argparse.ArgumentParser], None],
                      run: Callable[[argparse.Namespace], Any], evaluation: bool = True) -> None:
    """Adds the page ``name`` whose rows train one after another into run folders and write ``page``: the run
    folders, row selection and (``evaluation``) seeded-games options, then the page's own (``add_options``); the
    command calls ``run``."""
    parser = page_parser(pages, name)
    _add_run_folders(parser, page)
    _add_row_selection(parser)
    if evaluation:
        _add_evaluation(parser)
    add_options(parser)
    parser.set_defaults(func=run)


def add_wordle_parser(pages: Any) -> None:
    """Adds ``results wordle`` (``docs/results.md``)."""
    from trainers.experiments.results import SETTINGS

    parser = page_parser(pages, "wordle")
    _add_run_folders(parser, "docs/results.md")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS),
                        help="which settings to run (default: all)")
    _add_evaluation(parser, "evaluation games per agent (the document uses 2,000; >= 500 for any claim)")
    add_decodings_argument(parser, "how the agents decode, a table each (default: sample and greedy)")
    parser.add_argument("--sweep-games", type=int, default=500,
                        help="held-out games per β of the β sweep (0 skips the sweep)")
    parser.add_argument("--small", type=int, default=None,
                        help="cap each split (each recipe) at this many games: the build <config>_small<N>, named on "
                             "the page (a smoke run, not a result)")
    parser.set_defaults(func=cmd_results)


def add_lmrl_gym_parser(pages: Any) -> None:
    """Adds ``results lmrl-gym`` (``docs/lmrl_gym.md``; its own options come from ``trainers.experiments.lmrl_gym``)."""
    from trainers.experiments.lmrl_gym.run import add_arguments, run_lmrl_gym

    _add_trained_page(pages, "lmrl-gym", "docs/lmrl_gym.md", add_arguments, run_lmrl_gym)


def add_section5_parser(pages: Any) -> None:
    """Adds ``results section5`` (``docs/section5.md``)."""
    from trainers.experiments.section5 import add_arguments, run_section5

    _add_trained_page(pages, "section5", "docs/section5.md", add_arguments, run_section5, evaluation=False)


def add_baselines_parser(pages: Any) -> None:
    """Adds ``results baselines`` (``docs/baselines.md``; its own options come from
    ``trainers.experiments.baselines.run.add_arguments``)."""
    from trainers.experiments.baselines.run import add_arguments, run_baselines

    _add_trained_page(pages, "baselines", "docs/baselines.md", add_arguments, run_baselines)


def add_gpu_parser(pages: Any) -> None:
    """Adds ``results gpu`` (``docs/gpu.md``, from the figures of ``trainers.experiments.gpu``)."""
    from trainers.experiments.gpu import add_arguments, run_gpu_page

    parser = page_parser(pages, "gpu")
    add_arguments(parser)
    parser.set_defaults(func=run_gpu_page)


def cmd_malt_results(args: argparse.Namespace) -> Path:
    """Reproduces the document (see the module docstring)."""
    from trainers.algorithms.catalog import parse_agent
    from trainers.experiments.malt import (
        COMMITTED,
        SMOKE,
        document,
        evaluate_rows,
        rollout_steps,
        run_arms,
    )
    from trainers.experiments.malt_roles import kept_blocks

    settings = SMOKE if args.smoke else COMMITTED
    started = time.perf_counter()
    agents, arms, differences = run_arms(settings, Path(args.workdir), args.progress)
    given = [(name, path) for name, path, _ in (parse_agent(spec) for spec in args.agent)]
    agents += [(name, path, rollout_steps(path)) for name, path in given]
    rows = evaluate_rows(agents, settings, args.progress)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    command = command_line(args, " ".join(["rlds-lang results malt", *(["--smoke"] if args.smoke else []),
                                           *(f"--agent {spec}" for spec in args.agent)]))
    page = document(rows, arms, settings, time.perf_counter() - started, args.smoke, command, differences, given)
    out.write_text(kept_blocks(out.read_text(), page) if out.exists() else page)  # the two-role section stays
    print(f"results -> {out}")
    return out


def cmd_malt_roles_results(args: argparse.Namespace) -> Path:
    """Runs the two-role experiment (``trainers.experiments.malt_roles``) and splices its section into the page."""
    from trainers.experiments import malt_roles, malt_roles_settings

    settings = malt_roles_settings.SMOKE if args.smoke else malt_roles_settings.COMMITTED
    workdir = Path(args.workdir)
    started, cpu_started = time.perf_counter(), time.process_time()
    agents, arms = malt_roles.run_arms(settings, workdir, args.progress)
    rows = malt_roles.evaluate_rows(agents, settings, args.progress)
    command = command_line(args, "rlds-lang results malt-roles" + (" --smoke" if args.smoke else ""))
    summary, text = malt_roles.section(rows, arms, settings, time.perf_counter() - started, args.smoke, command,
                                       time.process_time() - cpu_started)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(malt_roles.splice(out.read_text() if out.exists() else "# MALT and expert iteration on Wordle\n",
                                     summary, text))
    print(f"results -> {out}")
    return out


def add_malt_page_arguments(parser: Any, folder: str) -> None:
    """The options both sections of ``docs/malt.md`` have: the page, the training folders (``folder`` in the runs
    folder by default), ``--smoke`` and ``--no-progress``."""
    parser.add_argument("--out", default="docs/malt.md",
                        help="the page to write (relative to the current folder: run it from the repository)")
    parser.add_argument("--workdir", default=str(runs_dir() / folder),
                        help=f"training output folders (default: {folder} in $RLDS_LANG_RUNS or the user's runs "
                             "folder)")
    parser.add_argument("--smoke", action="store_true", help="tiny settings (checks the pipeline; not a result)")
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bars")


def add_malt_roles_results_parser(sub: Any) -> None:
    """Adds ``results malt-roles`` (the two-role Wordle section of ``docs/malt.md``)."""
    parser = page_parser(sub, "malt-roles")
    add_malt_page_arguments(parser, "malt_roles_results")
    parser.set_defaults(func=cmd_malt_roles_results)


def add_malt_results_parser(sub: Any) -> None:
    """Adds ``results malt`` (``docs/malt.md``)."""
    parser = page_parser(sub, "malt")
    add_malt_page_arguments(parser, "malt_results")
    parser.add_argument("--agent", action="append", default=[], help="NAME=CHECKPOINT to add a row (e.g. ilql, ppo)")
    parser.set_defaults(func=cmd_malt_results)


def add_ppo_results_parser(sub) -> None:
    """Adds ``results ppo`` (``docs/ppo.md``)."""
    from trainers.experiments.ppo.rlhf import RLHFSizes
    from trainers.experiments.ppo.sentiment import SentimentSizes

    parser = page_parser(sub, "ppo")
    parser.add_argument("--bc", default=str(runs_dir() / "results" / "official" / "bc" / "checkpoint"),
                        help="the BC checkpoint PPO starts from and is compared with (default: the one `rlds-lang "
                             "results wordle` trains under its default --runs)")
    parser.add_argument("--runs", default=str(runs_dir() / "ppo-results"),
                        help="PPO's output folder's parent (default: ppo-results in $RLDS_LANG_RUNS or the user data "
                             "directory)")
    parser.add_argument("--updates", type=int, default=None, help="override the committed PPO updates")
    parser.add_argument("--games", type=int, default=2000, help="evaluation games per agent (>= 2,000 for the claim)")
    parser.add_argument("--eval-seed", type=int, default=0)
    for field in dataclasses.fields(RLHFSizes):
        parser.add_argument(f"--rlhf-{field.name.replace('_', '-')}", dest=f"rlhf_{field.name}", type=int, default=None,
                            help=f"result 2: {field.name} (default {field.default})")
    for field in dataclasses.fields(SentimentSizes):
        parser.add_argument(f"--sentiment-{field.name.replace('_', '-')}", dest=f"sentiment_{field.name}", type=int,
                            default=None, help=f"result 3: {field.name} (default {field.default})")
    parser.add_argument("--section", choices=("all", "3"), default="all",
                        help="3: rerun only result 3 and replace section 3 of --out (sections 1-2 kept)")
    parser.add_argument("--out", default="docs/ppo.md",
                        help="the document (default: docs/ppo.md relative to the current directory: run from the "
                             "repository)")
    parser.add_argument("--no-progress", dest="progress", action="store_false")
    parser.set_defaults(func=cmd_ppo_results)


def cmd_ppo_results(args: argparse.Namespace) -> Path:
    """``rlds-lang results ppo``: runs ``trainers.experiments.ppo.results.run`` (imported when the page runs)."""
    from trainers.experiments.ppo.results import run

    return run(args)


__all__ = ["PAGES", "add_lmrl_gym_parser", "add_malt_results_parser", "add_ppo_results_parser", "add_results_group",
           "add_section5_parser", "page_parser", "add_wordle_parser", "cmd_malt_results", "cmd_results",
           "add_malt_roles_results_parser", "cmd_malt_roles_results", "cmd_ppo_results", "add_baselines_parser", "add_malt_page_arguments"]
