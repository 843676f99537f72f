"""Result 2 of ``docs/ppo.md``: RLHF on Wordle. Synthetic-labeller preferences over recorded Wordle games -> a
reward model (``trainers.algorithms.reward.trainer``) -> PPO from the BC checkpoint against the learned reward; the
true game return of the PPO agent is then measured against its BC start on the same seeded games.

Steps (each resumes: a finished step is read back from its folder under ``runs``):

1. ``reward/``: the preference pool is the games of the reward demonstration's five scripted policies
   (``trainers.experiments.preferences.wordle_demo.DEMO_POLICIES``, optimal to never-consistent) plus ``bc_games`` games of the BC
   start itself sampled at PPO's temperature (so the labels cover the distribution PPO starts from); whole
   games are clips (40 steps), pairs are labelled by the synthetic labeller (higher true return wins) and the
   ensemble is trained by ``trainers.experiments.preferences.wordle_demo.run_demo`` (``reward/reward_demo.json``). The ranking of
   fresh games (new seeds) of the scripted policies and of the BC start is then measured with the learned
   returns PPO is given (``reward/rlhf_reward.json``).
2. ``rlhf/``: ``rlds-lang train ppo --init <bc> --reward model:<runs>/reward/reward`` with ``RLHF_OVERRIDES``:
   PPO never sees the environment's reward; each update logs the learned return it optimised
   (``episode_return``) beside the true one (``true_return``) and the KL to the BC start.
3. The document section (``render``): the evaluation table, computed verdicts (true return vs BC by paired
   standard errors; KL bounded by the controller's target) and ``ppo_rlhf.png`` (true vs learned return and
   KL over PPO updates).

Example (through ``rlds-lang results ppo``, which writes both sections)::

    rlds-lang results ppo --bc runs/bc/checkpoint --games 2000
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np

from trainers.evaluation.stats import paired_separation
from trainers.experiments.preferences.wordle_demo import RewardDemoConfig

#: the committed RLHF PPO run on top of ``PPOConfig``'s recipe defaults (reward: the learned model).
RLHF_OVERRIDES: dict[str, Any] = {"updates": 200, "episodes": 16, "lr": 1e-5, "checkpoint_every": 10}


@dataclasses.dataclass
class RLHFSizes:
    """Sizes of the RLHF pipeline (the committed defaults; smaller for smoke runs)."""

    #: recorded games per scripted policy (5 policies) in the preference pool.
    games_per_policy: int = 120
    #: games of the BC start added to the pool, and fresh BC games for ``bc_accuracy``.
    bc_games: int = 200
    #: synthetic labels the reward model is trained on.
    labels: int = 2000
    #: reward-model training steps (``RewardModelConfig.steps``).
    reward_steps: int = 150
    #: PPO updates against the learned reward (``RLHF_OVERRIDES['updates']`` by default).
    updates: int = RLHF_OVERRIDES["updates"]


def bc_clips(bc: Path, games: int, seed: int, temperature: float, run_name: str) -> list[Any]:
    """Whole-game clips of ``games`` games of the BC checkpoint sampled at ``temperature``."""
    from loggers import record_and_read
    from rlds_lang.preferences.segments import clips_from_episode
    from rlds_lang.wordle.env import WordleEnv
    from trainers.algorithms.registry import load_policy

    env = WordleEnv(seed=seed)
    policy = load_policy(bc, allowed_actions=list(env.guesses.words), name="bc", temperature=temperature, seed=seed)
    episodes = record_and_read(env, policy, games, seed=seed, run_name=run_name)
    return [clip for episode in episodes for clip in clips_from_episode(episode, segment_length=40)]


def fresh_pairs(clips: list[Any], n: int, seed: int) -> list[tuple[Any, Any]]:
    """Up to ``n`` random pairs of ``clips`` with different true returns."""
    from trainers.experiments.preferences.wordle_demo import random_pairs

    pairs = random_pairs(clips, 20 * n, np.random.default_rng(seed))
    return [(a, b) for a, b in pairs if a.true_return != b.true_return][:n]


def train_reward_model(bc: Path, runs: Path, sizes: RLHFSizes, temperature: float, progress: bool) -> dict[str, Any]:
    """Step 1 (module docstring): ``reward_demo.json``'s results plus the ranking accuracies on fresh games; resumes.

    ``fresh_*_accuracy``: share of pairs of unseen games (new seeds) of the scripted policies / of the BC start
    ranked like their true returns by the gain-only returns PPO is given (``RewardModelScorer``);
    ``*_biased_accuracy``: the same with the normaliser's per-step bias (``RewardModel.returns``).
    """
    from trainers.algorithms.reward.model import RewardModel
    from trainers.algorithms.reward.scorer import RewardModelScorer, fit_gain, save_gain
    from trainers.experiments.preferences.wordle_demo import (
        ranking_accuracy,
        record_clips,
        run_demo,
    )

    out = runs / "reward"
    summary_path = out / "rlhf_reward.json"
    if summary_path.is_file():
        return json.loads(summary_path.read_text())
    demo = RewardDemoConfig(games_per_policy=sizes.games_per_policy, labels=sizes.labels, out=str(out))
    demo.reward.steps = sizes.reward_steps
    checkpoint = out / "reward" / "checkpoint"
    if (out / "reward_demo.json").is_file() and (checkpoint / "config.json").is_file():
        results = json.loads((out / "reward_demo.json").read_text())   # trained by an interrupted invocation
    else:
        pool = record_clips(demo) + bc_clips(bc, sizes.bc_games, 7_000_001, temperature, "bc-preferences")
        results = run_demo(demo, progress=progress, clips=pool)
    model = RewardModel.load(checkpoint)
    scorer = RewardModelScorer(model)
    fresh = {"scripted": record_clips(dataclasses.replace(demo, seed=demo.seed + 1_000)),
             "bc": bc_clips(bc, sizes.bc_games, 8_000_003, temperature, "bc-fresh")}
    for name, clips in fresh.items():
        pairs = fresh_pairs(clips, demo.held_out_pairs, 1)
        results.update({f"fresh_{name}_accuracy": ranking_accuracy(scorer, pairs),
                        f"fresh_{name}_biased_accuracy": ranking_accuracy(model, pairs),
                        f"fresh_{name}_pairs": len(pairs), f"fresh_{name}_games": len(clips)})
    gain = fit_gain(scorer, fresh["bc"])
    save_gain(out / "reward", gain, f"{len(fresh['bc'])} fresh games of the BC start {bc}")
    results.update(bc_games=sizes.bc_games, gain=gain)
    summary_path.write_text(json.dumps(results, sort_keys=True, indent=2))
    return results


def train_rlhf(bc: Path, runs: Path, sizes: RLHFSizes, progress: bool) -> tuple[Any, Any]:
    """Steps 1 and 2: ``(reward results, PPOResult)`` of PPO against the learned reward; resumes."""
    from trainers.algorithms.ppo.config import PPOConfig
    from trainers.algorithms.ppo.trainer import train_ppo

    base = PPOConfig()
    reward = train_reward_model(bc, runs, sizes, base.temperature, progress)
    overrides = dict(RLHF_OVERRIDES, updates=sizes.updates)
    config = PPOConfig(init=str(bc), reward=f"model:{runs / 'reward' / 'reward'}", out=str(runs / "rlhf"), **overrides)
    return reward, train_ppo(config, progress=progress)


def curve_rows(metrics_path: Path) -> list[dict[str, float]]:
    """The per-update rows of the RLHF run's ``metrics.jsonl``."""
    from trainers.core.plots import read_metrics

    return read_metrics(metrics_path)


def plot_curves(rows: list[dict[str, float]], path: Path, window: int = 10,
                labels: tuple[str, str] = ("true game return", "learned return (reward model)"),
                ylabel: str = "return per game", kl_label: str = "KL(π ‖ π_BC) per response, nats",
                title: str = "RLHF on Wordle: PPO against a reward model learned from synthetic preferences") -> Path:
    """True vs learned return per PPO update (and their ``window``-update moving means), and the KL, to ``path``
    (``labels``: of the true and the learned curve)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.array([r["step"] for r in rows])
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    for key, label, colour in (("true_return", labels[0], "tab:blue"), ("episode_return", labels[1], "tab:orange")):
        values = np.array([r[key] for r in rows])
        left.plot(steps, values, color=colour, alpha=0.25, lw=0.8)
        k = min(window, len(values))
        smooth = np.convolve(values, np.ones(k) / k, mode="valid")
        left.plot(steps[k - 1:], smooth, color=colour, lw=1.8, label=f"{label}, {k}-update mean")
    left.set_xlabel("PPO update")
    left.set_ylabel(ylabel)
    left.legend(fontsize=8)
    left.grid(alpha=0.3)
    right.plot(steps, [r["objective/kl"] for r in rows], color="tab:red", label=kl_label)
    right.plot(steps, [r["objective/kl_coef"] for r in rows], color="tab:gray", label="β")
    right.set_xlabel("PPO update")
    right.legend(fontsize=8)
    right.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def kl_verdict(rows: list[dict[str, float]], target: float) -> str:
    """Whether the per-response KL to the BC start stayed below the adaptive controller's target at every update."""
    kls = [r["objective/kl"] for r in rows]
    peak, last = max(kls), kls[-1]
    said = ("the KL stayed bounded (below the controller's target at every update)" if peak <= target
            else "the KL exceeded the controller's target")
    return f"- KL to the BC start: max {peak:.3f}, last {last:.3f} nats per response over {len(kls)} updates " \
           f"(target {target:g}): {said}."


def return_verdict(rlhf: Any, bc: Any) -> str:
    """Whether the true game return of the RLHF agent rose above its BC start by more than two paired SEs."""
    diff, se, side = paired_separation(rlhf, bc)
    said = {1: "the true game return rose by more than two paired standard errors.",
            -1: "the true game return fell by more than two paired standard errors.",
            0: "the true game return did not move by two paired standard errors."}[side]
    return f"- RLHF − BC (true return) = {diff:+.3f} ± {se:.3f} over {rlhf.games} games: {said}"


def render_section(results: dict[str, Any], reward: dict[str, Any], ppo_result: Any, rows: list[dict[str, float]],
                   config: Any, eval_config: Any, plot_name: str) -> str:
    """The markdown of section 2 (``results``: evaluation results by agent name, with ``bc`` and ``rlhf``)."""
    from trainers.evaluation.wordle import results_table

    true, learned = np.array([r["true_return"] for r in rows]), np.array([r["episode_return"] for r in rows])
    corr = float(np.corrcoef(true, learned)[0, 1]) if len(rows) > 2 and true.std() and learned.std() else float("nan")
    k = min(10, len(rows))
    first, last = slice(0, k), slice(len(rows) - k, len(rows))
    return f"""## 2. RLHF on Wordle: PPO against a reward model learned from synthetic preferences

Preferences: {reward['labels']} synthetic labels (the higher true return wins) over whole recorded games of the
five scripted policies of `rlds-lang results preferences` ({reward['config']['games_per_policy']} games each) and
{reward['bc_games']} games of the BC start at temperature {config.temperature}; reward-model ensemble of
{reward['config']['reward']['members']} members, {reward['config']['reward']['steps']} steps (validation accuracy
{reward['val_accuracy']:.3f} on {reward['val_labels']} held-out labels).

Share of pairs of fresh games (new seeds; pairs with different true returns) ranked like their true returns:

| games | pairs | learned return PPO is given (gain only) | with the normaliser's per-step bias |
| --- | --- | --- | --- |
| scripted policies, {reward['fresh_scripted_games']} games | {reward['fresh_scripted_pairs']} | {reward['fresh_scripted_accuracy']:.3f} | {reward['fresh_scripted_biased_accuracy']:.3f} |
| BC start, {reward['fresh_bc_games']} games | {reward['fresh_bc_pairs']} | {reward['fresh_bc_accuracy']:.3f} | {reward['fresh_bc_biased_accuracy']:.3f} |

(The bias adds bias × turns to a game's return, which reorders games of different lengths; PPO is given
the gain-only reward, `trainers.algorithms.reward.scorer`, with the gain {reward['gain']:.4g} that gives the BC start's
fresh games learned returns of standard deviation 1, the recipe's normalisation before PPO.)

PPO then trains from the same BC checkpoint with `--reward model:<dir>`: it never sees the game's reward.
Scale-down for the shared 2-core machine: {config.updates} updates × {config.episodes} games
({config.updates * config.episodes:,} games; the recipe ran 1,954 updates × 512 episodes), {reward['labels']}
labels (the recipe's stylistic tasks: 5,000 human comparisons of 4), the BC start's small model; other settings as in
result 1 (`PPOConfig` defaults, lr {config.lr:g}, adaptive β from {config.kl_coef:g} with target {config.kl_target:g}).

{eval_config.games} seeded games per agent, the same games as in result 1 (true game return; Δ paired to `bc`):

{results_table(list(results.values()), baseline="bc")}

Verdicts (computed):
{return_verdict(results["rlhf"], results["bc"])}
{kl_verdict(rows, config.kl_target)}
- Per-update true vs learned return of PPO's own games: correlation {corr:+.2f}; mean of the first {k}
  updates {true[first].mean():+.3f} true / {learned[first].mean():+.3f} learned, of the last {k}
  {true[last].mean():+.3f} true / {learned[last].mean():+.3f} learned.

![true vs learned return and KL over PPO updates]({plot_name})

Training: {ppo_result.updates} updates, {ppo_result.time_text()}.
"""


__all__ = ["RLHF_OVERRIDES", "RLHFSizes", "bc_clips", "fresh_pairs", "train_reward_model", "train_rlhf", "curve_rows", "plot_curves", "kl_verdict", "return_verdict", "render_section"]
