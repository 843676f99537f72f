"""The Wordle result of ``docs/results.md``: BC, %BC and ILQL trained on ``wordle_synthetic/branch``, evaluated
beside the optimal policy on the same seeded games; rerun with ``rlds-lang results wordle``.

Everything the result depends on is here: the dataset (built with ``tfds build`` if absent), the committed
configs (``EXPERIMENTS``), the evaluation settings, and the document it writes (tables, plot, settings,
timings). Training resumes from each run's checkpoint, so an interrupted reproduction continues where it
stopped; finished evaluations are reused from their JSON unless ``--fresh``.

Example::

    rlds-lang results wordle                # full: build the datasets, train 6,000 steps, evaluate 2,000 games each, write docs/results.md
    rlds-lang results wordle --steps 50 --games 50 --out runs/results.md    # a quick smoke run

On a 2-core machine the two settings train a little sooner side by side, one torch thread each, than one
after the other on two threads (the small model gains little from a second thread: BC of the committed
size ran at 9.1k + 9.2k tokens/s as two such processes against 16.5k tokens/s alone on two threads, 200
steps each, median after step 50); a last plain invocation then writes the document from the finished
runs and evaluations::

    OMP_NUM_THREADS=1 rlds-lang results wordle --settings paper --out runs/paper.md &
    OMP_NUM_THREADS=1 rlds-lang results wordle --settings official --out runs/official.md &
    wait && rlds-lang results wordle
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
from pathlib import Path

from trainers.core.build import tfds_build
from trainers.core.provenance import command_line, generated_by
from trainers.experiments.beta_choice import TUNING_SEED_OFFSET, tuning_config
from trainers.experiments.common import (
    DECODINGS,
    SHARED,
    Experiment,
    evaluate_run,
    experiment_config,
    training_minutes,
)

#: the ILQL paper's Wordle setting this reproduces (see the document's "Beside the paper" section).
PAPER = "Snell et al. 2022, Offline RL for Natural Language Generation with Implicit Language Q Learning, arXiv 2206.11871"


#: the committed configs of the comparison.
EXPERIMENTS: tuple[Experiment, ...] = (
    Experiment("bc", "bc"),
    Experiment("%bc (top 25%)", "bc", {"top_p": 0.25}),
    Experiment("ilql", "ilql", {"alpha": 0.01}, beta=16.0),
)


#: the decodings of this document's tables unless ``--decodings`` names others (``DECODINGS`` has more).
RESULTS_DECODINGS = ("sample", "greedy")
#: the β values every agent played with a β (ILQL) also plays on held-out games, to show how the advantage
#: perturbation moves its score under each decoding. A diagnostic only: the committed row keeps its own β.
BETA_SWEEP: tuple[float, ...] = (0.0, 1.0, 2.0, 4.0, 8.0, 16.0)


@dataclasses.dataclass(frozen=True)
class Setting:
    """A dataset config and the environment the agents are evaluated in."""

    key: str
    title: str
    dataset_config: str
    rule: str
    mode: str


#: the two settings of the document: the real game, and the ILQL paper's MDP for the comparison with it.
SETTINGS: dict[str, Setting] = {
    "official": Setting("official", "Official Wordle (official colouring, fixed answer)", "branch", "official", "fixed"),
    "paper": Setting("paper", "The ILQL paper's Wordle MDP (ilql colouring, answer redrawn each turn)",
                     "branch_adversarial", "ilql", "adversarial_resample"),
}


@dataclasses.dataclass
class SettingOutcome:
    """What one setting produced: per decoding key, the results (optimal last) and the β sweep on held-out
    games (BC first, then each agent with a β at every ``BETA_SWEEP`` value; empty when not run); the data
    statistics and timings."""

    setting: Setting
    dataset: str
    results: dict[str, list]
    data_table: str
    train_minutes: dict[str, float]
    sweep: dict[str, list] = dataclasses.field(default_factory=dict)


def verdict(results: list) -> str:
    """What the table says about the paper's claims, computed from ``results`` (rows named bc, ilql, %bc...):
    whether ILQL beats BC by more than two standard errors of the paired difference, and where %BC sits."""
    from trainers.evaluation.stats import in_standard_errors, paired_difference, separation

    by_name = {r.name: r for r in results}
    bc, ilql = by_name.get("bc"), by_name.get("ilql")
    pct = next((r for r in results if r.name.startswith("%bc")), None)
    if bc is None or ilql is None:
        return ""
    diff, se = paired_difference(ilql, bc)
    said = {1: "ILQL is clearly better than BC.", -1: "ILQL is clearly worse than BC.",
            0: "not separated by two standard errors."}[separation(diff, se)]
    lines = [f"- ILQL − BC = {diff:+.3f} ± {se:.3f} ({abs(in_standard_errors(diff, se)):.1f} SE): {said}"]
    if pct is not None:
        d_pct, se_pct = paired_difference(pct, ilql)
        low, high = sorted([bc.mean_reward, ilql.mean_reward])
        near = separation(d_pct, se_pct) == 0 and not math.isnan(se_pct)  # an undefined SE shows no nearness
        where = ("between BC and ILQL" if low <= pct.mean_reward <= high else
                 "near ILQL (within two standard errors)" if near else
                 "above both BC and ILQL" if pct.mean_reward > high else "below both BC and ILQL")
        lines.append(f"- {pct.name} − ILQL = {d_pct:+.3f} ± {se_pct:.3f}: %BC sits {where}.")
    return "\n".join(lines)


def run_setting(setting: Setting, args: argparse.Namespace) -> SettingOutcome:
    """Builds the setting's dataset, trains every experiment (resuming), evaluates each with every chosen
    decoding, and the optimal policy once (it has no decoding; its row closes every table)."""
    from rlds_lang.wordle.policies import OptimalPolicy
    from trainers.algorithms.registry import train
    from trainers.evaluation.wordle import EvalConfig, evaluate
    from transforms.loading import load
    from transforms.statistics import compute_statistics

    dataset = tfds_build("wordle_synthetic", setting.dataset_config, args.data_dir, small=args.small)
    runs = Path(args.runs) / setting.key
    eval_config = EvalConfig(games=args.games, seed=args.eval_seed, rule=setting.rule, mode=setting.mode)
    decodings = args.decodings or list(RESULTS_DECODINGS)
    results: dict[str, list] = {key: [] for key in decodings}
    sweep: dict[str, list] = {key: [] for key in decodings} if args.sweep_games > 0 else {}
    # the β sweep's games are the held-out ones of trainers.experiments.beta_choice: game i of a table is seeded
    # eval_seed + i, so a sweep seeded eval_seed + 1 (as before) replayed the table's seeds shifted by one
    held_out = tuning_config(eval_config, args.sweep_games) if sweep else None
    minutes = {}
    for experiment in EXPERIMENTS:
        config = experiment_config(experiment, dataset, runs, args.steps)
        minutes[experiment.name] = training_minutes(train(experiment.algorithm, config))
        for key in decodings:
            results[key].append(evaluate_run(experiment, Path(config.out), config.steps, eval_config,
                                              DECODINGS[key], args.fresh))
            if key in sweep and (experiment.name == "bc" or experiment.beta is not None):
                betas = [None] if experiment.beta is None else BETA_SWEEP
                sweep[key] += [evaluate_run(experiment, Path(config.out), config.steps, held_out, DECODINGS[key],
                                             args.fresh, beta) for beta in betas]
    optimal = evaluate(OptimalPolicy(rule=setting.rule), eval_config, name="optimal")
    for rows in results.values():
        rows.append(optimal)
    return SettingOutcome(setting, dataset, results, compute_statistics(load(dataset)).table(), minutes, sweep)


def render_setting(outcome: SettingOutcome, plots: dict[str, str], args: argparse.Namespace) -> str:
    """One setting's section: a table, verdict and plot per decoding, training times and data statistics."""
    from trainers.evaluation.wordle import results_table

    s = outcome.setting
    times = ", ".join(f"{name} {minutes:.1f} min" for name, minutes in outcome.train_minutes.items())
    tables = "\n".join(f"""### Every agent decoding by {DECODINGS[key].title}

{results_table(results, baseline="bc")}

{verdict(results)}

![{s.key}, {key}]({plots[key]})
""" for key, results in outcome.results.items())
    return f"""## {s.title}

Dataset `wordle_synthetic/{Path(outcome.dataset).parent.name}`; agents evaluated with rule `{s.rule}`, mode `{s.mode}`,
{args.games} seeded games each. Training time (wall clock on this machine, summed over resumed runs): {times}.

{tables}
{render_sweep(outcome, args)}
Data (`tfds.load`, all of it used for training; evaluation is online):

```
{outcome.data_table}
```
"""


def render_sweep(outcome: SettingOutcome, args: argparse.Namespace) -> str:
    """The β sweep of one setting (empty when it was not run): per decoding, BC and each β on held-out games."""
    from trainers.evaluation.wordle import results_table

    if not outcome.sweep:
        return ""
    tables = "\n\n".join(f"Decoding by {DECODINGS[key].title}:\n\n{results_table(rows, baseline='bc')}"
                           for key, rows in outcome.sweep.items())
    return f"""### β at play, on held-out games (a diagnostic; the tables above keep each row's own β)

{args.sweep_games} games seeded from {args.eval_seed + TUNING_SEED_OFFSET} (not the games of the tables above), every
agent with a β replayed at β ∈ {{{", ".join(f"{b:g}" for b in BETA_SWEEP)}}} beside BC with the same decoding. β = 0
plays the ILQL model's own language-model head; a β that helps shows that the learned Q − V ranks the letters
better than that head does.

{tables}
"""


def render(sections: list[str], config, parameters: int, seconds: float, args: argparse.Namespace,
           summary: str = "") -> str:
    """The markdown document; ``summary`` (the verdicts of every table, computed) opens it."""
    rows = "\n".join(f"| {e.name} | `{e.algorithm}` | {json.dumps(e.overrides) if e.overrides else '—'} | "
                     f"{e.beta if e.beta is not None else 0} |" for e in EXPERIMENTS)
    shared = ", ".join(f"{k}={v}" for k, v in SHARED.items() if k != "model")
    if args.steps is not None:
        shared = shared.replace(f"steps={SHARED['steps']}", f"steps={args.steps}")
    body = "\n".join(sections)
    skipped = [f"`{k}` ({SETTINGS[k].title})" for k in SETTINGS if k not in args.settings]
    if skipped:
        body += ("\nNot run for this document: " + ", ".join(skipped) + ". `rlds-lang results wordle --settings "
                 + " ".join(k for k in SETTINGS if k not in args.settings) + "` adds it.\n")
    return f"""# Wordle: BC, %BC and ILQL on `wordle_synthetic` branch datasets

{generated_by(command_line(args, 'rlds-lang results wordle'))} (`trainers/experiments/results.py`) on
{datetime.date.today().isoformat()}, on CPU (2 cores); this invocation took {seconds / 60:.1f} min (finished training and evaluations are reused,
the training times below are each run's own). Rerun it to reproduce
every number here; the configs are committed in `trainers/experiments/results.py`.

How to read the tables: every agent plays the same games (game i starts from answer i of a permutation of
the official answers drawn from seed {args.eval_seed}, and is seeded {args.eval_seed}+i). The reward is −1 per
guess that is not the answer: 0 for a first-guess win, −6 for a loss. ± is one standard error; Δ is the
paired difference from BC over the same games, and "beyond 2 SE" says whether it exceeds two standard errors
of that difference. Language-model agents decode letter by letter, constrained to the official guess list
(every agent alike), in each table by one rule for all of them; the optimal policy is the upper reference.

## Summary (computed from the tables below)

{summary}

## What was trained

| row | algorithm | overrides | β at play |
| --- | --- | --- | --- |
{rows}

Shared: GPT-2 architecture, {config.model.n_layer} layers × {config.model.n_embd} wide, {config.model.n_head}
heads, randomly initialised ({parameters:,} parameters in the language model; ILQL adds its Q/V heads);
character tokenizer (a–z, the colour squares, 6 specials); {shared}. ILQL's other hyperparameters are the
ILQL authors' Wordle defaults (`trainers/algorithms/ilql/ilql.py` documents each one and its source).

{body}
## Beside the paper

{PAPER_SECTION}
"""


#: the comparison with the ILQL paper (its own numbers are not reproduced here: see the text).
PAPER_SECTION = """The ILQL paper's Wordle numbers are not in this table: this project's machines reach only package
registries, and no copy of the paper's result tables could be retrieved from them (only its abstract and the
authors' code). Numbers must not be quoted from memory, so the rows for the paper are left to be filled in
from arXiv 2206.11871 (its Wordle table) by someone with the PDF. What the authors' public code
(Sea-Snell/Implicit-Language-Q-Learning, config/wordle) fixes, beside this reproduction:

| | ILQL paper (authors' code) | here |
| --- | --- | --- |
| model | GPT-2 transformers (policy, value, target value) | one small GPT-2-architecture transformer, random init, LM head + Q/V heads |
| word list | ~200-word subset of the official list (`wordle_official_200.txt`) | full official lists: 2,315 answers, 9,330 guesses |
| environment | answer redrawn each turn among consistent words, simplified colouring | the `paper` setting: `adversarial_resample`, `ilql` rule; the `official` setting: the real game |
| branch data | information-gain expert + `WrongPolicy` branches from every intermediate state (100k-150k games) | the same construction, one expert game per official answer (~10k episodes) |
| training | lr 1e-5, batch 64 x 16 accumulation, tau 0.7, gamma 0.99, alpha 0.005, CQL 1e-4, AWAC 1 | see "What was trained" |
| inference | ILQL: beta (advantage weight) 16, greedy beam of width 1; BC: sampling at temperature 1 | beta 16 for ILQL; every agent both sampled at temperature 1 and greedy, a table each |
| evaluation | 1024 games, ± standard error | as stated per table |

Why %BC can beat ILQL here: in a `branch` dataset the highest returns belong to the expert's games (the
`WrongPolicy` branches lose almost always), so the top 25% by return is nearly the set of the expert's winning
games, and %BC is close to cloning the expert. BC clones the whole mixture, mostly the random branches, and
when it samples it plays almost at random; ILQL starts from a policy like that one and moves it by
`beta * (Q - V)`, so it improves on it by as much as its Q and V have learned in the steps trained.

Why greedy decoding changes the order of BC and ILQL: the expert's move at a state is one word, while the
branches' wrong moves are spread over many, so the arg-max of the cloned mixture is mostly the expert's move
and greedy BC gains much more than sampled BC. ILQL's letters are chosen by `beta * (Q - V)` as much as by
its language-model head, so decoding it greedily changes little; the β sweep on held-out games shows, for
each decoding, whether the learned Q - V ranks letters better than the head does. The paper trains far
longer, from a pretrained model that already spells words, on a 200-word game; those differences all favour
the value-based method.

Expected differences: a 200-word vocabulary makes the paper's game far easier than the full lists (every
agent, the optimal policy included, scores higher there); a pretrained GPT-2 small has ~100x the parameters of
the model here and starts with spelling; and the paper trains for hundreds of thousands of steps."""


__all__ = ["Setting", "SETTINGS", "EXPERIMENTS", "SettingOutcome", "run_setting", "render_setting", "render_sweep", "render", "verdict", "BETA_SWEEP", "RESULTS_DECODINGS"]
