"""``rlds-lang demo``: why run offline RL -- on recorded games that are mostly poor play, ILQL learns from the rewards
to play better than its data, where behaviour cloning plays like the data's average.

What it does, in order: records Wordle games on a 32-word list with ``loggers.record``, a minority by an expert
(``OptimalPolicy``) and the rest by a player guessing a uniformly random list word every turn (``RECORDED``,
``DemoSettings.expert_share``); builds them with ``tfds build`` (``builders/wordle_synthetic``, config
``manual_dir``); reads them back with ``tfds.load`` (games, mean return and win rate per policy); trains behaviour
cloning (BC), then ILQL's values, through ``trainers.algorithms.registry.train``; chooses ILQL's ``beta`` on
held-out games; and plays the random player, BC, ILQL and the expert on the same new seeded games
(``trainers.evaluation.wordle``). It prints the table, the verdicts computed from the paired return differences on
those games (``trainers.experiments.demo_report``, ``trainers.evaluation.stats``; ILQL against BC first) and which
word each agent opened with, and writes the run's report (``report.md``, with the plot ``demo.png`` and
``results.json``) into its folder; ``rlds-lang demo --doc docs/demo.md`` writes the same report there, with the
verdicts of ``DOC_SEEDS`` seeds.

Why this data: BC imitates every recorded move, so it plays the expert's moves about as often as the data holds
them and random words otherwise. ILQL learns Q and V from the same games' rewards (-1 per guess that is not the
answer): after the expert's opening word the data's games are mostly the expert's and end within a few guesses,
after any other opening they are random play that rarely wins, so ``Q - V`` favours the expert's opening and the
moves that follow it. Where half the data is the expert's, BC already plays much like the expert and ILQL has
little to add (``rlds-lang demo --expert-share 0.5`` shows it). The case shown is the one offline RL is for: good play is in the data but not most of it, and no label says which games
are good -- only the rewards do.

How ILQL is trained here: as in LMRL-Gym's Wordle agents, the policy is the trained BC model, held fixed
(``awac_weight=0``), and Q and V sit on a second transformer that starts from BC's weights
(``separate_value_trunk``); the agent samples from BC's logits plus ``beta * (Q - V)``. At ``beta = 0`` it is BC
exactly, so every difference between the two rows is the values'. The values' target Q heads follow the trained
ones faster than the ILQL authors' rate (``DemoSettings.ilql_alpha``): their 0.005 is for 100,000s of steps, and here
a few hundred steps carry the end of a game back to its first guess. (With the values on the policy's own transformer, ILQL's
default, a few hundred steps of value learning either move the values too little to matter or, with the faster
target, spoil the imitation the policy plays.)

Why this Wordle learns in a minute on a CPU: the word list is the shipped 32-word ``demo_words`` (guesses and
answers at once), every word is one token and each feedback is five (letter, colour) cells
(``rlds_lang.wordle.board_tokenizer.WordBoardTokenizer``), and the model starts its output logits at a scale that
lets it commit to a few words early (``ModelConfig.logit_scale``).

Example::

    from trainers.experiments.demo import FULL, run_demo

    report = run_demo(FULL, "runs/demo")
    print(report.text())
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from trainers.experiments.demo_report import DemoReport, PolicyData, Verdict, opening_shares, verdicts

#: the word list of guesses and answers (``rlds_lang.wordle.words.demo_words``; 32 words, MIT, with its source).
WORDS = "demo_words"
#: the demo's tokenizer (words as tokens, feedback as cells), by the name training configs give it.
TOKENIZER = f"words_board:{WORDS}"
#: the colouring rule and hidden-word mode of the games (the ordinary game).
RULE, MODE = "official", "fixed"
#: the recorded policies: ``(name for make_policy, its parameters)``; the expert, then the random player.
RECORDED = (("optimal", {}), ("random_mixture", {"prob_smart": 0.0}))
#: recorded game ``i`` of policy ``k`` is seeded ``RECORD_SEED + (seed * len(RECORDED) + k) * RECORD_SEED_STRIDE + i``
#: (``seed``: ``DemoSettings.seed``); the evaluation's games are seeded ``seed + i``, so they are not recorded games.
RECORD_SEED, RECORD_SEED_STRIDE = 1_000_000, 1_000_000
#: the algorithms trained, in the table's order.
ALGORITHMS = ("bc", "ilql")
#: the agent that guesses a uniformly random word of the list every turn.
RANDOM = "random"
#: the held-out games that choose ILQL's ``beta`` are seeded from ``DemoSettings.seed + BETA_SEED_OFFSET``.
BETA_SEED_OFFSET = 500_000
#: torch threads of each training and playing process: a model this small gains little from a second thread, and
#: on a shared 2-core machine two threads spin against the other processes.
TORCH_THREADS = 1
#: the command that regenerates the committed guide, run from the repository's root.
DOC_COMMAND = "rlds-lang demo --doc docs/demo.md"
#: seeds the guide reports (the command's ``--seed`` and the next ones): the verdicts must hold for each.
DOC_SEEDS = 3


@dataclasses.dataclass(frozen=True)
class DemoSettings:
    """How big the demo runs: games recorded, training, model and evaluation (``FULL`` is the command's)."""

    #: games recorded in all.
    episodes: int = 800
    #: the share of them the expert plays (rounded; the random player plays the rest).
    expert_share: float = 0.3
    #: optimizer steps of each trainer.
    train_steps: int = 300
    #: episodes per optimizer step.
    batch_size: int = 32
    #: AdamW learning rate.
    lr: float = 1e-3
    #: linear warm-up steps.
    warmup_steps: int = 20
    #: transformer blocks, width and attention heads of the (randomly initialised) GPT-2: one block of width 32
    #: learns this game as well as two of width 64 did in these steps, at about half the CPU time.
    n_layer: int = 1
    n_embd: int = 32
    n_head: int = 4
    #: the starting scale of the output logits (``trainers.core.model.ModelConfig.logit_scale``).
    logit_scale: float = 10.0
    #: Polyak rate of ILQL's target Q heads (``ILQLConfig.alpha``).
    ilql_alpha: float = 0.05
    #: ILQL plays its BC logits perturbed by ``beta * (Q - V)``; ``beta`` is chosen among these on held-out games
    #: (0 is ILQL's own imitation head alone; 16 is the ILQL authors' Wordle value).
    beta_grid: tuple[float, ...] = (0.0, 1.0, 4.0, 16.0, 64.0)
    #: held-out games per ``beta`` of the grid (seeded apart from the table's and the recorded games).
    beta_games: int = 100
    #: games each agent plays (the same seeded games for every agent).
    eval_games: int = 200
    #: seed of the recorded games, of training and of the evaluation's games.
    seed: int = 0
    #: recording processes (1: in this process, the fastest for a few hundred games).
    workers: int = 1

    def __post_init__(self) -> None:
        for name in ("episodes", "train_steps", "batch_size", "beta_games", "workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"DemoSettings.{name} must be >= 1, got {getattr(self, name)}")
        if self.eval_games < 2:
            raise ValueError(f"DemoSettings.eval_games must be >= 2 for a standard error, got {self.eval_games}")
        if not 0 < self.expert_share < 1:
            raise ValueError(f"DemoSettings.expert_share must be between 0 and 1, got {self.expert_share}")

    def recorded_games(self) -> dict[str, int]:
        """Games recorded per policy of ``RECORDED``: the expert's share (at least 1), the rest random."""
        expert = min(self.episodes - 1, max(1, round(self.episodes * self.expert_share))) if self.episodes > 1 else 1
        return {RECORDED[0][0]: expert, RECORDED[1][0]: self.episodes - expert}


#: the command's setting.
FULL = DemoSettings()


def make_env(seed: int = 0) -> Any:
    """The demo's Wordle environment."""
    from rlds_lang.wordle.env import WordleEnv

    return WordleEnv(answers=WORDS, guesses=WORDS, rule=RULE, mode=MODE, seed=seed)


def random_agent() -> Any:
    """The random player: a uniformly random word of the list every turn (it records most of the data)."""
    from rlds_lang.wordle.policies import RandomMixturePolicy

    return RandomMixturePolicy(prob_smart=0.0, answers=WORDS, guesses=WORDS, rule=RULE)


def expert_agent() -> Any:
    """The expert that records the minority of the data and tops the table (myopic maximum information gain)."""
    from rlds_lang.wordle.policies import OptimalPolicy

    return OptimalPolicy(answers=WORDS, guesses=WORDS, rule=RULE)


def record_games(settings: DemoSettings, logs: Path) -> dict[str, int]:
    """Records ``settings.recorded_games()`` under ``logs/<policy>`` in this process; returns the counts."""
    from loggers import record
    from rlds_lang.wordle.policies import make_policy

    counts = {}
    for k, ((name, params), games) in enumerate(zip(RECORDED, settings.recorded_games().values())):
        policy = make_policy(name, answers=WORDS, guesses=WORDS, rule=RULE, **params)
        seed = RECORD_SEED + (settings.seed * len(RECORDED) + k) * RECORD_SEED_STRIDE
        result = record(make_env(), policy, games, logs / name, seed=seed, run_name=f"demo-{name}",
                        workers=settings.workers, progress=False)
        counts[name] = result.num_episodes
    return counts


def read_back(dataset_dir: str) -> dict[str, PolicyData]:
    """Reads the built dataset with ``tfds.load``: games, mean return and win rate of each policy of ``RECORDED``
    (``transforms.statistics.dataset_statistics`` of its episodes)."""
    from transforms.loading import load
    from transforms.statistics import dataset_statistics

    episodes = load(dataset_dir)
    summary = {}
    for name, _ in RECORDED:
        stats = dataset_statistics(episodes.filter(lambda episode, name=name: episode["policy"] == name))
        summary[name] = PolicyData(stats["episodes"], stats["mean_return"], stats["win_rate"])
    return summary


def train_configs(settings: DemoSettings, dataset_dir: str, workdir: Path) -> dict[str, Any]:
    """The BC and ILQL configs of the demo, by algorithm name, in training order: ILQL's policy is BC's trained
    language model (``workdir/bc/checkpoint/lm``), held fixed, and its values sit on a second transformer that
    starts from the same weights (``separate_value_trunk``, ``awac_weight=0``)."""
    from trainers.algorithms.bc import BCConfig
    from trainers.algorithms.ilql.ilql import ILQLConfig
    from trainers.core.checkpoint import checkpoint_dir
    from trainers.core.model import ModelConfig

    s = settings
    model = ModelConfig(n_layer=s.n_layer, n_embd=s.n_embd, n_head=s.n_head, n_positions=64,
                        logit_scale=s.logit_scale)
    common = dict(dataset=dataset_dir, steps=s.train_steps, batch_size=s.batch_size, lr=s.lr,
                  warmup_steps=min(s.warmup_steps, s.train_steps), max_length=64, tokenizer=TOKENIZER,
                  log_every=max(1, min(10, s.train_steps // 10)), checkpoint_every=s.train_steps, seed=s.seed,
                  resume=False)
    bc_lm = checkpoint_dir(workdir / "bc") / "lm"
    # the BC checkpoint's output layer holds the logit scale already
    ilql_model = dataclasses.replace(model, checkpoint=str(bc_lm), logit_scale=None)
    return {"bc": BCConfig(out=str(workdir / "bc"), model=model, **common),
            "ilql": ILQLConfig(out=str(workdir / "ilql"), model=ilql_model, separate_value_trunk=True,
                               awac_weight=0.0, alpha=s.ilql_alpha, **common)}


def train_agents(settings: DemoSettings, dataset_dir: str, workdir: Path) -> dict[str, Any]:
    """Trains BC, then ILQL's values on top of it (``train_configs``), on ``TORCH_THREADS`` threads; returns their
    ``TrainResult`` by algorithm."""
    from trainers.algorithms.registry import train
    from trainers.evaluation.wordle import torch_threads

    with torch_threads(TORCH_THREADS):
        return {algorithm: train(algorithm, config, progress=False)
                for algorithm, config in train_configs(settings, dataset_dir, workdir).items()}


def eval_config(settings: DemoSettings, games: int, seed: int) -> Any:
    """The evaluation config of ``games`` demo games seeded from ``seed``."""
    from trainers.evaluation.wordle import EvalConfig

    return EvalConfig(games=games, seed=seed, rule=RULE, mode=MODE, answers=WORDS, guesses=WORDS)


def choose_beta(settings: DemoSettings, workdir: Path) -> tuple[float, dict[float, Any]]:
    """ILQL's ``beta``: the one of ``settings.beta_grid`` with the best mean return on held-out games (the first
    of equals); returns it and every ``beta``'s result."""
    from trainers.algorithms.registry import load_policy
    from trainers.evaluation.wordle import evaluate

    config = eval_config(settings, settings.beta_games, settings.seed + BETA_SEED_OFFSET)
    tried = {beta: evaluate(load_policy(workdir / "ilql" / "checkpoint", allowed_actions=WORDS, beta=beta,
                                        seed=settings.seed), config, name=f"ilql beta={beta:g}", progress=False)
             for beta in settings.beta_grid}
    best = max(tried, key=lambda beta: (tried[beta].mean_reward, -settings.beta_grid.index(beta)))
    return best, tried


def evaluate_agents(settings: DemoSettings, workdir: Path, beta: float) -> list[Any]:
    """Plays random, BC, ILQL (at ``beta``) and the expert on the same ``settings.eval_games`` seeded games."""
    from trainers.algorithms.registry import load_policy
    from trainers.evaluation.wordle import evaluate

    config = eval_config(settings, settings.eval_games, settings.seed)
    betas = {"bc": None, "ilql": beta}
    agents = [(RANDOM, random_agent())]
    agents += [(name, load_policy(workdir / name / "checkpoint", allowed_actions=WORDS, name=name, beta=betas[name],
                                  seed=settings.seed)) for name in ALGORITHMS]
    agents.append(("optimal", expert_agent()))
    return [evaluate(policy, config, name=name, progress=False) for name, policy in agents]


def warm_up_libraries() -> None:
    """Imports the libraries that reading the data back and training need (TensorFlow, TFDS, ``transformers``'
    GPT-2): ``run_demo`` runs it in a thread while the build runs in its own process, so that the seconds these
    imports take overlap the build's. An import that fails here fails again, with its error, where it is used."""
    try:
        import tensorflow  # noqa: F401
        import tensorflow_datasets  # noqa: F401
        from transformers import GPT2LMHeadModel  # noqa: F401
    except ImportError:
        pass


def run_demo(settings: DemoSettings, workdir: str | Path, say: Callable[[str], None] = print) -> DemoReport:
    """Runs the demo in the new folder ``workdir`` (it must not exist yet), writes its report there and returns it.

    ``say`` receives the progress lines (the report's ``text`` is not said: the caller prints or writes it).
    """
    from trainers.core.build import tfds_build
    from trainers.core.native_logs import quiet_native_logs
    from trainers.evaluation.wordle import save_results, torch_threads

    quiet_native_logs()  # the recording and the training processes inherit it
    started, load_average = time.perf_counter(), os.getloadavg()[0]
    workdir = Path(workdir)
    if workdir.exists():
        raise FileExistsError(f"demo: {workdir} already exists; give a new folder")
    logs, data = workdir / "logs", workdir / "tfds"
    planned = settings.recorded_games()
    say(f"[1/5] recording {planned['optimal']} expert and {planned['random_mixture']} random games of Wordle on the "
        f"{WORDS} list into {logs}")
    recorded = record_games(settings, logs)
    say(f"[2/5] tfds build wordle_synthetic --imports rlds_lang_datasets --config manual_dir --manual_dir {logs}")
    built = time.perf_counter()
    warming = threading.Thread(target=warm_up_libraries, name="demo-imports", daemon=True)
    warming.start()  # on the other core while the build process runs
    dataset_dir = tfds_build("wordle_synthetic", "manual_dir", data, manual_dir=logs, quiet=True)
    warming.join()
    say(f"      built in {time.perf_counter() - built:.0f} s -> {dataset_dir}")
    data_summary = read_back(dataset_dir)
    say("[3/5] tfds.load: " + "; ".join(f"{policy} {d.games} games, mean return {d.mean_return:.2f}, won "
                                        f"{d.win_rate:.0%}" for policy, d in data_summary.items()))
    say(f"[4/5] training BC, then ILQL's values on top of it, {settings.train_steps} steps of "
        f"{settings.batch_size} games each")
    trained = train_agents(settings, dataset_dir, workdir)
    say("      " + "; ".join(f"{algorithm}: {result.seconds:.0f} s, final loss "
                             f"{result.final_metrics.get('loss', float('nan')):.3f}"
                             for algorithm, result in trained.items()))
    with torch_threads(TORCH_THREADS):
        beta, tried = choose_beta(settings, workdir)
        say(f"      ILQL's beta on {settings.beta_games} held-out games: "
            + ", ".join(f"{b:g} -> {r.mean_reward:.3f}" for b, r in tried.items()) + f"; chosen {beta:g}")
        say(f"[5/5] playing random, BC, ILQL and the expert on the same {settings.eval_games} new games")
        results = evaluate_agents(settings, workdir, beta)
    save_results(results, workdir / "results.json")
    report = DemoReport(settings=settings, results=results, verdicts=verdicts(results), workdir=workdir,
                        plot=workdir / "demo.png", dataset_dir=dataset_dir, seconds=time.perf_counter() - started,
                        recorded=recorded, data=data_summary, beta_returns={b: r.mean_reward for b, r in tried.items()},
                        beta=beta, openings=opening_shares(results), load_average=load_average)
    report.write(workdir / "report.md")
    return report


def run_seeds(settings: DemoSettings, root: str | Path, seeds: int, say: Callable[[str], None] = print) -> list[DemoReport]:
    """``run_demo`` with ``settings.seed`` and the next ``seeds - 1`` seeds, each in ``root/seed-<seed>`` (one seed:
    in ``root``)."""
    root = Path(root)
    if seeds == 1:
        return [run_demo(settings, root, say)]
    reports = []
    for seed in range(settings.seed, settings.seed + seeds):
        say(f"seed {seed}:")
        reports.append(run_demo(dataclasses.replace(settings, seed=seed), root / f"seed-{seed}", say))
    return reports


def write_document(reports: Sequence[DemoReport], path: str | Path) -> Path:
    """Writes the first report as the markdown guide ``path``, with its plot beside it (``<stem>.png``) and the
    verdicts of every report's seed."""
    import shutil

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    plot = path.with_suffix(".png")
    shutil.copyfile(reports[0].plot, plot)
    path.write_text(reports[0].document(plot.name, DOC_COMMAND, seeds=reports), encoding="utf-8")
    return path


def timestamped(root: str | Path, prefix: str = "demo") -> Path:
    """A new folder name ``root/<prefix>-YYYYmmdd-HHMMSS`` for one run."""
    return Path(root) / f"{prefix}-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}"


__all__ = ["WORDS", "RULE", "MODE", "RECORDED", "ALGORITHMS", "RANDOM", "BETA_SEED_OFFSET", "TORCH_THREADS",
           "DOC_COMMAND", "DOC_SEEDS", "DemoSettings", "FULL", "Verdict", "DemoReport", "make_env", "random_agent",
           "expert_agent", "record_games", "read_back", "train_configs", "train_agents", "TOKENIZER", "warm_up_libraries",
           "eval_config", "choose_beta", "evaluate_agents", "verdicts", "run_demo", "run_seeds", "write_document",
           "timestamped"]
