"""``rlds-lang preferences run``: the preference workflows of issue 15 on a task's environment.

Workflows (``--workflow``):

- ``collect-and-train`` (default): an agent plays ``--episodes`` games in ``PreferenceEnv``; clips go through
  the multi-process pipeline (``trainers.preference_pipeline``): labelled, recorded as RLDS under
  ``OUT/preferences``, routed, and the reward model trains in its own process (``OUT/checkpoint``), the
  wrapper switching to the predicted reward after ``--n_initial_training_steps``;
- ``collect-only``: the same without reward training: the labels are recorded and counted (save the
  database: ``OUT/preferences`` is the RLDS log ``builders/preferences`` publishes);
- ``train-only``: trains the reward model from saved preferences (``--preferences DIR``: raw logs or a
  built dataset), routed to train/validation as the pipeline routes them;
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
from typing import Any

import numpy as np

from trainers.preference_pipeline import PipelineConfig

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
    from trainers.preference_pipeline import PreferencePipeline, stop_on_sigterm

    with stop_on_sigterm(), PreferencePipeline(config) as pipeline:
        predictor = pipeline.predictor() if config.train else None
        env = PreferenceEnv(_environment(args.task, config.seed), clip_sink=pipeline.clip_sink, predictor=predictor,
                            n_initial_training_steps=args.n_initial_training_steps, reload_every=args.reload_every)
        steps, _ = _play(env, args, config.seed)
        served = env.reward_source
    return {**pipeline.summary, "environment_steps": steps, "reward_source_at_end": served}


def train_only(config: PipelineConfig, args: argparse.Namespace) -> dict[str, Any]:
    """``train-only``: routes saved judgements into the two databases and trains on them."""
    from loggers.preferences_dataset import read_judgements
    from rlds_lang.preferences.database import RoutedDatabases
    from trainers.reward_training import train_reward

    if not args.preferences:
        raise ValueError("preferences run --workflow train-only needs --preferences DIR (logs or a built dataset)")
    dbs = RoutedDatabases(config.database_capacity, config.val_fraction)
    counts = dbs.extend(read_judgements(args.preferences, "all"))
    reward = dataclasses.replace(config.reward, out=config.out)
    result = train_reward(reward, dbs.train.judgements(), dbs.validation.judgements(), progress=args.progress)
    return {"routed": counts, "val_accuracy": result.metrics.get("val_accuracy"), "checkpoint": str(result.out)}


def use_model(config: PipelineConfig, args: argparse.Namespace) -> dict[str, Any]:
    """``use-model``: the saved reward model serves the reward from the first step; nothing trains."""
    from rlds_lang.preferences.wrapper import PreferenceEnv
    from trainers.reward_model import checkpoint_folder
    from trainers.reward_predictor import CheckpointRewardPredictor

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

    from trainers.reward_training import config_from_args

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
    from trainers.config import add_dataclass_arguments

    prefs = sub.add_parser("preferences", help="preference collection and reward learning workflows")
    actions = prefs.add_subparsers(dest="action", required=True)
    run = actions.add_parser("run", help="collect preferences and/or train or use a reward model",
                             description=__doc__.splitlines()[0])
    run.add_argument("--task", default="wordle", help="the environment (wordle)")
    run.add_argument("--workflow", choices=WORKFLOWS, default="collect-and-train")
    run.add_argument("--episodes", type=int, default=400, help="games the agent plays (collect, use-model)")
    run.add_argument("--prob-smart", type=float, default=0.5, help="the scripted agent's share of consistent guesses")
    run.add_argument("--n_initial_training_steps", type=int, default=10,
                     help="reward-training steps after which the wrapper serves the predicted reward")
    run.add_argument("--reload_every", type=int, default=50, help="environment steps between checkpoint reloads")
    run.add_argument("--preferences", help="train-only: saved preferences (raw logs or a built dataset)")
    run.add_argument("--model", help="use-model: a reward model folder (`rlds-lang train reward --out`)")
    add_dataclass_arguments(run, PipelineConfig)
    run.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    run.set_defaults(func=cmd_preferences_run)


__all__ = ["WORKFLOWS", "add_parser", "cmd_preferences_run", "collect", "train_only", "use_model"]
