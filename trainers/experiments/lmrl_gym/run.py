"""``rlds-lang results lmrl-gym``: our trainers in LMRL-Gym's Wordle setting, beside its published table.

Builds ``wordle_synthetic/lmrl_gym`` (``--small N`` caps each split at N games for smoke runs), trains BC,
%BC (top 30%), MC returns, ILQL and ILQL with the earlier target scheme on its ``train`` split with the committed
configs (``TRAINING``: ``trainers.experiments.results.SHARED`` with this setting's batch, learning rate and steps;
plus ``ROWS``' overrides; resumable; the value rows keep the finished BC policy and learn Q and V on a second
transformer), runs online %BC from the BC model, chooses BC's and %BC's checkpoints of lowest held-out loss
(``save_best``), and plays every row under every decoding (``trainers.experiments.lmrl_gym.decodings``: greedy and
temperatures 0.3 to 1, the value rows' β chosen on held-out games for each) on the same seeded games of the
setting, the headline decoding again on 4,096 games. It writes ``docs/lmrl_gym.md``: the headline table (our raw
mean return ± SE and normalised score by LMRL-Gym's formula beside LMRL-Gym's published numbers), one table per
decoding with its computed verdicts (does it reproduce the published ordering?), the data and scripted figures,
V(s_0)/Q calibration of the value rows on the held-out ``eval`` split and the training curves. Nothing in it is
typed by hand (the page is ``trainers.experiments.lmrl_gym.document``).

Example::

    rlds-lang results lmrl-gym                                             # the full reproduction
    rlds-lang results lmrl-gym --small 200 --steps 5 --games 20 --pbc-rounds 1 --pbc-games 20 \\
        --out runs/lmrl_gym.md                                             # a smoke run
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from rlds_lang.wordle import lmrl_gym
from trainers.algorithms.ilql.config import LMRL_GYM_ILQL, LMRL_GYM_MC
from trainers.core.build import built_dataset_dir, tfds_build
from trainers.evaluation.stats import standard_error
from trainers.experiments.beta_choice import add_beta_choice_arguments, parse_grid, tuning_config
from trainers.experiments.common import (
    SHARED,
    Experiment,
    add_decodings_argument,
    experiment_config,
    slug,
    training_minutes,
)
from trainers.experiments.lmrl_gym.decodings import (
    TrainedRow,
    decodings_from_args,
    headline_decoding,
    play_rows,
    save_best_rows,
)
from trainers.experiments.lmrl_gym.document import ONLINE, SCRIPTED, render_document
from trainers.experiments.lmrl_gym.linear import (
    LinearReport,
    add_linear_arguments,
    linear_reference_from_args,
)

if TYPE_CHECKING:  # pragma: no cover - type hints only
    from trainers.experiments.lmrl_gym.setting import ConsistencyReport

#: this setting's tokens, model and optimisation on top of ``SHARED`` (same transformer): words as tokens with the
#: board as (letter, colour) cells (``rlds_lang.wordle.board_tokenizer``) and a learnable logit scale started at
#: 10 (``ModelConfig.logit_scale``), batch 64 x lr 1e-3 for 32,000 steps, about two passes over the 1M training
#: games. Chosen on held-out data-policy games, never on the evaluation games (``python -m trainers.experiments.lmrl_gym
#: --consistency``, the share of the data's consistency regularity BC learned; README, section *LMRL-Gym's Wordle setting*): on
#: the full build, these tokens learned 7% after 1,000 steps, 12% after 2,000, 22% after 4,000, 33% after 8,000,
#: 47% after 16,000 (one pass) and 65% after 32,000 (held-out nats per guess 5.461 -> 5.400),
#: the same tokens without the scale 0% after 2,000; letters as tokens 8% after 4,000
#: steps and 26% after 8,000 on a 100k-game build, at 1.4x the time per step (about 80 tokens a game against 43).
TRAINING: dict[str, Any] = {**SHARED, "tokenizer": "lmrl_gym_board",
                            "model": {**SHARED["model"], "logit_scale": 10.0},
                            "batch_size": 64, "lr": 1e-3, "steps": 32000, "checkpoint_every": 250,
                            "keep_every": 2000}
#: the value-based rows' overrides. LMRL-Gym's MC and ILQL agents decode with its trained BC model (``pi_beta``,
#: fixed) perturbed by beta * (Q - V) of a value model trained apart from it (its evaluation scripts load both),
#: so ours put Q and V on their own transformer and leave the policy untrained (``awac_weight`` 0); both trunks
#: start from the finished BC row's transformer (``model.checkpoint``, set by ``_train``), our nearest to
#: LMRL-Gym's pretrained GPT-2. From LMRL-Gym's Wordle training scripts (``llm_rl_scripts/wordle/{mc,ilql}/
#: train_*_gpt2.py``): ``cql_weight`` 0.01 and the heads starting at -4.4 (zero output weights, bias -4.4); its
#: ILQL's Polyak rate 0.005 is ``ILQLConfig``'s default. No cap on the advantage at play (``adv_clip`` None):
#: LMRL-Gym's agents add ``beta * Q`` to the policy's logits unclipped (value_rl_base/gpt2/generation.py:116-117). 8,000 steps, a quarter of BC's: the value trunk starts
#: from BC's features and learns only Q and V (kept from the 16,000-step table, so that the longer BC is the one
#: change between the two).
ON_BC_POLICY: dict[str, Any] = {"separate_value_trunk": True, "awac_weight": 0.0, "cql_weight": 0.01,
                                "head_init_value": -4.4, "steps": 8000, "adv_clip": None}
#: the name of the ILQL row trained as before LMRL-Gym's scheme: lagged target heads on the live trunk, decoding
#: with them, and this setting's optimizer (``TRAINING``: lr 1e-3, clipping 1, Adam beta2 0.999).
ILQL_TARGET_HEADS = "ILQL (target heads, lr 1e-3)"
#: the offline rows (LMRL-Gym's names) and their overrides of ``TRAINING``. MC returns and ILQL are built as
#: LMRL-Gym builds them (``LMRL_GYM_MC``, ``LMRL_GYM_ILQL``: its optimizer; ILQL with a Polyak target of the value
#: trunk and decoding with the live heads); ``ILQL_TARGET_HEADS`` keeps the earlier scheme beside it.
ROWS: tuple[Experiment, ...] = (
    Experiment("BC", "bc"),
    Experiment("%BC (top 30%)", "bc", {"top_p": lmrl_gym.PCT_BC_FRACTION}),
    Experiment("MC returns", "mc", {**ON_BC_POLICY, **LMRL_GYM_MC}, beta=16.0),
    Experiment("ILQL", "ilql", {**ON_BC_POLICY, **LMRL_GYM_ILQL}, beta=16.0),
    Experiment(ILQL_TARGET_HEADS, "ilql", ON_BC_POLICY, beta=16.0),
)
#: the rows with value heads (calibrated, ranked at the first move).
VALUE_ROWS = ("MC returns", "ILQL", ILQL_TARGET_HEADS)
#: the rows also played from their checkpoint of lowest held-out loss (LMRL-Gym's ``save_best``).
SAVE_BEST_ROWS = ("BC", "%BC (top 30%)")
#: the online %BC run's defaults (rounds x games x steps per round), sized for 2 CPU cores.
PBC_ROUNDS, PBC_GAMES, PBC_STEPS = 10, 1000, 300
#: the document, relative to the current directory (the results commands run from the repository).
DOC = Path("docs") / "lmrl_gym.md"
#: in each row run that starts from the BC row: the BC checkpoint and step it started from (check_started_from_bc)
STARTED_FROM_BC = "started_from_bc.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``rlds-lang results lmrl-gym`` that only this page has (the shared ones are the CLI's)."""
    add_build_workers_argument(parser)
    parser.add_argument("--pbc-rounds", type=int, default=PBC_ROUNDS, help="online %%BC rounds")
    parser.add_argument("--pbc-games", type=int, default=PBC_GAMES, help="online %%BC games per round")
    parser.add_argument("--pbc-steps", type=int, default=None,
                        help=f"online %%BC BC steps per round (default {PBC_STEPS}, or --steps)")
    add_beta_choice_arguments(parser, "MC returns and ILQL")
    parser.add_argument("--consistency-games", type=int, default=100,
                        help="held-out data-policy games of BC's diagnosis (consistency_learned; 100 games give about 370 states)")
    add_decodings_argument(parser, "how every row is played, a table each (default: greedy and temperatures 0.3, "
                                   "0.5, 0.7 and 1)")
    parser.add_argument("--headline-games", type=int, default=lmrl_gym.PUBLISHED_EVAL_GAMES,
                        help="games of the headline decoding's table (LMRL-Gym's count; the other "
                             "decodings play --games)")
    parser.add_argument("--selection-games", type=int, default=2000,
                        help="held-out (eval split) games that score BC's and %%BC's kept checkpoints "
                             "(LMRL-Gym's save_best)")
    parser.add_argument("--calibration-games", type=int, default=1000,
                        help="held-out (eval split) games of the value calibration")
    add_linear_arguments(parser)


def add_build_workers_argument(parser: argparse.ArgumentParser) -> None:
    """Adds ``--build-workers``, the processes of ``build_dataset``, to a results page's parser."""
    parser.add_argument("--build-workers", type=int, default=1,
                        help="processes that record the LMRL-Gym dataset's shards into <data-dir>/shard_cache "
                             "(so an interrupted build resumes) before one Beam worker serialises them (Beam's own "
                             "2-process runner once lost 3%% of the games without an error)")


def build_dataset(data_dir: str | Path, small: int | None, workers: int) -> str:
    """``wordle_synthetic/lmrl_gym`` built in ``data_dir`` (unless there), its shards recorded on ``workers``
    processes and kept under ``data_dir/shard_cache/<full|small-N>`` so that a build stopped part-way resumes,
    then serialised by one Beam worker; its split sizes are checked against the recipes'
    (``trainers.core.build.check_split_sizes``), also when it is found built."""
    from loggers.tfds_examples import small_config_name
    from loggers.wordle_recipes import prefill_shard_cache
    from rlds_lang.wordle.recipes import shards

    cache = Path(data_dir) / "shard_cache" / ("full" if small is None else f"small-{small}")
    recipes = [lmrl_gym.recipe(split) for split in ("train", "eval")]
    expected = {split: r.num_episodes(small) for split, r in zip(("train", "eval"), recipes)}
    built = small_config_name("lmrl_gym", small)  # the config a small build has: the builder keeps its cache there
    if workers > 1 and built_dataset_dir(data_dir, "wordle_synthetic", built) is None:
        prefill_shard_cache(shards(recipes, lmrl_gym.SHARD_SIZE, small), cache / built, workers)
    return tfds_build("wordle_synthetic", "lmrl_gym", data_dir, small=small, shard_cache=cache, expected=expected)


def _train(experiment: Experiment, dataset: str, runs: Path, steps: int | None) -> tuple[Path, int, float]:
    """Trains (or resumes) one offline row; ``(run folder, steps, training minutes)``."""
    from trainers.algorithms.registry import train

    shared, bc_lm = TRAINING, None
    if experiment.overrides.get("separate_value_trunk"):
        # BC's saved lm/ holds its logit scale in its output layer already (ModelConfig.logit_scale)
        bc_lm = finished_bc_lm(runs, steps)
        shared = {**TRAINING, "model": {**TRAINING["model"], "checkpoint": str(bc_lm), "logit_scale": None}}
    config = experiment_config(experiment, dataset, runs, steps, shared)
    if bc_lm is not None:
        check_started_from_bc(Path(config.out), bc_lm.parent)
    return Path(config.out), config.steps, training_minutes(train(experiment.algorithm, config))


def finished_bc_lm(runs: Path, steps: int | None) -> Path:
    """The BC row's trained transformer (``runs/BC/checkpoint/lm``) that the value rows start from and keep as
    their policy; a clear error unless BC has trained all its ``steps`` (default ``TRAINING``'s)."""
    from trainers.core.checkpoint import checkpoint_dir, checkpoint_step

    checkpoint = checkpoint_dir(runs / slug("BC"))
    wanted = steps if steps is not None else TRAINING["steps"]
    reached = checkpoint_step(checkpoint)
    if reached < wanted:
        raise ValueError(f"the MC returns and ILQL rows start from the finished BC row, but {checkpoint} has "
                         f"{reached} of its {wanted} steps: train BC first (--train-only BC)")
    return checkpoint / "lm"


def check_started_from_bc(run: Path, bc_checkpoint: Path) -> None:
    """Records in ``run`` (a row that starts from the BC row: MC returns, ILQL, online %BC) the step of the BC
    checkpoint it starts from, or, for a row trained before, checks that BC has not trained on since: a row
    reused over a longer BC would silently keep acting on the old one. A row begun before this record existed
    is taken to match the BC it finds (and the record is written)."""
    from trainers.core.checkpoint import checkpoint_step

    step = checkpoint_step(bc_checkpoint)
    path = run / STARTED_FROM_BC
    if path.exists():
        recorded = json.loads(path.read_text())["bc_step"]
        if recorded != step:
            raise ValueError(f"{run} started from the BC row at step {recorded}, but {bc_checkpoint} is now at step "
                             f"{step} ({path}): delete {run}, or train into another --runs, to retrain it on this BC")
        return
    run.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"bc_checkpoint": str(bc_checkpoint), "bc_step": step}) + "\n")


def _online(bc_run: Path, runs: Path, args: argparse.Namespace) -> tuple[Path, int, float, list[dict[str, Any]]]:
    """Online %BC from the BC model; ``(run folder, total steps, minutes of playing, recording and training, the
    rounds' summaries)``."""
    from trainers.algorithms.online_pbc import OnlinePBCConfig, run_online_pbc
    from trainers.core.config import config_from_dict

    steps = args.pbc_steps or args.steps or PBC_STEPS
    values = {**TRAINING, "steps": steps, "out": str(runs / slug(ONLINE)), "rounds": args.pbc_rounds,
              "games_per_round": args.pbc_games, "init_checkpoint": str(bc_run / "checkpoint")}
    config = config_from_dict(OnlinePBCConfig, values)
    check_started_from_bc(Path(config.out), Path(config.init_checkpoint))
    summaries = run_online_pbc(config)
    return (Path(config.out), steps * len(summaries), sum(summary["seconds"] for summary in summaries) / 60,
            summaries)


def _dataset_figures(dataset: str) -> dict[str, float]:
    """Mean return, success rate and mean length (guesses) of the built ``train`` split."""
    from transforms.statistics import returns_and_lengths

    returns, lengths = returns_and_lengths(dataset, split="train")
    return {"games": len(returns), "mean_return": float(returns.mean()),
            "stderr": standard_error(returns),
            "success_rate": float((returns > lmrl_gym.MIN_RETURN).mean()), "mean_length": float(lengths.mean())}


def _calibrations(runs: dict[str, Path], dataset: str, games: int, out: Path) -> str:
    """V(s_0)/Q calibration of the rows with value heads on the eval split: tables and plots."""
    from trainers.algorithms.registry import load_agent_model
    from trainers.evaluation.diagnostics import value_calibration

    parts = []
    for name in VALUE_ROWS:
        calibration = value_calibration(load_agent_model(runs[name] / "checkpoint"), dataset, split="eval",
                                        episodes=games)
        plot = calibration.plot(out.with_name(f"{out.stem}-calibration-{slug(name)}.png"), title=name)
        parts.append(f"### {name}\n\n{calibration.table()}\n\n![{name} calibration]({plot.name})\n")
    parts.append(_rankings(runs, dataset, games))
    return "\n".join(parts)


def scripted_first_move() -> str:
    """The scripted policy's first guess in this setting (it does not depend on the hidden word)."""
    env, policy = lmrl_gym.make_env(), lmrl_gym.scripted_policy()
    policy.reset(0)
    return str(policy.act([env.reset().observation], []))


def _rankings(runs: dict[str, Path], dataset: str, games: int) -> str:
    """The ILQL paper's Section-5 ranking test at the initial state: the scripted first guess against the
    behaviour policy's first guesses of ``games`` held-out games (``trainers.evaluation.diagnostics.ranking_at_start``)."""
    from trainers.algorithms.registry import load_agent_model
    from trainers.evaluation.diagnostics import ranking_at_start
    from transforms.loading import load

    better = scripted_first_move()
    firsts = load(dataset, split="eval").take(games).map(lambda episode: episode["steps"].take(1).get_single_element())
    worse = [a.decode() for a in (step["action"] for step in firsts.as_numpy_iterator()) if a.decode() != better]
    rows = "\n".join(f"| {name} | {ranking_at_start(load_agent_model(runs[name] / 'checkpoint'), better, worse):.3f} |"
                     for name in VALUE_ROWS)
    return ("### Section-5 ranking at the first move\n\n"
            f"The fraction of the behaviour policy's first guesses (held-out games; {len(worse)} differ from the "
            f"scripted one) that Q values below the scripted policy's first guess `{better}` (the ILQL paper's "
            "test: near 1 when Q learned that the scripted move is better; the single-step baselines scored near 0 there). "
            "The test on the ILQL paper's own adversarial data, with the exact tabular solution beside it, is "
            "[section5.md](section5.md) (`rlds-lang results section5`).\n\n"
            "| row | fraction ranked below |\n| --- | --- |\n" + rows + "\n")


def train_rows(names: list[str], dataset: str, runs_root: Path, args: argparse.Namespace) -> None:
    """Trains (or resumes) only the rows named, in the order given (``--train-only``); no evaluation."""
    known = [e.name for e in ROWS] + [ONLINE]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"--train-only {unknown}: rows are {known}")
    for name in names:
        if name == ONLINE:
            _online(runs_root / slug("BC"), runs_root, args)
        else:
            _train(next(e for e in ROWS if e.name == name), dataset, runs_root, args.steps)
        print(f"trained {name} -> {runs_root / slug(name)}")


def run_lmrl_gym(args: argparse.Namespace) -> Path | None:
    """Builds, trains, evaluates and writes the document (``args.out`` or ``docs/lmrl_gym.md``); returns its path
    (None with ``--train-only``, which stops after training the rows named)."""
    from trainers.algorithms.registry import load_agent_model
    from trainers.evaluation.wordle import evaluate, save_results
    from trainers.experiments.lmrl_gym.setting import setting_config

    started = time.perf_counter()
    out = Path(args.out or DOC)
    out.parent.mkdir(parents=True, exist_ok=True)
    dataset = build_dataset(args.data_dir, args.small, args.build_workers)
    runs_root = Path(args.runs) / "lmrl_gym"
    if args.train_only:
        return train_rows(args.train_only, dataset, runs_root, args)
    eval_config = setting_config(args.games, args.eval_seed)
    runs, minutes, steps = {}, {}, {}
    for experiment in ROWS:
        runs[experiment.name], steps[experiment.name], minutes[experiment.name] = _train(
            experiment, dataset, runs_root, args.steps)
    runs[ONLINE], steps[ONLINE], minutes[ONLINE], online_rounds = _online(runs["BC"], runs_root, args)
    trained = [TrainedRow(e.name, e, runs[e.name], steps[e.name]) for e in (*ROWS, Experiment(ONLINE, "bc"))]
    best_rows, selections = save_best_rows([t for t in trained if t.name in SAVE_BEST_ROWS], load_agent_model,
                                           runs_root / "diagnostics", args.selection_games, args.fresh)
    trained += best_rows
    held_out = tuning_config(eval_config, args.beta_games)
    grid = parse_grid(args.beta_grid) if args.beta_games > 0 else ()
    scripted = evaluate(lmrl_gym.scripted_policy(), eval_config, name=SCRIPTED, progress=False)
    outcomes = [play_rows(trained, decoding, eval_config, held_out, grid, scripted, args.fresh)
                for decoding in decodings_from_args(args.decodings)]
    headline = headline_decoding(outcomes)
    if args.headline_games != args.games:
        big = setting_config(args.headline_games, args.eval_seed)
        headline = play_rows(trained, headline.decoding, big, held_out, grid,
                             evaluate(lmrl_gym.scripted_policy(), big, name=SCRIPTED, progress=False), args.fresh)
    save_results(headline.results, out.with_suffix(".json"))
    data = _dataset_figures(dataset)
    consistency, linear = _diagnostics(runs_root, runs["BC"], args)
    curves = []
    for name, run in runs.items():
        source = run / "training_curves.png" if name != ONLINE else None
        if source is not None and source.exists():
            target = out.with_name(f"{out.stem}-curves-{slug(name)}.png")
            shutil.copyfile(source, target)
            curves.append(f"[{name}]({target.name})")
    document = render_document(headline, outcomes, data, _calibrations(runs, dataset, args.calibration_games, out),
                               minutes, steps, curves, args, time.perf_counter() - started, rows=ROWS,
                               training=TRAINING, consistency=consistency, linear=linear,
                               online_rounds=online_rounds, selections=selections)
    out.write_text(document)
    print(document)
    return out


def cached_report(path: Path, key: dict[str, Any], compute: Callable[[], Any], report_class: type, fresh: bool = False):
    """The dataclass ``report_class`` stored in ``path`` under the same ``key``, else ``compute()``'d and stored
    there: the diagnostics depend only on their sizes and on the checkpoint, and take minutes to recompute."""
    if path.exists() and not fresh:
        stored = json.loads(path.read_text())
        if stored.get("key") == key:
            return report_class(**stored["report"])
    report = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"key": key, "report": dataclasses.asdict(report)}, indent=2))
    return report


def _diagnostics(runs_root: Path, bc_run: Path, args: argparse.Namespace) -> tuple[ConsistencyReport, LinearReport]:
    """BC's ``consistency_learned`` (keyed by its games and the checkpoint's ``model.pt`` digest) and the linear
    reference (keyed by its sizes), each reused from ``runs_root/diagnostics`` unless ``--fresh``."""
    from trainers.algorithms.registry import load_agent_model
    from trainers.experiments.lmrl_gym.setting import (
        ConsistencyReport,
        consistency_learned,
    )

    checkpoint = bc_run / "checkpoint"
    digest = hashlib.sha256((checkpoint / "model.pt").read_bytes()).hexdigest()
    consistency = cached_report(
        runs_root / "diagnostics" / "bc_consistency.json", {"games": args.consistency_games, "model_pt": digest},
        lambda: consistency_learned(load_agent_model(checkpoint), args.consistency_games), ConsistencyReport,
        args.fresh)
    sizes = {"train_games": args.linear_train_games, "held_out_games": args.linear_held_out_games,
             "steps": args.linear_steps}
    linear = cached_report(runs_root / "diagnostics" / "linear_reference.json", sizes,
                           lambda: linear_reference_from_args(args), LinearReport, args.fresh)
    return consistency, linear


__all__ = ["TRAINING", "ON_BC_POLICY", "ROWS", "finished_bc_lm", "check_started_from_bc", "add_arguments",
           "add_build_workers_argument", "cached_report", "scripted_first_move", "train_rows", "run_lmrl_gym"]
