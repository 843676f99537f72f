"""Demonstration: on Wordle, a reward model learned from synthetic preference labels ranks held-out games
like their true return.

``rlds-lang results preferences wordle`` records games of several Wordle policies (``loggers.record_and_read``: from
the optimal policy to a policy that never plays a consistent word, so returns spread from 0 to -6), cuts
each recorded episode into clips (``rlds_lang.preferences.segments.clips_from_episode``; a Wordle game fits
in one 40-step clip), splits the *games* into a training and a held-out part, labels ``labels`` random
pairs of training clips with the synthetic labeller (the higher true return wins; ties are "equal"),
trains the ensemble (``trainers.algorithms.reward.trainer.train_reward``) and measures the pairwise accuracy on
``held_out_pairs`` random pairs of held-out clips with different true returns: the share of pairs whose
learned returns are ordered like the true returns. The learned return is the gain-only one
(``trainers.algorithms.reward.scorer.RewardModelScorer``: the members' raw returns scaled by their spread, the reward PPO
is given); the verdict compares its accuracy with the target (0.85 with 2,000 labels). The accuracy of the
zero-mean normalised return (``RewardModel.returns``) is reported beside it: its per-step bias adds
``bias x turns`` to a game's return and so reorders Wordle games of different lengths. Everything is written
to ``OUT/reward_demo.json``.

Example::

    rlds-lang results preferences wordle --labels 2000 --out runs/reward-demo
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rlds_lang.paths import default_run
from trainers.algorithms.reward.config import RewardModelConfig
from trainers.core.model_config import ModelConfig

#: the recorded policies: (registry name, parameters), from strong to weak.
DEMO_POLICIES = (("optimal", {}), ("random_mixture", {"prob_smart": 0.8}), ("random_mixture", {"prob_smart": 0.5}),
                 ("random_mixture", {"prob_smart": 0.2}), ("wrong", {}))


def demo_reward_config() -> RewardModelConfig:
    """The demonstrations' small ensemble: 3 one-layer members, 150 steps at lr 1e-3."""
    return RewardModelConfig(steps=150, lr=1e-3, hidden=32, log_every=50,
                             model=ModelConfig(n_layer=1, n_embd=32, n_head=2, n_positions=32))


@dataclasses.dataclass
class RewardDemoConfig:
    """Sizes of the Wordle reward-learning demonstration."""

    #: recorded games per policy (5 policies).
    games_per_policy: int = 120
    #: share of the games kept out of labelling, for the held-out pairs.
    held_out_fraction: float = 0.3
    #: synthetic labels to train on.
    labels: int = 2000
    #: random held-out pairs with different true returns to measure the ranking on.
    held_out_pairs: int = 1000
    #: steps per clip (40, the preference pipeline's default: a whole Wordle game).
    segment_length: int = 40
    #: the synthetic labeller calls two clips equal when their true returns differ by at most this.
    tolerance: float = 0.0
    #: the synthetic labeller's rate of random answers.
    label_noise: float = 0.0
    #: pairwise held-out accuracy the demonstration must reach.
    target: float = 0.85
    #: seed of recording, pairing and training.
    seed: int = 0
    #: output folder (the reward model's run and ``reward_demo.json``).
    out: str = default_run("reward-demo")
    #: the reward model and its training.
    reward: RewardModelConfig = dataclasses.field(default_factory=demo_reward_config)


def record_clips(config: RewardDemoConfig) -> list[Any]:
    """Clips of ``games_per_policy`` recorded games of every ``DEMO_POLICIES`` policy."""
    from loggers import record_and_read
    from rlds_lang.preferences.segments import clips_from_episode
    from rlds_lang.wordle.env import WordleEnv
    from rlds_lang.wordle.policies import make_policy

    clips = []
    for k, (name, params) in enumerate(DEMO_POLICIES):
        episodes = record_and_read(WordleEnv(seed=config.seed + k), make_policy(name, **params),
                                   config.games_per_policy, seed=config.seed + 100_000 * k, run_name=f"{name}-{k}")
        for episode in episodes:
            clips.extend(clips_from_episode(episode, segment_length=config.segment_length))
    return clips


def random_pairs(clips: Sequence[Any], n: int, rng: np.random.Generator) -> list[tuple[Any, Any]]:
    """``n`` pairs of two different clips drawn at random (a pair may repeat)."""
    picks = [rng.choice(len(clips), size=2, replace=False) for _ in range(n)]
    return [(clips[a], clips[b]) for a, b in picks]


def split_games(clips: Sequence[Any], fraction: float, rng: np.random.Generator) -> tuple[list[Any], list[Any]]:
    """``(training clips, validation clips)``: a ``fraction`` of the clips' games (at least two, so that validation
    pairs exist) drawn with ``rng``, every clip of a game on the same side."""
    games = sorted({clip.source_episode_id for clip in clips})
    if len(games) < 3:
        raise ValueError(f"{len(games)} games: validation holds out whole games, so at least 3 are needed")
    held = set(rng.choice(games, size=min(len(games) - 1, max(2, int(round(fraction * len(games))))), replace=False))
    return ([c for c in clips if c.source_episode_id not in held], [c for c in clips if c.source_episode_id in held])


def ranking_accuracy(model, pairs: Sequence[tuple[Any, Any]]) -> float:
    """Share of pairs with different true returns whose predicted returns are ordered the same way."""
    strict = [(a, b) for a, b in pairs if a.true_return != b.true_return]
    if not strict:
        return float("nan")
    predicted = model.returns([clip for pair in strict for clip in pair])
    true = np.array([[a.true_return, b.true_return] for a, b in strict])
    return float(np.mean(np.sign(predicted[0::2] - predicted[1::2]) == np.sign(true[:, 0] - true[:, 1])))


def run_demo(config: RewardDemoConfig, progress: bool = True, clips: Sequence[Any] | None = None) -> dict[str, Any]:
    """Records, labels, trains and measures (module docstring); returns and writes the results.

    ``clips``: the pool of clips to label instead of ``record_clips(config)`` (e.g. with games of another
    policy added, as ``trainers.experiments.ppo.rlhf`` does).
    """
    from rlds_lang.preferences.labellers import SyntheticLabeller
    from rlds_lang.preferences.types import Judgement
    from trainers.algorithms.reward.scorer import RewardModelScorer
    from trainers.algorithms.reward.trainer import train_reward

    started = time.perf_counter()
    rng = np.random.default_rng(config.seed)
    clips = record_clips(config) if clips is None else list(clips)
    games = sorted({clip.source_episode_id for clip in clips})
    held_games = set(rng.choice(games, size=int(round(config.held_out_fraction * len(games))), replace=False))
    held = [c for c in clips if c.source_episode_id in held_games]
    train_clips = [c for c in clips if c.source_episode_id not in held_games]
    labeller = SyntheticLabeller(config.tolerance, config.label_noise, config.seed)
    # validation holds out whole games, and pairs are drawn within each side (as the preference pipeline's
    # labeller does), so no label is lost to a pair that straddles the two
    fit, check = split_games(train_clips, config.reward.val_fraction, rng)
    val_labels = max(1, int(round(config.labels * config.reward.val_fraction)))
    train, val = ([Judgement(a, b, labeller.label(a, b), labeller="synthetic") for a, b in random_pairs(side, n, rng)]
                  for side, n in ((fit, config.labels - val_labels), (check, val_labels)))
    judgements = train + val
    out = Path(config.out)
    reward_config = dataclasses.replace(config.reward, out=str(out / "reward"), seed=config.seed)
    if progress:
        print(f"{len(clips)} clips of {len(games)} games; {len(train)} training and {len(val)} validation labels; "
              f"training {reward_config.steps} steps", flush=True)
    result = train_reward(reward_config, train, val, progress=progress)
    held_pairs = [(a, b) for a, b in random_pairs(held, 20 * config.held_out_pairs, rng)
                  if a.true_return != b.true_return][:config.held_out_pairs]
    accuracy = ranking_accuracy(RewardModelScorer(result.model), held_pairs)
    results = {"held_out_accuracy": accuracy, "held_out_pairs": len(held_pairs), "target": config.target,
               "held_out_accuracy_normalised": ranking_accuracy(result.model, held_pairs),
               "verdict": "reached" if accuracy >= config.target else "not reached", "labels": len(judgements),
               "train_labels": len(train), "val_labels": len(val), "val_accuracy": result.metrics["val_accuracy"],
               "games": len(games), "held_out_games": len(held_games), "policies": [list(p) for p in DEMO_POLICIES],
               "seconds": time.perf_counter() - started, "config": dataclasses.asdict(config)}
    out.mkdir(parents=True, exist_ok=True)
    (out / "reward_demo.json").write_text(json.dumps(results, sort_keys=True, indent=2))
    return results


__all__ = ["DEMO_POLICIES", "RewardDemoConfig", "demo_reward_config", "record_clips", "random_pairs", "ranking_accuracy", "run_demo",
           "split_games"]
