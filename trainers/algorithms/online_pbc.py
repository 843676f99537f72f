"""Online filtered behaviour cloning (online %BC): play, record, keep the best games, clone them, repeat.

LMRL-Gym's "online %BC" row. Each round ``k`` of ``rounds``:

1. play ``games_per_round`` seeded Wordle games with the current policy (game ``i`` of round ``k`` is seeded
   ``play_seed + k * games_per_round + i``), recorded through ``loggers.record`` into
   ``out/round_KKK/logs`` -- so every round is an RLDS log folder like any other dataset;
2. build them into a TFDS dataset (``wordle_synthetic``'s ``manual_dir`` config, ``out/round_KKK/tfds``);
3. train BC for ``steps`` optimizer steps on the top ``top_p`` fraction of the round's games by return
   (``transforms.selection.filter_top_p``, ties to the earlier games), in ``out/round_KKK/bc``, starting
   from the previous round's weights, optimizer and schedule; that checkpoint plays round ``k + 1``.

The current policy is the BC model sampled at temperature 1 over the guess list
(``trainers.algorithms.registry.load_policy``). Round 0 plays ``init_checkpoint`` when given (e.g. an offline BC run),
else LMRL-Gym's random-mixture data policy in the configured lists, so its BC is %BC of fresh data. A round
is finished when ``out/round_KKK/round.json`` exists (its games, mean return, games kept and return
threshold); rerunning the command skips finished rounds and resumes an unfinished one (a half-recorded log
folder is re-recorded: games are seeded, so identically; training resumes from its checkpoint), so
``--rounds`` can be raised later. ``out/checkpoint`` is a copy of the last finished round's model.

Where the defaults come from: ``top_p = 0.3`` is LMRL-Gym's %BC fraction; the setting (431-word list,
``ilql`` rule, ``adversarial_resample``) is LMRL-Gym's Wordle (``rlds_lang.wordle.lmrl_gym``); rounds, games
per round and steps per round are ours, sized for 2 CPU cores (LMRL-Gym does not publish them here).

Example (the CLI: ``rlds-lang train online_pbc --rounds 10 --games_per_round 1000 --steps 300``)::

    from trainers.algorithms.online_pbc import OnlinePBCConfig, run_online_pbc

    rounds = run_online_pbc(OnlinePBCConfig(out="runs/online_pbc", rounds=2, games_per_round=200, steps=50))
    print([r["mean_return"] for r in rounds])
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlds_lang.wordle import lmrl_gym
from trainers.algorithms.bc_config import BCConfig
from trainers.algorithms.online_pbc_config import OnlinePBCConfig
from trainers.core.checkpoint import CHECKPOINT, DATA_STATE, checkpoint_dir, load_state_file
from trainers.core.device import chosen


def round_dir(config: OnlinePBCConfig, k: int) -> Path:
    """The folder of round ``k``."""
    return Path(config.out) / f"round_{k:03d}"


def _round_policy(config: OnlinePBCConfig, k: int):
    """The policy that plays round ``k``: the previous round's BC model, ``init_checkpoint`` or the data policy."""
    from rlds_lang.wordle.policies import RandomMixturePolicy
    from trainers.algorithms.registry import load_policy

    source = checkpoint_dir(round_dir(config, k - 1) / "bc") if k > 0 else config.init_checkpoint
    if not source:
        return RandomMixturePolicy(prob_smart=1.0 - lmrl_gym.PROB_RANDOM_WORD, answers=config.words,
                                   guesses=config.words, rule=config.rule)
    return load_policy(source, allowed_actions=config.words, name=f"online_pbc_round{k:03d}")


def _record_round(config: OnlinePBCConfig, k: int, progress: bool) -> Path:
    """Records round ``k``'s games into its log folder (again from scratch if an earlier call stopped midway)."""
    from loggers import record
    from rlds_lang.wordle.env import WordleEnv

    folder = round_dir(config, k)
    logs, done = folder / "logs", folder / "recorded.json"
    if done.exists():
        return logs
    if logs.exists():
        shutil.rmtree(logs)  # an interrupted recording: seeded games replay identically
    env = WordleEnv(answers=config.words, guesses=config.words, rule=config.rule, mode=config.mode)
    result = record(env, _round_policy(config, k), config.games_per_round, logs, run_name=f"round{k:03d}",
                    seed=config.play_seed + k * config.games_per_round, progress=progress)
    done.write_text(json.dumps({"games": result.num_episodes, "seconds": result.seconds}) + "\n")
    return logs


def _build_round(logs: Path, data_dir: Path) -> str:
    """The round's logs as a TFDS dataset, built as a user would (``tfds build`` of ``wordle_synthetic``'s
    ``manual_dir`` config, ``trainers.core.build.tfds_build``; reused when already built); returns its folder."""
    from trainers.core.build import tfds_build

    return tfds_build("wordle_synthetic", "manual_dir", data_dir, manual_dir=logs, quiet=True)


def _start_from_previous(config: OnlinePBCConfig, k: int) -> None:
    """Round ``k``'s BC run starts from round ``k - 1``'s model, optimizer and schedule (or ``init_checkpoint``
    for round 0), at step 0 of its own ``steps``; nothing is done if the run already has a checkpoint."""
    target = checkpoint_dir(round_dir(config, k) / "bc")
    source = checkpoint_dir(round_dir(config, k - 1) / "bc") if k > 0 else config.init_checkpoint
    if not source or target.exists():
        return
    tmp = target.with_name(CHECKPOINT + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    shutil.copytree(source, tmp)
    shutil.rmtree(tmp / DATA_STATE, ignore_errors=True)  # the previous round's data position: this round reads its own
    state = load_state_file(tmp / "trainer_state.pt", weights_only=False)
    torch.save({**state, "step": 0, "train_seconds": 0.0}, tmp / "trainer_state.pt")  # this round's own time
    tmp.rename(target)


def _returns(logs: Path) -> np.ndarray:
    """Every recorded game's return."""
    from loggers import read_episodes

    return np.asarray([sum(s["reward"] for s in ep["steps"]) for ep in read_episodes(logs)], dtype=np.float64)


def run_round(config: OnlinePBCConfig, k: int, progress: bool = True) -> dict[str, Any]:
    """Plays, records, builds and trains round ``k`` (resuming what an earlier call left); returns its summary."""
    from trainers.algorithms.registry import train
    from transforms.selection import top_p_mask

    folder = round_dir(config, k)
    summary_path = folder / "round.json"
    if summary_path.exists():
        return json.loads(summary_path.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    logs = _record_round(config, k, progress)
    dataset = _build_round(logs, folder / "tfds")
    _start_from_previous(config, k)
    bc = dataclasses.replace(config, dataset=dataset, out=str(folder / "bc"))
    result = train("bc", BCConfig(**{f.name: getattr(bc, f.name) for f in dataclasses.fields(BCConfig)}),
                   progress=progress)
    returns = _returns(logs)
    keep = top_p_mask(returns, config.top_p)
    summary = {"round": k, "games": int(len(returns)), "mean_return": float(returns.mean()),
               "success_rate": float((returns > lmrl_gym.MIN_RETURN).mean()),  # a lost game is six -1s
               "kept": int(keep.sum()), "kept_min_return": float(returns[keep].min()),
               "steps": result.steps, "loss": result.final_metrics.get("loss"),
               # playing and recording, then training (building the round's dataset not counted)
               "seconds": json.loads((folder / "recorded.json").read_text())["seconds"] + result.total_seconds}
    summary_path.write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def run_online_pbc(config: OnlinePBCConfig, progress: bool = True) -> list[dict[str, Any]]:
    """Runs (or resumes) every round on the config's device (``trainers.core.device``: play and BC); ``out/checkpoint``
    becomes the last round's model. Returns the summaries."""
    with chosen(config.device, config.precision):
        summaries = [run_round(config, k, progress) for k in range(config.rounds)]
    final = checkpoint_dir(config.out)
    tmp = final.with_name(CHECKPOINT + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    shutil.copytree(checkpoint_dir(round_dir(config, config.rounds - 1) / "bc"), tmp)
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    (Path(config.out) / "rounds.json").write_text(json.dumps(summaries, indent=2) + "\n")
    return summaries


__all__ = ["OnlinePBCConfig", "round_dir", "run_round", "run_online_pbc"]
