"""``rlds-lang results``, ``rlds-lang malt-results`` and ``rlds-lang ppo-results``: the commands that regenerate
the results pages of ``docs/`` (``docs/results.md``, ``docs/lmrl_gym.md``, ``docs/section5.md``, ``docs/malt.md``,
``docs/ppo.md``) from the experiments of ``trainers.experiments``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import Any

from rlds_lang.paths import cache_dir, runs_dir
from trainers.experiments.common import DECODINGS, count_parameters, experiment_config
from trainers.experiments.malt import (
    COMMITTED,
    MALT_START,
    SMOKE,
    document,
    evaluate_rows,
    rollout_steps,
    run_arm,
    train_bc,
)
from trainers.experiments.ppo.results import run
from trainers.experiments.ppo.rlhf import RLHFSizes
from trainers.experiments.ppo.sentiment import SentimentSizes
from trainers.experiments.results import (
    EXPERIMENTS,
    SETTINGS,
    render,
    render_setting,
    run_setting,
    verdict,
)


def cmd_results(args: argparse.Namespace) -> Path:
    """Runs every chosen setting and writes the document (plus a PNG and a JSON per setting and decoding);
    returns its path."""
    from trainers.evaluation.wordle import plot_results, save_results

    if getattr(args, "page", None) == "baselines":  # the ILQL code's baselines: docs/baselines.md
        from trainers.experiments.baselines.run import run_baselines

        return run_baselines(args)
    if getattr(args, "setting", None) == "lmrl_gym":  # LMRL-Gym's table: its own document (docs/lmrl_gym.md)
        from trainers.experiments.lmrl_gym.run import run_lmrl_gym

        return run_lmrl_gym(args)
    if getattr(args, "setting", None) == "section5":  # the ILQL paper's ranking test: docs/section5.md
        from trainers.experiments.section5 import run_section5

        return run_section5(args)
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


def add_results_parser(sub) -> None:
    """Adds ``rlds-lang results`` to the CLI's subcommands."""
    parser = sub.add_parser("results", help="reproduce docs/results.md (BC, %%BC, ILQL on wordle_synthetic/branch)")
    parser.add_argument("page", nargs="?", choices=["baselines"], default=None,
                        help="baselines: every agent of the ILQL code's comparison on two Wordle settings "
                             "(writes docs/baselines.md)")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS),
                        help="which settings to run (default: all)")
    parser.add_argument("--data-dir", default=str(cache_dir() / "results" / "tfds"),
                        help="where the datasets are built (default: results/tfds in $RLDS_LANG_CACHE or the user "
                             "cache directory)")
    parser.add_argument("--runs", default=str(runs_dir() / "results"),
                        help="training output folders (default: results in $RLDS_LANG_RUNS or 'runs' in the user "
                             "data directory)")
    parser.add_argument("--steps", type=int, default=None, help="override the committed optimizer steps")
    parser.add_argument("--games", type=int, default=2000,
                        help="evaluation games per agent (the document uses 2,000; >= 500 for any claim)")
    parser.add_argument("--eval-seed", type=int, default=0)
    parser.add_argument("--decodings", nargs="+", default=None, choices=list(DECODINGS),
                        help="how the agents decode, a table each (default: sample and greedy; with --setting "
                             "lmrl_gym: greedy and temperatures 0.3, 0.5, 0.7 and 1)")
    parser.add_argument("--sweep-games", type=int, default=500,
                        help="held-out games per β of the β sweep (0 skips the sweep)")
    parser.add_argument("--out", default=None, help="the document (default: docs/results.md, or docs/lmrl_gym.md "
                                                    "with --setting lmrl_gym, relative to the current directory: "
                                                    "run from the repository)")
    parser.add_argument("--fresh", action="store_true", help="re-evaluate even when a result JSON exists")
    from trainers.experiments.lmrl_gym.run import add_arguments
    from trainers.experiments.section5 import add_arguments as add_section5_arguments

    add_arguments(parser)
    add_section5_arguments(parser)
    from trainers.experiments.baselines.run import add_arguments as add_baselines_arguments

    add_baselines_arguments(parser)
    parser.set_defaults(func=cmd_results)


def cmd_malt_results(args: argparse.Namespace) -> Path:
    """Reproduces the document (see the module docstring)."""
    from trainers.algorithms.registry import parse_agent

    settings = SMOKE if args.smoke else COMMITTED
    workdir = Path(args.workdir)
    started = time.perf_counter()
    bc, bc_steps = train_bc(settings, workdir, args.progress)
    agents: list[tuple[str, str, int | None]] = [("bc", str(bc), bc_steps)]
    arms = {}
    for name, ei_rounds in (("ei", settings["rounds"]), ("malt", settings["malt_initial_ei_rounds"])):
        manifests = arms[name] = run_arm(name, bc, ei_rounds, settings, workdir, args.progress)
        if name == "malt" and 0 < ei_rounds < len(manifests):  # what the DPO rounds start from
            start = manifests[:ei_rounds]
            agents.append((MALT_START, start[-1].checkpoint, bc_steps + sum(m.env_steps for m in start)))
        agents.append((name, manifests[-1].checkpoint, bc_steps + sum(m.env_steps for m in manifests)))
    agents += [(name, path, rollout_steps(path)) for name, path, _ in (parse_agent(spec) for spec in args.agent)]
    rows = evaluate_rows(agents, settings, args.progress)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    command = " ".join(["rlds-lang malt-results", *(["--smoke"] if args.smoke else []),
                        *(f"--agent {spec}" for spec in args.agent)])
    out.write_text(document(rows, arms, settings, time.perf_counter() - started, args.smoke, command))
    print(f"results -> {out}")
    return out


def add_malt_results_parser(sub: Any) -> None:
    """Adds ``rlds-lang malt-results``."""
    parser = sub.add_parser("malt-results", help="reproduce docs/malt.md (BC, EI and MALT on Wordle)")
    parser.add_argument("--out", default="docs/malt.md",
                        help="the document (default: docs/malt.md relative to the current directory: run from the "
                             "repository)")
    parser.add_argument("--workdir", default=str(runs_dir() / "malt_results"),
                        help="training output folders (default: malt_results in $RLDS_LANG_RUNS or 'runs' in the "
                             "user data directory)")
    parser.add_argument("--agent", action="append", default=[], help="NAME=CHECKPOINT to add a row (e.g. ilql, ppo)")
    parser.add_argument("--smoke", action="store_true", help="tiny settings (checks the pipeline; not a result)")
    parser.add_argument("--no-progress", dest="progress", action="store_false")
    parser.set_defaults(func=cmd_malt_results)


def add_ppo_results_parser(sub) -> None:
    """Adds ``rlds-lang ppo-results`` to the CLI's subcommands."""
    parser = sub.add_parser("ppo-results", help="reproduce docs/ppo.md (online PPO on Wordle from a BC checkpoint)")
    parser.add_argument("--bc", default=str(runs_dir() / "results" / "official" / "bc" / "checkpoint"),
                        help="the BC checkpoint PPO starts from and is compared with (default: the one `rlds-lang "
                             "results` trains under its default --runs)")
    parser.add_argument("--runs", default=str(runs_dir() / "ppo-results"),
                        help="PPO's output folder's parent (default: ppo-results in $RLDS_LANG_RUNS or 'runs' in the "
                             "user data directory)")
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
    parser.set_defaults(func=run)
