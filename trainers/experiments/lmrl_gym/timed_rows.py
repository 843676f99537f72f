"""LMRL-Gym's BC and ILQL rows trained within a time budget on one device, then played: ``docs/gpu.md``'s
trained rows (a ``trained_rows`` figures file for ``rlds-lang results gpu --figures``).

The rows are ``docs/lmrl_gym.md``'s ``BC`` and ``ILQL`` with that page's configs (``TRAINING``, ``ROWS``): BC
first, then ILQL's value trunk started from BC's finished transformer with BC kept as its policy. Each row's
step count is chosen to fill its budget: a probe run of ``--probe-steps`` steps (in a scratch folder) measures
the row's steps per second on the device after its first step (``TrainResult.steps_per_second``), and the row
then trains ``budget x rate`` steps (never more than the page's own count; never fewer than the probe's), so its
training time is the budget plus its start-up. Both rows are played on the same seeded
games of the setting (``trainers.experiments.lmrl_gym.setting.setting_config``) under each ``--decodings``,
ILQL at the page's committed β (no β search). The scale (training games of the build, model, steps) is written
into the figures beside LMRL-Gym's published numbers for the same rows.

Example (the GPU machine runs it from ``bench/gpu.sh``)::

    python -m trainers.experiments.lmrl_gym.timed_rows --dataset .gpu/tfds/wordle_synthetic/lmrl_gym_small20000/1.1.0 \\
        --device cuda --precision bf16 --bc-seconds 150 --ilql-seconds 90 --games 1024 --json /tmp/rows.json
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from rlds_lang.wordle import lmrl_gym
from trainers.core.build import split_sizes
from trainers.core.device import DEVICE_HELP, PRECISION_HELP, PRECISIONS
from trainers.experiments.common import (
    DECODINGS,
    Experiment,
    add_decodings_argument,
    evaluate_run,
    experiment_config,
    slug,
)
from trainers.experiments.lmrl_gym.run import ON_BC_POLICY, ROWS, TRAINING, check_started_from_bc, finished_bc_lm
from trainers.experiments.lmrl_gym.setting import setting_config

#: the rows this command trains, in order (ILQL starts from BC's finished transformer).
ROW_NAMES = ("BC", "ILQL")
#: the decodings each row is played with unless ``--decodings`` says otherwise.
PLAYED = ("greedy", "sample")
#: the figures' ``kind`` (``trainers.experiments.gpu``).
KIND = "trained_rows"


@dataclasses.dataclass
class TimedRow:
    """A row trained to fill a budget: its run folder, the steps chosen, the probe's rate and the training time."""

    experiment: Experiment
    run: Path
    steps: int
    steps_per_second: float
    train_seconds: float


def row_config(experiment: Experiment, dataset: str, runs: Path, steps: int, place: dict[str, Any],
               model: dict[str, Any], bc_steps: int | None = None) -> Any:
    """The config of ``experiment`` as ``docs/lmrl_gym.md`` trains it, on ``place``'s device and precision with its
    ``reader_workers``, with ``model``'s overrides of the transformer and checkpoints only at the end; a value row
    starts from the BC run under ``runs`` finished at ``bc_steps``."""
    shared = {**TRAINING, "model": {**TRAINING["model"], **model}}
    if experiment.overrides.get("separate_value_trunk"):
        bc_lm = finished_bc_lm(runs, bc_steps)
        shared = {**shared, "model": {**shared["model"], "checkpoint": str(bc_lm), "logit_scale": None}}
    config = experiment_config(experiment, dataset, runs, steps, shared)
    config.device, config.precision = place["device"], place["precision"]
    config.reader_workers = place.get("reader_workers", 0)
    config.checkpoint_every, config.keep_every, config.log_every = 10**9, 0, max(1, steps // 20)
    return config


def chosen_steps(budget: float, rate: float, probe_steps: int, page_steps: int) -> int:
    """The steps a row trains: those ``budget`` seconds give at ``rate`` steps per second, at least the probe's
    and at most the page's own."""
    return max(probe_steps, min(page_steps, int(budget * rate)))


def train_timed(experiment: Experiment, dataset: str, runs: Path, budget: float, probe_steps: int,
                place: dict[str, Any], model: dict[str, Any], progress: bool, bc_steps: int | None = None) -> TimedRow:
    """Probes ``experiment``'s rate in a scratch folder, then trains it for the steps that fill ``budget``
    seconds at that rate (at least ``probe_steps``, at most the page's own steps)."""
    from trainers.algorithms.registry import train

    with tempfile.TemporaryDirectory() as scratch:
        probe = row_config(experiment, dataset, runs, probe_steps, place, model, bc_steps)
        probe.out = str(Path(scratch) / slug(experiment.name))
        rate = train(experiment.algorithm, probe, progress=False).steps_per_second
    steps = chosen_steps(budget, rate, probe_steps, int(experiment.overrides.get("steps", TRAINING["steps"])))
    config = row_config(experiment, dataset, runs, steps, place, model, bc_steps)
    if experiment.overrides.get("separate_value_trunk"):
        check_started_from_bc(Path(config.out), Path(config.model.checkpoint).parent)
    started = time.perf_counter()
    train(experiment.algorithm, config, progress=progress)
    return TimedRow(experiment, Path(config.out), steps, rate, time.perf_counter() - started)


def play(row: TimedRow, games: int, seed: int, decoding: str, batch_games: int) -> dict[str, Any]:
    """``row`` played on ``games`` seeded games of the setting with ``decoding``: the figures of one table row."""
    config = dataclasses.replace(setting_config(games, seed), batch_games=batch_games, torch_threads=None)
    result = evaluate_run(row.experiment, row.run, row.steps, config, DECODINGS[decoding], fresh=True)
    published, _ = lmrl_gym.PUBLISHED_TABLE.get(row.experiment.name, (None, None))
    return {"name": f"{row.experiment.name} ({decoding})", "row": row.experiment.name, "decoding": decoding,
            "steps": row.steps, "train_minutes": row.train_seconds / 60, "games": result.games,
            "mean_reward": result.mean_reward, "stderr": result.stderr, "win_rate": result.win_rate,
            "play_seconds": result.seconds, "steps_per_second": row.steps_per_second,
            "published_mean_reward": published}


def train_episodes(dataset: str) -> int:
    """The number of episodes of the build's ``train`` split, from its ``dataset_info.json``."""
    sizes = split_sizes(dataset)
    if "train" not in sizes:
        raise ValueError(f"{dataset}/dataset_info.json: no train split")
    return sizes["train"]


def setting_text(games: int, bc_seconds: float, ilql_seconds: float, probe_steps: int, eval_games: int,
                 reader_workers: int) -> str:
    """What the figures' ``setting`` says of a run: its data, how its steps were chosen and how it was played."""
    return (f"LMRL-Gym's Wordle rows BC and ILQL as docs/lmrl_gym.md trains them, on {games:,} training games "
            f"(LMRL-Gym: 1M), for the steps that budgets of {bc_seconds:g} s (BC) and {ilql_seconds:g} s (ILQL) "
            f"give at the rate of a {probe_steps}-step probe run (page: {TRAINING['steps']:,} and {ON_BC_POLICY['steps']:,} steps; "
            f"the rows' own training time is in the table); played on {eval_games:,} seeded games (LMRL-Gym: "
            f"{lmrl_gym.PUBLISHED_EVAL_GAMES:,}), ILQL at β 16; {reader_workers} reader processes.")


def main(argv: list[str] | None = None) -> None:
    """Trains BC then ILQL within their budgets, plays both, prints a table and writes ``--json``."""
    import torch

    from trainers.core.device import placement

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True, help="a built wordle_synthetic/lmrl_gym folder (any size)")
    parser.add_argument("--device", default="auto", help=DEVICE_HELP)
    parser.add_argument("--precision", default="auto", choices=PRECISIONS, help=PRECISION_HELP)
    parser.add_argument("--bc-seconds", type=float, default=120.0, help="BC's training budget")
    parser.add_argument("--ilql-seconds", type=float, default=90.0, help="ILQL's training budget")
    parser.add_argument("--probe-steps", type=int, default=100, help="steps of each row's rate probe")
    parser.add_argument("--n-layer", type=int, default=None, help="transformer layers (default: the page's)")
    parser.add_argument("--n-embd", type=int, default=None, help="transformer width (default: the page's)")
    parser.add_argument("--reader-workers", type=int, default=0,
                        help="DataLoader processes that decode the training batches (0: the training process)")
    parser.add_argument("--games", type=int, default=1024, help="seeded games each row plays per decoding")
    parser.add_argument("--seed", type=int, default=0, help="the games' seed")
    parser.add_argument("--batch-games", type=int, default=256, help="games played in lockstep")
    add_decodings_argument(parser, f"how each row is played, a table row each (default: {' and '.join(PLAYED)})")
    parser.add_argument("--runs", default=None, help="folder of the row runs (default: a temporary folder)")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("--progress", action="store_true", help="progress bars while training")
    args = parser.parse_args(argv)
    place = placement(args.device, args.precision)
    model = {k: v for k, v in (("n_layer", args.n_layer), ("n_embd", args.n_embd)) if v is not None}
    where = {"device": str(place.device), "precision": place.precision, "reader_workers": args.reader_workers}
    runs = Path(args.runs) if args.runs else Path(tempfile.mkdtemp(prefix="timed_rows-"))
    rows, budgets = {}, {"BC": args.bc_seconds, "ILQL": args.ilql_seconds}
    for name in ROW_NAMES:
        experiment = next(row for row in ROWS if row.name == name)
        rows[name] = train_timed(experiment, args.dataset, runs, budgets[name], args.probe_steps, where, model,
                                 args.progress, rows["BC"].steps if "BC" in rows else None)
        print(f"trained {name}: {rows[name].steps:,} steps in {rows[name].train_seconds:.0f} s "
              f"(probe: {rows[name].steps_per_second:.1f} steps/s)", flush=True)
    played = [play(rows[name], args.games, args.seed, decoding, args.batch_games)
              for decoding in args.decodings or PLAYED for name in ROW_NAMES]
    size = {**TRAINING["model"], **model}
    games = train_episodes(args.dataset)
    setting = setting_text(games, args.bc_seconds, args.ilql_seconds, args.probe_steps, args.games,
                           args.reader_workers)
    print(f"{'row':<18} {'steps':>7} {'minutes':>7} {'mean return':>16} {'win rate':>8} {'LMRL-Gym':>8}")
    for r in played:
        print(f"{r['name']:<18} {r['steps']:>7,} {r['train_minutes']:>7.1f} "
              f"{r['mean_reward']:>8.3f} ± {r['stderr']:.3f} {r['win_rate']:>8.3f} {r['published_mean_reward']:>8}")
    if args.json:
        device_name = torch.cuda.get_device_name(place.device) if place.device.type == "cuda" else "CPU"
        figures = {"kind": KIND, "device": str(place.device), "device_name": device_name,
                   "precision": place.precision, "setting": setting, "torch": torch.__version__,
                   "model": f"GPT-2 {size['n_layer']} layers x {size['n_embd']}, {size['n_head']} heads, "
                            f"from random weights; {TRAINING['tokenizer']} tokens",
                   "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                   "rows": played}
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
        print(f"figures -> {args.json}")
    if not args.runs:
        shutil.rmtree(runs, ignore_errors=True)


if __name__ == "__main__":
    main()
