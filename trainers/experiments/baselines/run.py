"""Trains (resumably) and plays every row of ``trainers.experiments.baselines.settings`` and writes the page.

Each setting's dataset is built (or found built) in ``--data-dir``, its rows are trained into
``<runs>/<setting>/<row>`` (BC first: CHAI, and on LMRL-Gym's Wordle ILQL, CQL and ψ, start from the finished BC
row's transformer), and every row is played with one decoding on the same seeded games (``--games`` from
``--eval-seed``; each evaluation cached beside its run). The token-level value rows play at the β their
held-out games choose (``trainers.experiments.beta_choice``; ``--beta-games 0``: their committed β), the
Decision Transformer at its config's target return and at each of ``--dt-targets``. On the Section-5 data the
token-level value rows are ranked (``trainers.experiments.section5.rank``); in each setting one value row
(``Setting.top_advantage_row``) gets the top-advantage table (``trainers.experiments.top_advantage``).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import Any

from trainers.experiments.baselines.outcome import SettingOutcome, TrainedRun
from trainers.experiments.baselines.settings import (
    DT_TARGETS,
    SETTINGS,
    TOKEN_VALUE,
    Setting,
    setting_scale,
    settings_named,
)
from trainers.experiments.beta_choice import add_beta_choice_arguments, choose_beta, parse_grid, tuning_config
from trainers.experiments.common import (
    DECODINGS,
    Decoding,
    Experiment,
    add_decodings_argument,
    evaluate_run,
    experiment_config,
    slug,
    training_minutes,
)

#: the page, relative to the current directory (the results commands run from the repository).
DOC = Path("docs") / "baselines.md"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``rlds-lang results baselines`` beyond the run folders, row selection and evaluation every
    page of ``rlds-lang results`` has; those it shares with the LMRL-Gym and Section-5 pages are declared by them."""
    from trainers.experiments import section5
    from trainers.experiments.lmrl_gym.run import add_build_workers_argument

    add_decodings_argument(parser, "the one sampling decoding every row plays (default: sample, temperature 1)", 1)
    add_build_workers_argument(parser)
    add_beta_choice_arguments(parser, "the token-level value rows (ILQL, CQL, ψ)")
    section5.add_arguments(parser)
    parser.add_argument("--settings", nargs="+", default=[s.key for s in SETTINGS], choices=[s.key for s in SETTINGS],
                        help="baselines: the settings to train and play (default: all); the page says which it "
                             "left out, and the targets are measured only with lmrl_gym")
    parser.add_argument("--dt-targets", default=",".join(f"{t:g}" for t in DT_TARGETS),
                        help="baselines: the target returns the Decision Transformer is played for (comma-separated)")
    parser.add_argument("--top-advantage-episodes", type=int, default=1000,
                        help="baselines: episodes of the train split the top-advantage table scores")
    parser.add_argument("--lmrl-gym-small", type=int, default=None,
                        help="baselines: cap each split of LMRL-Gym's Wordle at this many games (default: --small), "
                             "so that its half runs at a reduced scale beside a full Section-5 half")
    parser.add_argument("--lmrl-gym-steps", type=int, default=None,
                        help="baselines: optimizer steps of every LMRL-Gym row (default: --steps, else the committed "
                             "ones); the page states the scale it ran at")


def build(setting: Setting, args: argparse.Namespace) -> str:
    """The setting's dataset, built in ``args.data_dir`` unless it is there."""
    from trainers.core.build import tfds_build
    from trainers.experiments.lmrl_gym.run import build_dataset

    small, _ = setting_scale(setting, args)
    if setting.key == "lmrl_gym":
        return build_dataset(args.data_dir, small, args.build_workers)
    return tfds_build("wordle_synthetic", "ilql_adversarial", args.data_dir, small=small)


def bc_lm(runs_root: Path, steps: int) -> Path:
    """The BC row's trained transformer (``<runs_root>/BC/checkpoint/lm``); a clear error unless BC has trained
    all its ``steps``."""
    from trainers.core.checkpoint import checkpoint_dir, checkpoint_step

    checkpoint = checkpoint_dir(runs_root / slug("BC"))
    reached = checkpoint_step(checkpoint) if checkpoint.exists() else 0
    if reached < steps:
        raise ValueError(f"rows that start from the BC row need it finished, but {checkpoint} has {reached} of its "
                         f"{steps} steps: train BC first (--train-only BC)")
    return checkpoint / "lm"


def train_row(setting: Setting, experiment: Experiment, dataset: str, runs_root: Path,
              steps: int | None) -> TrainedRun:
    """Trains (or resumes) one row of ``setting``; a row of ``setting.from_bc`` starts from the finished BC row.
    A key of the setting's training config that the row's config has no field for (the Section-5 data's
    ``gamma`` for BC and DT, which learn no values) is left out for that row."""
    from trainers.algorithms.registry import algorithm_by_name, train
    from trainers.experiments.lmrl_gym.run import check_started_from_bc

    fields = {f.name for f in dataclasses.fields(algorithm_by_name(experiment.algorithm).config_class)}
    shared, start = {k: v for k, v in setting.training.items() if k in fields}, None
    if experiment.name in setting.from_bc:
        start = bc_lm(runs_root, steps if steps is not None else setting.training["steps"])
        # BC's saved lm/ already holds its logit scale in its output layer (ModelConfig.logit_scale)
        shared = {**shared, "model": {**shared["model"], "checkpoint": str(start), "logit_scale": None}}
    config = experiment_config(experiment, dataset, runs_root, steps, shared)
    if start is not None:
        check_started_from_bc(Path(config.out), start.parent)
    result = train(experiment.algorithm, config)
    return TrainedRun(experiment, Path(config.out), config.steps, training_minutes(result))


def play(setting: Setting, trained: dict[str, TrainedRun], dataset: str, args: argparse.Namespace,
         decoding: Decoding) -> SettingOutcome:
    """Plays every trained row of ``setting`` and the scripted reference players on the same seeded games, and
    measures the rows' diagnostics."""
    from trainers.evaluation.guess_quality import reference_results

    eval_config = setting.eval_config(args.games, args.eval_seed)
    held_out = tuning_config(eval_config, args.beta_games)
    grid = parse_grid(args.beta_grid) if args.beta_games > 0 else ()
    results, betas, sweep = [], [], []
    for name, t in trained.items():
        beta = None
        if t.experiment.beta is not None and grid:
            betas.append(choose_beta(t.experiment, t.run, t.steps, held_out, decoding, args.fresh, grid))
            beta = betas[-1].best
        result = evaluate_run(t.experiment, t.run, t.steps, eval_config, decoding, args.fresh, beta)
        results.append(dataclasses.replace(result, name=name))
        if t.experiment.algorithm == "dt":
            sweep = [(target, evaluate_run(t.experiment, t.run, t.steps, eval_config, decoding, args.fresh,
                                           target_return=target)) for target in dt_targets(args.dt_targets)]
    return SettingOutcome(setting, results, sweep, betas, rankings(setting, trained, dataset, args),
                          top_advantage_table(setting, trained, dataset, args), trained,
                          reference_results(eval_config))


def dt_targets(text: str) -> list[float]:
    """``"-6,-4"`` -> ``[-6.0, -4.0]`` in ascending order; a clear error naming the option otherwise."""
    try:
        targets = sorted({float(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise ValueError(f"--dt-targets: expected comma-separated numbers, got {text[:80]!r}") from None
    if len(targets) < 2:
        raise ValueError(f"--dt-targets: the sweep needs at least two target returns, got {text[:80]!r}")
    return targets


def rankings(setting: Setting, trained: dict[str, TrainedRun], dataset: str, args: argparse.Namespace
             ) -> dict[str, Any]:
    """On the Section-5 data: each value row's two Section-5 fractions (``trainers.experiments.section5.rank``),
    or why it is not measured; elsewhere nothing."""
    from trainers.experiments.section5 import Draws, check_recipe, rank, read_games

    if setting.key != "section5":
        return {}
    games = read_games(dataset)
    check_recipe(games)
    draws = Draws.of(games, args.section5_pairs)
    ranks: dict[str, Any] = {}
    for name, t in trained.items():
        if t.experiment.algorithm in TOKEN_VALUE:
            ranks[name] = rank(t.run, draws)
        elif t.experiment.algorithm != "bc" and t.experiment.algorithm != "dt":
            ranks[name] = "not measured: utterance-level Q"
    return ranks


def top_advantage_table(setting: Setting, trained: dict[str, TrainedRun], dataset: str,
                        args: argparse.Namespace) -> str | None:
    """The top-advantage table (10 highest and lowest) of ``setting.top_advantage_row``, if it was trained."""
    from trainers.algorithms.registry import load_agent_model
    from trainers.experiments.top_advantage import top_advantage

    name = setting.top_advantage_row
    if name is None or name not in trained:
        return None
    loaded = load_agent_model(trained[name].run / "checkpoint")
    return top_advantage(loaded, dataset, split="train", episodes=args.top_advantage_episodes).table(10)


def the_decoding(args: argparse.Namespace) -> Decoding:
    """The one decoding every row plays with (``--decodings``, default sampling at temperature 1): utterance-level
    agents sample their candidates, so a greedy decoding is refused."""
    keys = args.decodings or ["sample"]
    if len(keys) != 1 or DECODINGS[keys[0]].greedy:
        raise ValueError(f"results baselines: give one sampling decoding (--decodings sample, t0.3, t0.5 or t0.7), "
                         f"got {keys}: the utterance-level agents sample their candidates")
    return DECODINGS[keys[0]]


def run_baselines(args: argparse.Namespace) -> Path | None:
    """Builds, trains, plays and writes ``args.out`` (default ``docs/baselines.md``); returns its path (None with
    ``--train-only``, which trains the rows named in the chosen settings and stops)."""
    from trainers.evaluation.wordle import save_results
    from trainers.experiments.baselines.document import render_page

    started = time.perf_counter()
    decoding = the_decoding(args)
    dt_targets(args.dt_targets)  # a bad sweep fails before hours of training
    settings = settings_named(args.settings)
    known = {e.name for s in settings for e in s.rows}
    unknown = sorted(set(args.train_only) - known)
    if unknown:
        raise ValueError(f"--train-only {unknown}: rows are {sorted(known)}")
    out = Path(args.out or DOC)
    outcomes = []
    for setting in settings:
        dataset = build(setting, args)
        runs_root = Path(args.runs) / setting.key
        steps = setting_scale(setting, args)[1]
        trained = {e.name: train_row(setting, e, dataset, runs_root, steps) for e in setting.rows
                   if not args.train_only or e.name in args.train_only}
        if not args.train_only:
            outcomes.append(play(setting, trained, dataset, args, decoding))
    if args.train_only:
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    for outcome in outcomes:
        save_results(outcome.results + [r for _, r in outcome.dt_sweep],
                     out.with_name(f"{out.stem}-{outcome.setting.key}.json"))
    document = render_page(outcomes, args, decoding, time.perf_counter() - started)
    out.write_text(document)
    print(document)
    return out


__all__ = ["DOC", "add_arguments", "build", "bc_lm", "train_row", "play",
           "dt_targets", "rankings", "top_advantage_table", "the_decoding", "run_baselines"]
