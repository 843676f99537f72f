"""The label-efficiency demonstration: reward-model accuracy against the number of labels, random vs disagreement.

``rlds-lang results preferences curves`` plays random episodes of the moving-dot pixel task (``rlds_lang.moving_dot``,
cut into clips by ``PreferenceEnv``), keeps a share of the episodes out, and labels a fixed validation set of
pairs of held-out clips with different true returns. (Not Wordle: a Wordle game's return is minus its number
of guesses, so any model that learns "longer is worse" orders every pair of whole games, and the curves sit
at 1.0 from the first budget.) Then, for each selection method and seed, it grows one reward-model
ensemble by active learning: ask ``query_batch`` pairs of training clips (``PairSelector``: ``random``, or the
``disagreement`` of the current ensemble over ``candidates`` random candidates per pair, the paper's
choice), label them with the synthetic labeller, train ``steps_per_batch`` steps on every label so far, and
at each budget of ``budgets`` measure the ensemble's accuracy on the validation pairs. The two methods share
the seeds (the same first model initialisation and candidate stream), so their difference is paired.

Writes ``OUT/curves.json``, ``OUT/curves.png`` and, with ``--doc``, a generated markdown page (default
``docs/preference_curves.md``) whose verdicts are computed from the numbers.

Example::

    rlds-lang results preferences curves --out runs/curves --doc docs/preference_curves.md
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rlds_lang.paths import default_run
from trainers.algorithms.reward.config import RewardModelConfig
from trainers.core.provenance import generated_by
from trainers.evaluation.stats import column_standard_errors, sample_difference, separation
from trainers.experiments.preferences.dot import dot_reward_config

METHODS = ("random", "disagreement")


@dataclasses.dataclass
class CurvesConfig:
    """Sizes of the label-efficiency curves (module docstring)."""

    #: random-policy episodes recorded; grid side, episode length and clip length of the moving dot.
    episodes: int = 300
    size: int = 8
    episode_length: int = 20
    segment_length: int = 10
    #: share of the episodes kept out of labelling; the validation pairs come from them.
    held_out_fraction: float = 0.3
    #: validation pairs (held-out clips with different true returns).
    val_pairs: int = 500
    #: label counts at which accuracy is measured, comma-separated (each a multiple of ``query_batch``).
    budgets: str = "25,50,100,200,400"
    #: pairs asked between two rounds of training.
    query_batch: int = 25
    #: training steps after each batch of queries.
    steps_per_batch: int = 15
    #: candidate pairs scored per asked pair for ``disagreement`` (``rlds_lang.preferences.defaults``).
    candidates: int = 10
    #: seeds per method (paired across methods).
    seeds: int = 5
    #: output folder.
    out: str = default_run("preference-curves")
    #: the reward model (the dot demonstration's ensemble of 3 convolutional predictors).
    reward: RewardModelConfig = dataclasses.field(default_factory=dot_reward_config)


def budget_list(config: CurvesConfig) -> list[int]:
    """``config.budgets`` as increasing label counts; an error names the field when they are not."""
    try:
        budgets = [int(b) for b in config.budgets.split(",")]
    except ValueError:
        raise ValueError(f"budgets: expected comma-separated integers, got {config.budgets!r}") from None
    bad = [b for b in budgets if b <= 0 or b % config.query_batch]
    if bad or budgets != sorted(set(budgets)):
        raise ValueError(f"budgets {config.budgets!r} must increase and be multiples of query_batch={config.query_batch}")
    return budgets


def validation_judgements(clips: Sequence[Any], n: int, rng: np.random.Generator) -> list[Any]:
    """``n`` labelled pairs of ``clips`` whose true returns differ (the synthetic labeller's strict answers)."""
    from rlds_lang.preferences.labellers import SyntheticLabeller, judge
    from trainers.experiments.preferences.wordle_demo import random_pairs

    labeller = SyntheticLabeller()
    pairs = [(a, b) for a, b in random_pairs(clips, 20 * n, rng) if a.true_return != b.true_return][:n]
    return [judge(labeller, a, b, "validation") for a, b in pairs]


def grow(method: str, seed: int, train_clips: Sequence[Any], val: Sequence[Any], config: CurvesConfig) -> list[float]:
    """Validation accuracy at each budget for one method and seed (module docstring)."""
    from rlds_lang.preferences.labellers import SyntheticLabeller, judge
    from rlds_lang.preferences.selection import PairSelector
    from trainers.algorithms.reward.trainer import RewardModelTrainer, evaluate

    trainer = RewardModelTrainer(dataclasses.replace(config.reward, seed=seed, val_every=10**9))
    selector = PairSelector(method, disagreement=trainer.disagreement if method == "disagreement" else None,
                            candidates=config.candidates, seed=seed)
    labeller = SyntheticLabeller(seed=seed)
    labels: list[Any] = []
    accuracies = []
    for budget in budget_list(config):
        while len(labels) < budget:
            for pair in selector.select(train_clips, config.query_batch):
                labels.append(judge(labeller, pair.left, pair.right, pair.selection, pair.disagreement))
            for _ in range(config.steps_per_batch):
                trainer.train_step(labels)
        accuracies.append(evaluate(trainer.model, val, config.reward.noise)["accuracy"])
    return accuracies


def run_curves(config: CurvesConfig, progress: bool = True) -> dict[str, Any]:
    """Plays the episodes, grows every (method, seed) ensemble and writes ``curves.json`` and ``curves.png``."""
    from trainers.experiments.preferences.dot import random_clips

    budgets = budget_list(config)
    started = time.perf_counter()
    rng = np.random.default_rng(0)
    clips = random_clips(config.episodes, config.size, config.episode_length, config.segment_length, seed=0)
    episodes = sorted({clip.source_episode_id for clip in clips})
    held = set(rng.choice(episodes, size=int(round(config.held_out_fraction * len(episodes))), replace=False))
    train_clips = [c for c in clips if c.source_episode_id not in held]
    val = validation_judgements([c for c in clips if c.source_episode_id in held], config.val_pairs, rng)
    curves: dict[str, list[list[float]]] = {method: [] for method in METHODS}
    for seed in range(config.seeds):
        for method in METHODS:
            curves[method].append(grow(method, seed, train_clips, val, config))
            if progress:
                print(f"seed {seed} {method}: " + ", ".join(f"{b} labels {a:.3f}"
                                                            for b, a in zip(budgets, curves[method][-1])),
                      file=sys.stderr, flush=True)
    results = {"budgets": budgets, "curves": curves, "val_pairs": len(val), "episodes": len(episodes),
               "clips": len(clips), "held_out_episodes": len(held), "seconds": time.perf_counter() - started,
               "config": dataclasses.asdict(config)}
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "curves.json").write_text(json.dumps(results, indent=2, sort_keys=True))
    plot_curves(results, out / "curves.png")
    return results


def summarise(results: dict[str, Any]) -> list[dict[str, float]]:
    """Per budget: each method's mean accuracy ± standard error over seeds, and the paired difference."""
    rows = []
    arrays = {m: np.asarray(results["curves"][m], dtype=np.float64) for m in METHODS}
    errors = {m: column_standard_errors(values) for m, values in arrays.items()}
    for k, budget in enumerate(results["budgets"]):
        row: dict[str, float] = {"labels": budget}
        for method, values in arrays.items():
            row[method] = float(values[:, k].mean())
            row[f"{method}_se"] = float(errors[method][k])
        row["diff"], row["diff_se"] = sample_difference(arrays["disagreement"][:, k], arrays["random"][:, k])
        rows.append(row)
    return rows


def plot_curves(results: dict[str, Any], path: Path) -> Path:
    """Validation accuracy against labels, one line per method with ± 1 standard error bands."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summarise(results)
    x = [r["labels"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    for method, colour in zip(METHODS, ("tab:blue", "tab:orange")):
        mean = np.array([r[method] for r in rows])
        se = np.nan_to_num(np.array([r[f"{method}_se"] for r in rows]))
        ax.plot(x, mean, marker="o", color=colour, label=f"{method} selection")
        ax.fill_between(x, mean - se, mean + se, color=colour, alpha=0.2)
    ax.set_xscale("log")
    ax.minorticks_off()
    ax.set_xticks(x, [str(v) for v in x])
    ax.set_xlabel("labels")
    ax.set_ylabel(f"validation accuracy ({results['val_pairs']} held-out pairs)")
    ax.set_title("Reward model on moving-dot clips: labels vs accuracy")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def render_doc(results: dict[str, Any], command: str, png: str) -> str:
    """The generated markdown page: setting, table, computed verdicts, the plot."""
    rows = summarise(results)
    c = results["config"]
    n = len(results["curves"]["random"])
    lines = ["# Preference learning: labels vs reward-model accuracy", "",
             f"{generated_by(command)} on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; do not edit by hand.",
             "",
             f"{results['episodes']} random episodes of the moving dot ({c['size']}×{c['size']} image, "
             f"{c['episode_length']} steps) cut into {results['clips']} clips of {c['segment_length']} steps; "
             f"{results['held_out_episodes']} held-out episodes give {results['val_pairs']} validation pairs "
             f"with different true returns. Per method and seed, one ensemble of {c['reward']['members']} grows by "
             f"active learning: {c['query_batch']} pairs asked, then {c['steps_per_batch']} training steps on all "
             f"labels so far (disagreement: the most disputed of {c['candidates']} random candidates per pair; before "
             f"the first training both methods draw the same random pairs). "
             f"{n} seeds, paired across methods; mean ± standard error over seeds.", "",
             "| labels | random | disagreement | disagreement − random | beyond 2 paired SE |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        significant = "yes" if separation(r["diff"], r["diff_se"]) else "no"
        lines.append(f"| {r['labels']} | {r['random']:.3f} ± {r['random_se']:.3f} | {r['disagreement']:.3f} ± "
                     f"{r['disagreement_se']:.3f} | {r['diff']:+.3f} ± {r['diff_se']:.3f} | {significant} |")
    better = [r["labels"] for r in rows if separation(r["diff"], r["diff_se"]) == 1]
    worse = [r["labels"] for r in rows if separation(r["diff"], r["diff_se"]) == -1]
    lines += ["", "Verdicts (computed):",
              f"- disagreement selection beats random by more than two paired SE at: {better or 'no budget'};",
              f"- random beats disagreement by more than two paired SE at: {worse or 'no budget'};",
              f"- accuracy with the most labels: random {rows[-1]['random']:.3f}, disagreement "
              f"{rows[-1]['disagreement']:.3f} (from {rows[0]['random']:.3f} / {rows[0]['disagreement']:.3f} "
              f"at {rows[0]['labels']} labels).", "", f"![labels vs accuracy]({png})", "",
              f"Run time: {results['seconds']:.0f} s on one thread.", ""]
    return "\n".join(lines)


__all__ = ["CurvesConfig", "METHODS", "budget_list", "grow", "plot_curves", "render_doc", "run_curves", "summarise", "validation_judgements"]
