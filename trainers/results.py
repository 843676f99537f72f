"""The Wordle result of ``docs/results.md``: BC, %BC and ILQL trained on ``wordle_synthetic/branch``, evaluated
beside the optimal policy on the same seeded games; rerun with ``rlds-lang results``.

Everything the result depends on is here: the dataset (built with ``tfds build`` if absent), the committed
configs (``EXPERIMENTS``), the evaluation settings, and the document it writes (tables, plot, settings,
timings). Training resumes from each run's checkpoint, so an interrupted reproduction continues where it
stopped; finished evaluations are reused from their JSON unless ``--fresh``.

Example::

    rlds-lang results                       # full: build the dataset, train, evaluate 500 games each, write docs/results.md
    rlds-lang results --steps 50 --games 50 --out /tmp/results.md    # a quick smoke run
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import time
from pathlib import Path
from typing import Any

from trainers.build import REPO, tfds_build

#: the ILQL paper's Wordle setting this reproduces (see the document's "Beside the paper" section).
PAPER = "Snell et al. 2022, Offline RL for Natural Language Generation with Implicit Language Q Learning, arXiv 2206.11871"


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One row: an algorithm, its config overrides on top of ``SHARED``, and the ``beta`` it is played with."""

    name: str
    algorithm: str
    overrides: dict[str, Any] = dataclasses.field(default_factory=dict)
    beta: float | None = None


#: hyperparameters every row shares (model size, optimisation, data layout); see trainers.config.TrainConfig.
SHARED: dict[str, Any] = {
    "model": {"n_layer": 4, "n_embd": 128, "n_head": 4, "n_positions": 96},
    "steps": 3000,
    "batch_size": 32,
    "lr": 3e-4,
    "warmup_steps": 100,
    "max_length": 96,
    "log_every": 25,
    "checkpoint_every": 500,
    "seed": 0,
}

#: the committed configs of the comparison.
EXPERIMENTS: tuple[Experiment, ...] = (
    Experiment("bc", "bc"),
    Experiment("%bc (top 25%)", "bc", {"top_p": 0.25}),
    Experiment("ilql", "ilql", {"alpha": 0.01}, beta=16.0),
)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name).strip("_")


def experiment_config(experiment: Experiment, dataset: str, runs: Path, steps: int | None = None):
    """The full config dataclass of ``experiment`` on ``dataset`` (``steps`` overrides ``SHARED``)."""
    from trainers.algorithms import algorithm_by_name
    from trainers.config import config_from_dict

    values = {**SHARED, **experiment.overrides, "dataset": dataset, "out": str(runs / _slug(experiment.name))}
    if steps is not None:
        values["steps"] = steps
    return config_from_dict(algorithm_by_name(experiment.algorithm).config_class, values)


def _count_parameters(config) -> int:
    from trainers.algorithms import algorithm_by_name
    from trainers.loop import make_tokenizer

    spec = algorithm_by_name("bc")
    module = spec.model_class(config, make_tokenizer(config.tokenizer))
    return sum(p.numel() for p in module.lm.parameters())


def run(args: argparse.Namespace) -> Path:
    """Builds, trains, evaluates and writes the document; returns its path."""
    from rlds_lang.wordle.policies import OptimalPolicy
    from trainers.checkpoint import load_policy
    from trainers.eval import EvalConfig, evaluate, load_results, plot_results, results_table, save_results
    from trainers.loop import train
    from transforms.loading import load
    from transforms.statistics import compute_statistics

    started = time.perf_counter()
    runs = Path(args.runs)
    runs.mkdir(parents=True, exist_ok=True)
    dataset = tfds_build("wordle_synthetic", args.config, args.data_dir)
    stats = compute_statistics(load(dataset))
    eval_config = EvalConfig(games=args.games, seed=args.eval_seed, rule=args.rule, mode=args.mode)
    results, timings = [], {}
    for experiment in EXPERIMENTS:
        config = experiment_config(experiment, dataset, runs, args.steps)
        cached = Path(config.out) / f"eval-{args.games}-{args.eval_seed}.json"
        t0 = time.perf_counter()
        train(experiment.algorithm, config)
        timings[experiment.name] = time.perf_counter() - t0
        if cached.exists() and not args.fresh:
            results += load_results(cached)
            continue
        policy = load_policy(Path(config.out) / "checkpoint", allowed_actions=eval_config.guesses,
                             name=experiment.name, beta=experiment.beta)
        result = evaluate(policy, eval_config, name=experiment.name)
        save_results([result], cached)
        results.append(result)
    results.append(evaluate(OptimalPolicy(rule=args.rule), eval_config, name="optimal"))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    plot = plot_results(results, out.with_suffix(".png"))
    save_results(results, out.with_suffix(".json"))
    config = experiment_config(EXPERIMENTS[0], dataset, runs, args.steps)
    document = render(results_table(results, baseline="bc"), stats.table(), config, _count_parameters(config),
                      eval_config, plot.name, timings, time.perf_counter() - started, args)
    out.write_text(document)
    print(document)
    return out


def render(table: str, data_table: str, config, parameters: int, eval_config, plot_name: str,
           timings: dict[str, float], seconds: float, args: argparse.Namespace) -> str:
    """The markdown document."""
    rows = "\n".join(f"| {e.name} | `{e.algorithm}` | {json.dumps(e.overrides) if e.overrides else '—'} | "
                     f"{e.beta if e.beta is not None else 0} | {timings.get(e.name, float('nan')) / 60:.1f} min |"
                     for e in EXPERIMENTS)
    shared = ", ".join(f"{k}={v}" for k, v in SHARED.items() if k != "model")
    return f"""# Wordle: BC, %BC and ILQL on `wordle_synthetic/{args.config}`

Produced by `rlds-lang results {' '.join(getattr(args, 'argv', []))}` (`trainers/results.py`) on
{datetime.date.today().isoformat()}, on CPU (2 cores), in {seconds / 60:.0f} minutes. Rerun it to reproduce
every number here; the configs are committed in `trainers/results.py`.

## Result ({eval_config.games} seeded games per agent, rule `{eval_config.rule}`, mode `{eval_config.mode}`)

Every agent plays the same games (answer i of a permutation of the official answers drawn from seed
{eval_config.seed}; game i seeded {eval_config.seed}+i). Mean reward is −(guesses that were not the answer):
0 for a first-guess win, −6 for a loss. ± is one standard error; Δ is the paired difference from BC over the
same games, and "|Δ| > 2 SE" says whether it is more than two standard errors of that difference.
Language-model agents decode letter by letter, constrained to the official guess list (every agent alike).

{table}

![results]({plot_name})

## What was trained

| row | algorithm | overrides | β at play | training time |
| --- | --- | --- | --- | --- |
{rows}

Shared: GPT-2 architecture, {config.model.n_layer} layers × {config.model.n_embd} wide, {config.model.n_head}
heads, randomly initialised ({parameters:,} parameters in the language model; ILQL adds its Q/V heads);
character tokenizer (a–z, the colour squares, 6 specials); {shared}. ILQL's other hyperparameters are the
ILQL authors' Wordle defaults (`trainers/ilql.py` documents each one and its source).

Data (`tfds.load` of `wordle_synthetic/{args.config}`, all of it used for training; evaluation is online):

```
{data_table}
```

## Beside the paper

{PAPER_SECTION}
"""


#: the comparison with the ILQL paper's numbers (filled in by hand from the paper: see the text).
PAPER_SECTION = """The ILQL paper's Wordle numbers could not be put here: this project's machines reach only package
registries, and no copy of the paper's result tables was retrievable from them (only its abstract). What the
authors' public code fixes, and how this setting differs from it:

| | ILQL paper (authors' code) | here |
| --- | --- | --- |
| model | GPT-2 (three transformers: policy, value, target value) | one 4-layer × 128 GPT-2-architecture transformer, random init, LM head + value heads |
| word list | ~200-word subset of the official list (`wordle_official_200.txt`) | full official lists: 2,315 answers, 9,330-word guess list |
| hidden word | redrawn each turn among consistent words (`adversarial_resample`), simplified colouring (`ilql` rule) | fixed answer, official colouring |
| branch data | information-gain expert + `WrongPolicy` branches from every intermediate state (100k–150k games) | the same construction on the 2,315 official answers (one expert game per answer) |
| training | lr 1e-5, batch 64 × 16 accumulation, tau 0.7, gamma 0.99, alpha 0.005, CQL 1e-4, AWAC 1 | see the table above |
| inference | beta (advantage weight) 16 | beta 16 |

To fill in the paper's rows, copy BC / %BC / ILQL / expert from the paper's Wordle table and its model and data
sizes into this section."""


def add_parser(sub) -> None:
    """Adds ``rlds-lang results`` to the CLI's subcommands."""
    parser = sub.add_parser("results", help="reproduce docs/results.md (BC, %%BC, ILQL on wordle_synthetic/branch)")
    parser.add_argument("--config", default="branch", help="wordle_synthetic config to train on")
    parser.add_argument("--data-dir", default=str(REPO / ".cache" / "results" / "tfds"))
    parser.add_argument("--runs", default=str(REPO / "runs" / "results"), help="training output folders")
    parser.add_argument("--steps", type=int, default=None, help="override the committed optimizer steps")
    parser.add_argument("--games", type=int, default=500, help="evaluation games per agent (>= 500 for the doc)")
    parser.add_argument("--eval-seed", type=int, default=0)
    parser.add_argument("--rule", default="official", choices=["official", "ilql"])
    parser.add_argument("--mode", default="fixed", choices=["fixed", "adversarial_resample"])
    parser.add_argument("--out", default=str(REPO / "docs" / "results.md"))
    parser.add_argument("--fresh", action="store_true", help="re-evaluate even when a result JSON exists")
    parser.set_defaults(func=run)


__all__ = ["Experiment", "SHARED", "EXPERIMENTS", "experiment_config", "run", "render", "add_parser"]
