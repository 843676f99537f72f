"""Result 3 of ``docs/ppo.md``: RLHF on a sentiment-like text-continuation task, the shape of the recipe's
sentiment task scaled down for CPU. Every step resumes from its folder under ``runs`` (``sentiment/...``).

1. ``base/``: a base LM pretrained by BC on the shipped BSD-licensed corpus (``trainers.experiments.ppo.sentiment_base``).
2. ``preferences/``: the base LM continues every train prompt ``candidates`` (4) times (seeds ``s + j * prompts``;
   fixed-length sampling at PPO's temperature through ``trainers.algorithms.ppo.rollout.RolloutPolicy``, recorded as RLDS
   episodes by ``ContinuationEnv``, reward = VADER compound of the continuation); the synthetic labeller picks
   the best of each prompt's continuations (``trainers.algorithms.reward.comparison.best_of``; a tied top is skipped).
3. ``reward/``: the recipe's reward model (``trainers.algorithms.reward.comparison``: the base LM's transformer with a
   linear head on ``[BOS] prompt [EOO] continuation [EOA]``, one epoch of cross-entropy over the candidates with
   the learning rate annealed to 0), then the gain that gives the base LM's continuations learned scores of
   standard deviation 1 (``trainers.algorithms.reward.scorer.fit_gain``, the recipe's normalisation).
4. ``ppo/``: ``train_ppo`` from the base LM with ``--reward model:<runs>/sentiment/reward`` on the train prompts:
   PPO never sees VADER; each update logs the learned score it optimised (``episode_return``) and VADER's
   (``true_return``), and the KL to the base LM.
5. Evaluation on the held-out test prompts (``samples_per_prompt`` each, the same seeds for both agents): VADER and
   learned score of ``base`` and ``ppo``, paired differences, computed verdicts, ``ppo_sentiment.png``.

Example (through ``rlds-lang results ppo --section 3``, which rewrites only section 3 of ``docs/ppo.md``)::

    rlds-lang results ppo --section 3
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from trainers.core.provenance import generated_by
from trainers.evaluation.stats import sample_difference, sample_separation, standard_error

#: PPO on top of ``PPOConfig``'s recipe defaults for this task (the recipe's sentiment run: query 64 and
#: response 24 tokens, temperature 0.7, truncation on a token; here tokens of the base LM's tokenizer, and lr 1e-4 for the small model).
SENTIMENT_OVERRIDES: dict[str, Any] = {"task": "continuation", "episodes": 32, "query_length": 48,
                                       "response_length": 24, "lr": 1e-4, "constrain_actions": False,
                                       "checkpoint_every": 10}


#: reward training on top of ``ComparisonConfig``'s recipe defaults: lr 3e-4 (the recipe's 5e-5 is for GPT-2
#: 124M; our 2-layer model, its trunk copied from the base LM, needs a larger step), batch 8.
SENTIMENT_REWARD: dict[str, Any] = {"lr": 3e-4, "batch_size": 8}
#: every this-many-th comparison is held out for validation.
VAL_EVERY = 5


@dataclasses.dataclass
class SentimentSizes:
    """Sizes of the pipeline (the committed defaults; smaller for tests)."""

    #: base-LM pretraining steps.
    base_steps: int = 1500
    #: base-LM examples (0 = all).
    base_examples: int = 0
    #: train prompts continued ``candidates`` times for the labels (0 = all).
    preference_prompts: int = 1500
    #: continuations per prompt shown to the labeller, who picks the best (recipe: 4; 2 = pairwise).
    candidates: int = 4
    #: passes of reward training over the labels (recipe: 1).
    reward_epochs: int = 1
    #: reward-model ensemble members.
    reward_members: int = 3
    #: PPO updates.
    updates: int = 50
    #: PPO episodes per update.
    episodes: int = SENTIMENT_OVERRIDES["episodes"]
    #: evaluation samples per test prompt.
    samples_per_prompt: int = 1
    #: evaluation prompts (0 = every test prompt).
    eval_prompts: int = 0


def sample_episodes(checkpoint: Path, examples: Sequence[Any], episodes: int, folder: Path, name: str) -> list[dict]:
    """``episodes`` continuations (seeds ``0..episodes-1``, prompt ``seed mod len(examples)``) of the checkpoint's LM,
    sampled as PPO samples them, recorded once into ``folder`` and read back."""
    from loggers.roundtrip import record_and_read_cached
    from rlds_lang.continuation.env import ContinuationEnv
    from trainers.algorithms.ppo.config import PPOConfig
    from trainers.algorithms.ppo.rollout import RolloutPolicy
    from trainers.algorithms.registry import load_agent_model

    config = PPOConfig(**SENTIMENT_OVERRIDES)
    loaded = load_agent_model(checkpoint)
    policy = RolloutPolicy(loaded.lm, loaded.tokenizer, config.query_length, config.response_length,
                           config.temperature, name=name)
    key = {"checkpoint": str(checkpoint), "step": loaded.step, "prompts": len(examples), "episodes": episodes}
    episodes_read = record_and_read_cached(ContinuationEnv(examples), policy, episodes, folder, key, run_name=name,
                                           seed=0)
    return sorted(episodes_read, key=lambda ep: int(ep["seed"]))


def vader_scores(episodes: Sequence[dict]) -> np.ndarray:
    """The recorded reward (VADER compound) of each one-step episode."""
    return np.array([float(ep["steps"][0]["reward"]) for ep in episodes])


def candidate_groups(episodes: Sequence[dict], prompts: int, candidates: int) -> tuple[list[list[Any]], list[list[float]]]:
    """The ``candidates`` continuations of each prompt as one-step clips (episode ``i + j * prompts`` is candidate
    ``j`` of prompt ``i``) and their VADER scores."""
    from rlds_lang.preferences.segments import clips_from_episode

    clips = [clips_from_episode(ep, segment_length=1)[0] for ep in episodes]
    scores = vader_scores(episodes)
    index = [[i + j * prompts for j in range(candidates)] for i in range(prompts)]
    return [[clips[k] for k in row] for row in index], [[float(scores[k]) for k in row] for row in index]


def train_sentiment_reward(base: Path, runs: Path, sizes: SentimentSizes, progress: bool) -> dict[str, Any]:
    """Steps 2-3 (module docstring): the reward model and its summary (``reward/sentiment_reward.json``); resumes."""
    from rlds_lang.continuation.corpus import corpus_examples
    from trainers.algorithms.reward.comparison import (
        ComparisonConfig,
        build_comparison_model,
        comparison_accuracy,
        label_groups,
        train_on_comparisons,
    )
    from trainers.algorithms.reward.model import RewardModelConfig
    from trainers.algorithms.reward.scorer import RewardModelScorer, fit_gain, save_gain

    out = runs / "reward"
    summary_path = out / "sentiment_reward.json"
    if summary_path.is_file():
        return json.loads(summary_path.read_text())
    examples = corpus_examples("train")
    prompts = min(sizes.preference_prompts or len(examples), len(examples))
    k = sizes.candidates
    episodes = sample_episodes(base, examples[:prompts], k * prompts, runs / "preferences", "base-preferences")
    groups, scores = candidate_groups(episodes, prompts, k)
    comparisons, ties = label_groups(groups, scores)
    val, train = comparisons[::VAL_EVERY], [c for i, c in enumerate(comparisons) if i % VAL_EVERY]
    if not train:
        raise ValueError(f"{len(comparisons)} comparisons of {prompts} prompts: too few to train on ({ties} ties)")
    config = ComparisonConfig(candidates=k, epochs=sizes.reward_epochs, init_from=str(base), **SENTIMENT_REWARD)
    model = build_comparison_model(train[0].candidates[0], RewardModelConfig(
        out=str(out), members=sizes.reward_members, tokenizer="continuation", max_tokens=64), config)
    metrics = train_on_comparisons(model, train, config, progress=progress)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "metrics.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(row, sort_keys=True) + "\n" for row in metrics)
    model.save(out / "checkpoint")
    gain = fit_gain(RewardModelScorer(model), [clip for group in groups for clip in group])
    save_gain(out, gain, f"{k * prompts} continuations of the base LM {base}")
    summary = {"prompts": prompts, "candidates": k, "comparisons": len(comparisons), "ties": ties,
               "train_labels": len(train), "val_labels": len(val), "epochs": config.epochs, "steps": len(metrics),
               "lr": config.lr, "members": sizes.reward_members, "gain": gain,
               "train_accuracy": comparison_accuracy(model, train), "val_accuracy": comparison_accuracy(model, val)}
    summary_path.write_text(json.dumps(summary, sort_keys=True, indent=2))
    return summary


def train_sentiment_ppo(base: Path, runs: Path, sizes: SentimentSizes, progress: bool) -> Any:
    """Step 4: PPO from the base LM against the learned reward on the train prompts; resumes."""
    from rlds_lang.continuation.corpus import corpus_examples
    from rlds_lang.continuation.env import ContinuationEnv
    from trainers.algorithms.ppo.config import PPOConfig
    from trainers.algorithms.ppo.trainer import train_ppo

    overrides = dict(SENTIMENT_OVERRIDES, updates=sizes.updates, episodes=sizes.episodes)
    config = PPOConfig(init=str(base), reward=f"model:{runs / 'reward'}", out=str(runs / "ppo"), **overrides)
    return train_ppo(config, env=ContinuationEnv(corpus_examples("train")), allowed_actions=None, progress=progress)


def learned_scores(episodes: Sequence[dict], reward_dir: Path) -> np.ndarray:
    """The learned score PPO was given (gain-only reward model) of each one-step episode."""
    from trainers.algorithms.ppo.rewards import episode_turns
    from trainers.algorithms.reward.scorer import load_reward_model

    scorer = load_reward_model(reward_dir)
    return np.array(scorer.score_turns([episode_turns(ep)[0] for ep in episodes]))


def evaluate_agents(runs: Path, base: Path, sizes: SentimentSizes) -> dict[str, dict[str, np.ndarray]]:
    """Step 5: VADER and learned scores of ``base`` and ``ppo`` on the same test prompts and seeds."""
    from rlds_lang.continuation.corpus import corpus_examples

    examples = corpus_examples("test")
    examples = examples[:sizes.eval_prompts] if sizes.eval_prompts else examples
    n = len(examples) * sizes.samples_per_prompt
    out = {}
    for name, checkpoint in (("base", base), ("ppo", runs / "ppo" / "checkpoint")):
        episodes = sample_episodes(checkpoint, examples, n, runs / "eval" / name, f"eval-{name}")
        out[name] = {"vader": vader_scores(episodes), "learned": learned_scores(episodes, runs / "reward"),
                     "text": [str(ep["steps"][0]["action"]) for ep in episodes],
                     "prompt": [str(ep["steps"][0]["observation"]["text"]) for ep in episodes]}
    return out


def plot_sentiment(rows: list[dict[str, float]], path: Path) -> Path:
    """VADER vs learned score per PPO update and the KL, to ``path`` (``ppo_rlhf.plot_curves``'s layout)."""
    from trainers.experiments.ppo.rlhf import plot_curves

    return plot_curves(rows, path, labels=("VADER compound (true)", "learned score (reward model)"),
                       ylabel="score per continuation", kl_label="KL(π ‖ π_base) per response, nats",
                       title="Sentiment continuation: PPO against a reward model learned from VADER preferences")


def _row(name: str, scores: dict[str, np.ndarray], base: dict[str, np.ndarray] | None) -> str:
    v, learned = scores["vader"], scores["learned"]
    delta = "— | —" if base is None else "{:+.3f} ± {:.3f} | {:+.3f} ± {:.3f}".format(
        *sample_difference(v, base["vader"]), *sample_difference(learned, base["learned"]))
    return (f"| {name} | {len(v)} | {v.mean():+.3f} ± {standard_error(v):.3f} | {(v > 0.05).mean():.3f} | "
            f"{learned.mean():+.3f} ± {standard_error(learned):.3f} | {delta} |")


def render_section(results: dict[str, dict[str, Any]], reward: dict[str, Any], base_state: dict[str, Any],
                   rows: list[dict[str, float]], config: Any, sizes: SentimentSizes, plot_name: str, command: str) -> str:
    """The markdown of section 3 (``results``: ``evaluate_agents``' scores by agent; ``command``: the one that
    regenerates it)."""
    from trainers.experiments.ppo.rlhf import kl_verdict

    base, ppo = results["base"], results["ppo"]
    unit = "character" if base_state.get("tokenizer", "char") == "char" else "BPE token"
    diff, se, side = sample_separation(ppo["vader"], base["vader"])
    said = {1: "PPO's continuations are more positive (VADER) than the base LM's by more than two paired SEs.",
            -1: "PPO's continuations are less positive (VADER) than the base LM's by more than two paired SEs.",
            0: "PPO and the base LM are not separated by two paired standard errors (VADER)."}[side]
    true, learned = np.array([r["true_return"] for r in rows]), np.array([r["episode_return"] for r in rows])
    corr = float(np.corrcoef(true, learned)[0, 1]) if len(rows) > 2 and true.std() and learned.std() else float("nan")
    k = min(10, len(rows))
    shown = range(0, len(base["text"]), max(1, len(base["text"]) // 6))
    samples = "\n".join(f"| {base['prompt'][i]} | {base['text'][i]} ({base['vader'][i]:+.2f}) | "
                        f"{ppo['text'][i]} ({ppo['vader'][i]:+.2f}) |" for i in list(shown)[:6])
    import datetime

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"""## 3. A sentiment-like continuation task: RLHF against VADER preferences

{generated_by(command)} (the whole document's command also runs it) on {stamp}.

The shape of the recipe's sentiment task, scaled down for the shared 2-core CPU. Corpus: the three data files
of Debian's `fortunes-min` (BSD licence; shipped in `rlds_lang/continuation/data/` with its `COPYRIGHT`, so CI
needs no apt), cut into sentences; a prompt is a sentence's first words, the environment
(`rlds_lang.continuation.env.ContinuationEnv`) takes one continuation and rewards it with VADER's compound
sentiment in [-1, 1] (`vaderSentiment`, a lexicon inside its PyPI wheel) -- the true score, never shown to PPO.

- Base LM: GPT-2 ({config.model.n_layer} layers, {config.model.n_embd} wide) over {unit}s
  ({base_state.get('vocab_size', '?')} ids; the recipe: GPT-2 124M pretrained on WebText) trained by BC for
  {base_state['step']} steps on {base_state['examples']:,} recorded corpus continuations of train sentences (final
  NLL {base_state['final_nll']:.3f} nats per {unit}).
- Labels: the base LM continues each of {reward['prompts']:,} train prompts {reward['candidates']} times; the
  synthetic labeller picks the continuation with the highest VADER score (`trainers.algorithms.reward.comparison.best_of`;
  the recipe: humans pick the best of 4). {reward['ties']:,} prompts whose best score was tied carry no choice and
  are skipped, leaving {reward['comparisons']:,} comparisons ({reward['val_labels']:,} held out).
- Reward model as in the recipe (`trainers.algorithms.reward.comparison`): {reward['members']} member(s), each the base LM's
  transformer with a linear head initialised N(0, 1/√(d+1)) reading prompt + continuation, trained
  {reward['epochs']} epoch(s) ({reward['steps']} steps of {SENTIMENT_REWARD['batch_size']}) with cross-entropy over the {reward['candidates']}
  candidates, lr {reward['lr']:g} annealed linearly to 0 (recipe: 5e-5 for GPT-2 124M); best-of-{reward['candidates']}
  accuracy {reward['train_accuracy']:.3f} on the training comparisons, {reward['val_accuracy']:.3f} held out
  (chance {1 / reward['candidates']:.2f}); gain {reward['gain']:.4g} gives the base LM's continuations learned
  scores of standard deviation 1.
- PPO from the base LM with `--reward model:<dir>`: {config.updates} updates × {config.episodes} continuations
  ({config.updates * config.episodes:,}; the recipe: 1M episodes in batches of 512), query {config.query_length} and
  response {config.response_length} {unit}s (recipe: 64 and 24 BPE tokens), temperature {config.temperature},
  lr {config.lr:g} (recipe 1e-5 for GPT-2 124M), adaptive β from {config.kl_coef:g} with target
  {config.kl_target:g}; other settings are `PPOConfig`'s recipe defaults.

{len(base['vader'])} continuations per agent: {sizes.samples_per_prompt} sample(s) for each held-out test prompt (the
same prompts and seeds for both, sampled at temperature {config.temperature}); Δ is paired to `base`;
positive share = VADER compound > 0.05.

| agent | continuations | VADER ± SE | positive share | learned score ± SE | Δ VADER vs base ± SE | Δ learned vs base ± SE |
| --- | --- | --- | --- | --- | --- | --- |
{_row("base", base, None)}
{_row("ppo", ppo, base)}

Verdicts (computed):
- PPO − base (VADER) = {diff:+.3f} ± {se:.3f} over {len(ppo['vader'])} continuations: {said}
{kl_verdict(rows, config.kl_target)}
- Per-update VADER vs learned score of PPO's own continuations: correlation {corr:+.2f}; mean of the first {k}
  updates {true[:k].mean():+.3f} VADER / {learned[:k].mean():+.3f} learned, of the last {k}
  {true[-k:].mean():+.3f} VADER / {learned[-k:].mean():+.3f} learned.

![VADER vs learned score and KL over PPO updates]({plot_name})

Some test prompts with the two agents' continuations (VADER in brackets):

| prompt | base | ppo |
| --- | --- | --- |
{samples}
"""


def write_section(runs: Path, out: Path, sizes: SentimentSizes, progress: bool, command: str) -> str:
    """Steps 1-5, then the section's markdown (``ppo_sentiment.png`` written beside ``out``; ``command``: the one
    that regenerates the section, which it names)."""
    from trainers.core.checkpoint import load_state_file
    from trainers.experiments.ppo.rlhf import curve_rows
    from trainers.experiments.ppo.sentiment_base import BaseLMConfig, pretrain_base

    root = runs / "sentiment"
    base = pretrain_base(BaseLMConfig(out=str(root / "base"), steps=sizes.base_steps,
                                      max_examples=sizes.base_examples), progress=progress)
    base_state = load_state_file(base / "trainer_state.pt", weights_only=False)
    reward = train_sentiment_reward(base, root, sizes, progress)
    train_sentiment_ppo(base, root, sizes, progress)
    results = evaluate_agents(root, base, sizes)
    rows = curve_rows(root / "ppo" / "metrics.jsonl")
    plot = plot_sentiment(rows, out.parent / "ppo_sentiment.png")
    from trainers.algorithms.ppo.config import PPOConfig
    from trainers.core.config import config_from_dict

    config = config_from_dict(PPOConfig, json.loads((root / "ppo" / "config.json").read_text())["config"])
    return render_section(results, reward, base_state, rows, config, sizes, plot.name, command)


__all__ = ["SENTIMENT_OVERRIDES", "SENTIMENT_REWARD", "VAL_EVERY", "SentimentSizes", "sample_episodes", "vader_scores", "candidate_groups",
           "train_sentiment_reward", "train_sentiment_ppo", "learned_scores", "evaluate_agents",
           "plot_sentiment", "render_section", "write_section"]
