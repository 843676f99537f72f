"""``rlds-lang preferences run``: the preference-learning workflows on a task's environment.

Workflows (``--workflow``):

- ``collect-and-train`` (default): an agent plays ``--episodes`` games in ``PreferenceEnv``; clips go through
  the multi-process pipeline (``trainers.algorithms.reward.pipeline``): labelled, recorded as RLDS under
  ``OUT/preferences``, routed, and the reward model trains in its own process (``OUT/checkpoint``), the
  wrapper switching to the predicted reward after ``--n_initial_training_epochs`` epochs over the
  preference database (the reference's switch point and unit; ``--n_initial_training_steps`` counts
  optimizer steps instead);
- ``collect-only``: the same without reward training: the labels are recorded and counted (save the
  database: ``OUT/preferences`` is the RLDS log ``builders/preferences`` publishes);
- ``train-only``: trains the reward model from saved preferences (``--preferences DIR``: raw logs or a
  built dataset), routed to train/validation as the pipeline routes them (by episode; pairs straddling the
  two sides are counted in ``routed`` and used for neither);
- ``use-model``: plays with a saved reward model (``--model DIR``) and no training; prints the mean
  predicted and true returns and their correlation.

Every run writes ``OUT/summary.json``. Example::

    rlds-lang preferences run --task wordle --episodes 400 --out runs/prefs
    rlds-lang preferences run --task wordle --workflow train-only --preferences runs/prefs/preferences --out runs/prefs2
    rlds-lang preferences run --task wordle --workflow use-model --model runs/prefs2 --episodes 200 --out runs/prefs3
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlds_lang.preferences.defaults import INITIAL_TRAINING_EPOCHS
from trainers.algorithms.reward.config import PipelineConfig, RewardModelConfig
from trainers.core.device_options import add_device_arguments
from trainers.core.provenance import command_line
from trainers.experiments.preferences.curves import CurvesConfig, run_curves, summarise
from trainers.experiments.preferences.curves import render_doc as render_curves_doc
from trainers.experiments.preferences.dot import DotDemoConfig, run_dot_demo
from trainers.experiments.preferences.dot import render_doc as render_dot_doc
from trainers.experiments.preferences.wordle_demo import RewardDemoConfig, run_demo

if TYPE_CHECKING:  # the commands import PyTorch when they run, not when their options are built
    from trainers.algorithms.reward.trainer import RewardTrainingResult

WORKFLOWS = ("collect-and-train", "collect-only", "train-only", "use-model")


def _environment(task: str, seed: int) -> Any:
    if task != "wordle":
        raise ValueError(f"preferences run: task {task!r} has no environment here yet (choose wordle)")
    from rlds_lang.wordle.env import WordleEnv

    return WordleEnv(seed=seed)


def _play(env: Any, args: argparse.Namespace, seed: int) -> tuple[int, list[float]]:
    """Plays ``args.episodes`` games of the scripted agent (a progress bar); returns the steps taken and each
    game's return as the environment served it."""
    from tqdm import tqdm

    from rlds_lang.env import run_episode
    from rlds_lang.wordle.policies import make_policy

    policy = make_policy("random_mixture", prob_smart=args.prob_smart)
    steps, returns = 0, []
    for k in tqdm(range(args.episodes), desc="episodes", disable=not args.progress):
        episode = run_episode(env, policy, seed=seed * 1_000_003 + k)
        steps += len(episode.actions)
        returns.append(float(sum(episode.rewards)))
    return steps, returns


def collect(config: PipelineConfig, args: argparse.Namespace) -> dict[str, Any]:
    """``collect-and-train`` / ``collect-only``: the environment feeding the multi-process pipeline."""
    from rlds_lang.preferences.wrapper import PreferenceEnv
    from trainers.algorithms.reward.pipeline import PreferencePipeline, stop_on_sigterm

    with stop_on_sigterm(), PreferencePipeline(config) as pipeline:
        predictor = pipeline.predictor() if config.train else None
        env = PreferenceEnv(_environment(args.task, config.seed), clip_sink=pipeline.clip_sink, predictor=predictor,
                            n_initial_training_epochs=args.n_initial_training_epochs,
                            n_initial_training_steps=args.n_initial_training_steps, reload_every=args.reload_every)
        steps, _ = _play(env, args, config.seed)
        served = env.reward_source
    return {**pipeline.summary, "environment_steps": steps, "reward_source_at_end": served}


def train_only(config: PipelineConfig, args: argparse.Namespace) -> dict[str, Any]:
    """``train-only``: routes saved judgements into the two databases and trains on them."""
    from loggers.preferences_dataset import read_judgements
    from rlds_lang.preferences.database import RoutedDatabases
    from trainers.algorithms.reward.trainer import train_reward

    if not args.preferences:
        raise ValueError("preferences run --workflow train-only needs --preferences DIR (logs or a built dataset)")
    dbs = RoutedDatabases(config.database_capacity, config.val_fraction)
    counts = dbs.extend(read_judgements(args.preferences, "all"))
    reward = dataclasses.replace(config.reward, out=config.out)
    result = train_reward(reward, dbs.train.judgements(), dbs.validation.judgements(), progress=args.progress)
    return {"routed": counts, "val_accuracy": result.metrics.get("val_accuracy"), "checkpoint": str(result.out)}


def use_model(config: PipelineConfig, args: argparse.Namespace) -> dict[str, Any]:
    """``use-model``: the saved reward model serves the reward from the first step; nothing trains."""
    import numpy as np

    from rlds_lang.preferences.wrapper import PreferenceEnv
    from trainers.algorithms.reward.model import checkpoint_folder
    from trainers.algorithms.reward.predictor import CheckpointRewardPredictor

    if not args.model:
        raise ValueError("preferences run --workflow use-model needs --model DIR (a reward model's folder)")
    clips: list[Any] = []  # one clip per game (segment_length 40): they carry the true rewards
    env = PreferenceEnv(_environment(args.task, config.seed), clip_sink=clips.append, n_initial_training_steps=0,
                        predictor=CheckpointRewardPredictor(checkpoint_folder(args.model)), reload_every=0)
    _, predicted = _play(env, args, config.seed)
    true = [clip.true_return for clip in clips]
    correlation = float(np.corrcoef(predicted, true)[0, 1]) if len(set(true)) > 1 else float("nan")
    return {"episodes": args.episodes, "mean_predicted_return": float(np.mean(predicted)),
            "mean_true_return": float(np.mean(true)), "correlation": correlation}


def cmd_preferences_run(args: argparse.Namespace) -> dict[str, Any]:
    """Runs ``args.workflow`` and writes ``OUT/summary.json`` (module docstring)."""
    import torch

    torch.set_num_threads(1)
    config = config_from_args(PipelineConfig(), args)
    config = dataclasses.replace(config, train=args.workflow == "collect-and-train")
    if args.workflow in ("collect-and-train", "collect-only"):
        summary = collect(config, args)
    elif args.workflow == "train-only":
        summary = train_only(config, args)
    else:
        summary = use_model(config, args)
    summary = {"workflow": args.workflow, "task": args.task, **summary}
    Path(config.out).mkdir(parents=True, exist_ok=True)
    (Path(config.out) / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True, default=str))
    print(json.dumps(summary, indent=2, sort_keys=True, default=str))
    return summary


def add_parser(sub) -> None:
    """Adds ``preferences run`` (every ``PipelineConfig`` field an option) to the CLI's subcommands."""
    from trainers.cli.commands import COMMAND_HELP
    from trainers.core.config import add_dataclass_arguments

    prefs = sub.add_parser("preferences", help=COMMAND_HELP["preferences"])
    actions = prefs.add_subparsers(dest="action", required=True)
    run = actions.add_parser("run", help="collect preferences and/or train or use a reward model",
                             description=__doc__.splitlines()[0])
    run.add_argument("--task", default="wordle", help="the environment (wordle)")
    run.add_argument("--workflow", choices=WORKFLOWS, default="collect-and-train")
    run.add_argument("--episodes", type=int, default=400, help="games the agent plays (collect, use-model)")
    run.add_argument("--prob-smart", type=float, default=0.5, help="the scripted agent's share of consistent guesses")
    run.add_argument("--n_initial_training_epochs", type=int, default=INITIAL_TRAINING_EPOCHS,
                     help="reward-training epochs over the preference database after which the wrapper serves the "
                          "predicted reward (the reference's n_initial_training_steps, which count epochs)")
    run.add_argument("--n_initial_training_steps", type=int, default=None,
                     help="count reward-training optimizer steps (mini-batches) for the switch instead of epochs")
    run.add_argument("--reload_every", type=int, default=50, help="environment steps between checkpoint reloads")
    run.add_argument("--preferences", help="train-only: saved preferences (raw logs or a built dataset)")
    run.add_argument("--model", help="use-model: a reward model folder (`rlds-lang train reward --out`)")
    add_dataclass_arguments(run, PipelineConfig)
    run.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    run.set_defaults(func=cmd_preferences_run)


def cmd_reward_demo(args: argparse.Namespace) -> dict[str, Any]:
    """``rlds-lang results preferences wordle [--field value ...]``: runs the demonstration and prints its verdict."""
    import torch

    torch.set_num_threads(1)
    results = run_demo(config_from_args(RewardDemoConfig(), args), progress=args.progress)
    print(f"held-out pairwise accuracy {results['held_out_accuracy']:.3f} on {results['held_out_pairs']} pairs of "
          f"unseen games after {results['labels']} labels (target {results['target']}: {results['verdict']}; "
          f"{results['held_out_accuracy_normalised']:.3f} with the normaliser's per-step bias); "
          f"{results['seconds']:.0f} s -> {Path(results['config']['out']) / 'reward_demo.json'}")
    return results


def add_preference_pages_parser(sub: Any, help_text: str) -> None:
    """Adds ``results preferences wordle|curves|dot`` (every field of each one's config an option) to the pages of
    ``rlds-lang results``."""
    from trainers.core.config import add_dataclass_arguments, module_summary

    demo = sub.add_parser("preferences", help=help_text, description=help_text)
    tasks = demo.add_subparsers(dest="task", required=True, metavar="DEMONSTRATION")
    wordle = tasks.add_parser("wordle", help="Wordle games of 5 policies, synthetic labels, held-out ranking",
                              description=module_summary(RewardDemoConfig))
    add_dataclass_arguments(wordle, RewardDemoConfig)
    add_device_arguments(wordle)
    wordle.add_argument("--no-progress", dest="progress", action="store_false", help="no progress lines")
    wordle.set_defaults(func=cmd_reward_demo)

    add_curves_parser(tasks)

    add_dot_parser(tasks)


def cmd_curves(args: argparse.Namespace) -> dict[str, Any]:
    """``rlds-lang results preferences curves``: runs the curves and, with ``--doc``, writes the generated page."""
    import shutil

    import torch

    torch.set_num_threads(1)
    config = config_from_args(CurvesConfig(), args)
    results = run_curves(config, progress=args.progress)
    for row in summarise(results):
        print(f"{row['labels']:>5} labels: random {row['random']:.3f}, disagreement {row['disagreement']:.3f} "
              f"(diff {row['diff']:+.3f} ± {row['diff_se']:.3f})")
    if args.doc:
        doc = Path(args.doc)
        png = doc.with_suffix(".png")
        shutil.copy(Path(config.out) / "curves.png", png)
        command = command_line(args, "rlds-lang results preferences curves")
        doc.write_text(render_curves_doc(results, command, png.name))
        print(f"wrote {doc} and {png}")
    return results


def add_page_parser(tasks: Any, name: str, help_text: str, config_class: type, func: Any, doc_help: str) -> None:
    """Adds ``results preferences NAME``: every field of ``config_class`` an option, plus ``--doc`` (``doc_help``) and
    ``--no-progress``; it runs ``func``."""
    from trainers.core.config import add_dataclass_arguments, module_summary

    parser = tasks.add_parser(name, help=help_text, description=module_summary(config_class))
    add_dataclass_arguments(parser, config_class)
    add_device_arguments(parser)
    parser.add_argument("--doc", help=doc_help)
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress lines")
    parser.set_defaults(func=func)


def add_curves_parser(tasks: Any) -> None:
    """Adds ``results preferences curves`` (every ``CurvesConfig`` field an option, plus ``--doc``)."""
    add_page_parser(tasks, "curves", "labels vs reward-model accuracy, random vs disagreement selection",
                    CurvesConfig, cmd_curves, "also write this generated markdown page (and its PNG beside it)")


def cmd_dot_demo(args: argparse.Namespace) -> dict[str, Any]:
    """``rlds-lang results preferences dot``: runs the demonstration, prints the verdict, optionally writes the page."""
    import torch

    torch.set_num_threads(1)
    config = config_from_args(DotDemoConfig(), args)
    results = run_dot_demo(config, progress=args.progress)
    for name, row in results["rows"].items():
        print(f"{name:>16}: {row['mean']:.3f} ± {row['se']:.3f}")
    print(f"recovered {results['recovered']:.2f} of the true-reward gain (target {config.margin}: {results['verdict']})")
    if args.doc:
        Path(args.doc).write_text(render_dot_doc(results, command_line(args, "rlds-lang results preferences dot")))
        print(f"wrote {args.doc}")
    return results


def add_dot_parser(tasks: Any) -> None:
    """Adds ``results preferences dot`` (every ``DotDemoConfig`` field an option, plus ``--doc``)."""
    add_page_parser(tasks, "dot", "an agent on a learned reward on the moving-dot pixel task", DotDemoConfig,
                    cmd_dot_demo, "also write this generated markdown page")


def add_train_reward_parser(algorithms) -> None:
    """Adds ``train reward`` (every ``RewardModelConfig`` field an option) to the ``train`` subparsers."""
    from trainers.core.config import add_dataclass_arguments

    parser = algorithms.add_parser("reward", help="reward-model ensemble from preference judgements",
                                   description="reward learning from preferences (Christiano et al. 2017); "
                                               "options are the fields of trainers.algorithms.reward.model.RewardModelConfig")
    add_dataclass_arguments(parser, RewardModelConfig)
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress lines")
    parser.set_defaults(func=cmd_train_reward)


def config_from_args(default: Any, args, prefix: str = "") -> Any:
    """``default`` (a config dataclass instance) with the options ``add_dataclass_arguments`` parsed applied.

    Unlike ``trainers.core.config.dataclass_from_args``, nested configs start from ``default``'s own values (its
    default factories), not from their class defaults.
    """
    given = vars(args)
    changes = {}
    for field in dataclasses.fields(default):
        key, value = f"{prefix}{field.name}", getattr(default, field.name)
        if dataclasses.is_dataclass(value):
            changes[field.name] = config_from_args(value, args, prefix=f"{key}.")
        elif key in given:
            changes[field.name] = given[key]
    return dataclasses.replace(default, **changes)


def cmd_train_reward(args) -> RewardTrainingResult:
    """``rlds-lang train reward --dataset DIR --out DIR [--field value ...]``."""
    import torch

    from trainers.algorithms.reward.trainer import train_reward

    torch.set_num_threads(1)
    result = train_reward(config_from_args(RewardModelConfig(), args), progress=args.progress)
    m = result.metrics
    print(f"reward model: {m['steps']} steps on {m['train_labels']} labels in {m['seconds']:.1f} s; validation "
          f"accuracy {m['val_accuracy']:.3f}, loss {m['val_loss']:.4f} ({m['val_labels']} labels) -> {result.out}")
    return result


__all__ = ["WORKFLOWS", "add_parser", "cmd_preferences_run", "collect", "train_only", "use_model", "cmd_reward_demo", "add_preference_pages_parser", "cmd_curves", "add_curves_parser", "cmd_dot_demo", "add_dot_parser", "add_train_reward_parser", "cmd_train_reward", "config_from_args"]
