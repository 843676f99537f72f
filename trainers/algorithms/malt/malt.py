"""MALT on Wordle: rounds of expert iteration, then rounds of response trees + DPO, from a BC checkpoint.

``rlds-lang malt --task wordle --init runs/bc/checkpoint --rounds 3`` runs ``run_malt``. Round ``r`` (folder
``out/round_XX``) starts from the previous round's checkpoint (round 0 from ``init``):

* the first ``num_initial_ei_rounds`` rounds are expert iteration (``trainers.algorithms.malt.expert_iteration``): sample
  ``ei_games`` games with the current policy, keep those with return >= ``ei_min_return`` (or the top
  ``ei_top_fraction``), BC on them (and on the kept games of compatible earlier EI rounds);
* the others are MALT rounds: from ``trees`` start states grow response trees of the current policy
  (``loggers.trees``: ``branching`` responses at each of the first ``branch_depth`` guesses, every branch
  played to the end), score each node by its expected return and pick pairs (``pair_method``), then DPO
  (``trainers.algorithms.dpo.dpo``) with the round's starting policy as the frozen reference, on the round's pairs and on
  those of compatible earlier MALT rounds (``reuse_rollouts``; EI samples are never used as pairs).

Every round's data is an RLDS log folder (``samples``/``kept`` or ``trees``), its model a checkpoint
(``train/checkpoint``), and ``round.json`` records what it did (environment steps, returns, pairs, an
optional evaluation). A MALT round whose trees give no preference pair trains nothing: it is recorded as
empty, with the reason (``empty_reason``), and passes the previous round's checkpoint on (printed, and marked
in the rounds table). Rerunning the same command resumes: finished rounds are skipped, recorded data is
reused, training resumes from its checkpoint.

Where the defaults come from: MALT's reference trainer as its public documentation describes it (Motwani et al.
2024, arXiv 2412.01928):
``branching=2`` responses per decision point, ``positive_negative`` pairs split at the mid-point of the reward
range with values at the threshold counted as positive, plain DPO (``nll_coef=0``, beta 0.1), and each round
trains on its own rollouts only (``reuse_rollouts=False``). ``branch_depth=2`` keeps Wordle trees small (4 games
per start state). DPO and BC settings are those of ``trainers.algorithms.dpo.dpo`` and ``trainers.algorithms.bc``
with fewer steps per round.

Options kept from earlier Wordle runs, with the reason each was used (``trainers.experiments.malt`` sets them):
``nll_coef=1`` (iterative RPO: plain DPO lowered the chosen responses' likelihood from 0.98 to 0.52 in a round, and
the round played worse than its start); ``branching=3`` (the MALT paper's three samples per agent);
``reuse_rollouts=True`` (more pairs per round from compatible earlier trees); ``strict_threshold=True`` (the
earlier rule: a value exactly at the threshold is neither side, which on Wordle's integer returns drops many
sibling groups). Options that Wordle's result needed (measured on held-out games): ``branch_from`` (a BC policy's
first guess is fixed, so trees branch at the 2nd and 3rd guesses), ``dpo_epochs`` (a fixed step count made 37
passes over a round's 64 pairs) and the ``interval`` selector. ``distinct_tries`` (resampling a sibling's
repeated response) gave pairs whose rejected side the policy never samples, and DPO on them changed nothing; it is
off by default.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from loggers import read_episodes
from loggers.trees import TreeSpec, record_trees
from rlds_lang.trees import rebuild_trees
from rlds_lang.wordle.env import WordleEnv
from trainers.algorithms.malt.config import MALTConfig
from trainers.algorithms.malt.expert_iteration import (
    RoundManifest,
    bc_manual_dir,
    record_once,
    reusable_rounds,
    round_seeds,
    sample_and_keep,
)
from trainers.core.device import chosen


def make_env(config: MALTConfig) -> WordleEnv:
    """The task's environment."""
    if config.task != "wordle":
        raise ValueError(f"MALTConfig.task: only 'wordle' is supported, got {config.task!r}")
    return WordleEnv(rule=config.rule, mode=config.mode, seed=config.seed)


def env_config(env: WordleEnv) -> dict[str, Any]:
    """What makes two rounds' games comparable: task, rule, mode and the word lists by hash."""
    return {"task": env.task_name, "rule": env.rule.value, "mode": env.mode.value,
            "answers_sha256": env.answers.sha256, "guesses_sha256": env.guesses.sha256}


def _spec_dict(spec: TreeSpec) -> dict[str, Any]:
    return json.loads(json.dumps(dataclasses.asdict(spec)))


def ei_round(config: MALTConfig, env: WordleEnv, policy: Any, current: Path, r: int, round_dir: Path,
             earlier: list[RoundManifest], progress: bool) -> RoundManifest:
    """One expert-iteration round (see the module docstring)."""
    from trainers.algorithms.bc import BCConfig
    from trainers.algorithms.registry import load_agent_model, train
    from trainers.core.build import built_dataset_dir, tfds_build

    spec = config.tree_spec("ei")
    sampled = sample_and_keep(env, policy, spec, round_seeds(config.seed, r, config.ei_games), round_dir,
                              f"ei-r{r:02d}", config.ei_min_return, config.ei_top_fraction)
    reused = reusable_rounds(earlier, "ei", env_config(env), _spec_dict(spec)) if config.reuse_rollouts else []
    folders = [m.data["kept"] for m in reused] + [str(round_dir / "kept")]
    if int(sampled.keep.sum()) + sum(m.selected for m in reused) == 0:
        raise ValueError(f"EI round {r}: no game reached ei_min_return={config.ei_min_return}; lower it or use "
                         f"ei_top_fraction")
    tfds_dir = round_dir / "tfds"
    manual = bc_manual_dir(round_dir, folders) if built_dataset_dir(tfds_dir) is None else None
    dataset = tfds_build("wordle_synthetic", "manual_dir", tfds_dir, manual_dir=manual, quiet=not progress)
    start = load_agent_model(current)
    bc = BCConfig(dataset=dataset, out=str(round_dir / "train"), steps=config.bc_steps, batch_size=config.bc_batch_size,
                  lr=config.bc_lr, warmup_steps=0, seed=config.seed + r, checkpoint_every=config.bc_steps,
                  model=dataclasses.replace(start.config.model, checkpoint=str(current / "lm")),
                  tokenizer=start.config.tokenizer, max_length=start.config.max_length, shuffle_buffer=4096)
    train("bc", bc, progress=progress)
    return RoundManifest(r, "ei", env_config(env), _spec_dict(spec),
                         {"samples": str(round_dir / "samples"), "kept": str(round_dir / "kept")}, folders,
                         str(round_dir / "train" / "checkpoint"), sampled.env_steps, len(sampled.paths),
                         float(np.mean(sampled.returns)) if len(sampled.returns) else 0.0, int(sampled.keep.sum()))


def malt_round(config: MALTConfig, env: WordleEnv, policy: Any, current: Path, r: int, round_dir: Path,
               earlier: list[RoundManifest], progress: bool) -> RoundManifest:
    """One MALT round: response trees of the current policy, then DPO against it (see the module docstring)."""
    import torch

    from trainers.algorithms.dpo.data import load_tree_episodes, tree_pairs
    from trainers.algorithms.dpo.dpo import DPOConfig
    from trainers.algorithms.dpo.trainer import train_dpo
    from trainers.algorithms.registry import load_agent_model

    spec = config.tree_spec("malt")
    trees_dir = record_once(round_dir / "trees", lambda d: record_trees(
        env, policy, spec, config.trees, d, seeds=round_seeds(config.seed, r, config.trees), run_name=f"malt-r{r:02d}"))
    episodes = list(read_episodes(trees_dir))
    trees = rebuild_trees(episodes)
    returns = [float(t.returns()[leaf, 0]) for t in trees for leaf in np.nonzero(t.is_leaf())[0]]
    reused = reusable_rounds(earlier, "malt", env_config(env), _spec_dict(spec)) if config.reuse_rollouts else []
    folders = [m.data["trees"] for m in reused] + [str(trees_dir)]
    pairs = [p for folder in folders[:-1] for p in tree_pairs(load_tree_episodes(folder))] + tree_pairs(episodes)
    checkpoint, empty_reason = current, ""
    if not pairs:
        empty_reason = (f"no preference pairs in {len(trees)} trees ({sum(t.num_nodes for t in trees)} nodes): no "
                        f"decision point had two responses that pair_method={config.pair_method!r} separates; "
                        f"the policy is passed on untrained")
        print(f"MALT round {r}: {empty_reason}", flush=True)
    else:
        steps = dpo_round_steps(config, len(pairs))
        dpo = DPOConfig(dataset=str(trees_dir), init=str(current), out=str(round_dir / "train"), steps=steps,
                        batch_size=config.dpo_batch_size, lr=config.dpo_lr, beta=config.beta, loss_type=config.loss_type,
                        label_smoothing=config.label_smoothing, nll_coef=config.nll_coef, seed=config.seed + r,
                        checkpoint_every=steps)
        torch.manual_seed(dpo.seed)  # loading draws random initial weights: seeded, as the run is
        train_dpo(dpo, load_agent_model(dpo.init), None, progress, pairs=pairs)
        checkpoint = round_dir / "train" / "checkpoint"
    return RoundManifest(r, "malt", env_config(env), _spec_dict(spec), {"trees": str(trees_dir)}, folders,
                         str(checkpoint), sum(t.num_nodes for t in trees), len(episodes),
                         float(np.mean(returns)) if returns else 0.0, len(pairs), empty_reason=empty_reason)


def dpo_round_steps(config: MALTConfig, pairs: int) -> int:
    """DPO steps of a MALT round with ``pairs`` pairs: ``dpo_steps``, or ``dpo_epochs`` passes over the pairs."""
    if config.dpo_epochs is None:
        return config.dpo_steps
    return max(1, math.ceil(config.dpo_epochs * pairs / config.dpo_batch_size))


def evaluate_round(config: MALTConfig, checkpoint: Path, name: str, progress: bool) -> dict[str, float]:
    """Mean return ± standard error of a round's policy on ``eval_games`` seeded games."""
    from trainers.algorithms.registry import load_policy
    from trainers.evaluation.wordle import EvalConfig, evaluate

    eval_config = EvalConfig(games=config.eval_games, seed=config.eval_seed, rule=config.rule, mode=config.mode)
    policy = load_policy(checkpoint, allowed_actions=eval_config.guesses, name=name)
    result = evaluate(policy, eval_config, name=name, progress=progress)
    return {"games": float(result.games), "mean": float(result.mean_reward), "se": float(result.stderr)}


def refuse_pretrained_start(init: str | Path) -> None:
    """A ``ValueError`` when the checkpoint ``init`` was trained from a pretrained LM (``--model.pretrained``):
    MALT retrains BC each round from the previous round's ``lm/`` folder as ``--model.checkpoint``, a model built
    here with a named tokenizer, while a pretrained LM's tokenizer lives in the checkpoint's ``tokenizer.json``,
    not in ``lm/``, so the rounds would lose it."""
    from trainers.core.checkpoint import read_checkpoint_config

    pretrained = (read_checkpoint_config(init)[1].get("model") or {}).get("pretrained")
    if pretrained:
        raise ValueError(f"MALTConfig.init={str(init)!r} was trained from the pretrained LM {pretrained!r}: MALT does "
                         f"not take one. Its rounds retrain BC from the previous round's lm/ folder with a named "
                         f"tokenizer (--model.checkpoint), and a pretrained LM's own tokenizer is not in that folder; "
                         f"start MALT from a checkpoint of a model built here")


def run_malt(config: MALTConfig, progress: bool = True) -> list[RoundManifest]:
    """Runs (or resumes) every round of ``config`` on its device (``trainers.core.device``: the rounds' sampling,
    BC and DPO); returns the round manifests."""
    with chosen(config.device, config.precision):
        return _run_malt(config, progress)


def _run_malt(config: MALTConfig, progress: bool) -> list[RoundManifest]:
    """``run_malt`` inside its device choice."""
    from trainers.algorithms.registry import load_policy

    if not config.init:
        raise ValueError("MALTConfig.init is empty: give the checkpoint folder of a trained BC policy")
    refuse_pretrained_start(config.init)
    if not 0 <= config.num_initial_ei_rounds <= config.rounds:
        raise ValueError(f"num_initial_ei_rounds={config.num_initial_ei_rounds} must be in [0, rounds={config.rounds}]")
    env = make_env(config)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "malt_config.json").write_text(json.dumps(dataclasses.asdict(config), indent=2, sort_keys=True))
    manifests: list[RoundManifest] = []
    current = Path(config.init)
    for r in range(config.rounds):
        round_dir = out / f"round_{r:02d}"
        manifest = RoundManifest.load(round_dir)
        if manifest is None:
            kind = "ei" if r < config.num_initial_ei_rounds else "malt"
            round_dir.mkdir(parents=True, exist_ok=True)
            policy = load_policy(current, allowed_actions=env.guesses.words, temperature=config.temperature,
                                 name=f"{kind}-r{r:02d}")
            run = ei_round if kind == "ei" else malt_round
            manifest = run(config, env, policy, current, r, round_dir, manifests, progress)
            if config.eval_games:
                manifest.evaluation = evaluate_round(config, Path(manifest.checkpoint), f"{kind}-r{r:02d}", progress)
            manifest.save(round_dir)
        manifests.append(manifest)
        current = Path(manifest.checkpoint)
    return manifests


def rounds_table(manifests: list[RoundManifest]) -> str:
    """One line per round: kind, environment steps, episodes, mean return, selected, evaluation."""
    lines = ["round  kind  env_steps  episodes  mean_return  selected  eval"]
    for m in manifests:
        ev = f"{m.evaluation['mean']:.3f} ± {m.evaluation['se']:.3f}" if m.evaluation else "-"
        lines.append(f"{m.round:5d}  {m.kind:4s}  {m.env_steps:9d}  {m.episodes:8d}  {m.mean_return:11.3f}  "
                     f"{m.selected:8d}  {ev}" + ("" if m.trained else f"  (empty: {m.empty_reason})"))
    return "\n".join(lines)


__all__ = ["MALTConfig", "ei_round", "env_config", "evaluate_round", "malt_round", "make_env", "refuse_pretrained_start",
           "rounds_table", "run_malt"]
