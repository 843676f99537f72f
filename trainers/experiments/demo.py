"""``rlds-lang demo``: the whole pipeline on a Wordle small enough that a tiny model visibly learns it in minutes.

What it does, in order: records games of an expert (``OptimalPolicy``) and of a random mixture (a random word
consistent with the feedback half of the time, else any random word) with ``loggers.record``; builds them with
``tfds build`` (``builders/wordle_synthetic``, config ``manual_dir``); loads them back with ``tfds.load`` (statistics
and one game); trains behaviour cloning (BC) and ILQL on them through ``trainers.algorithms.registry.train``; and
plays every agent -- a uniformly random valid-word agent, BC, ILQL and the expert -- on the same seeded games
(``trainers.evaluation.wordle``). It prints a table, a verdict per learned agent computed from the paired return
difference to the random agent (``trainers.evaluation.stats.paired_difference``), and writes one PNG with the
training curves beside the returns; ``document`` renders the same as markdown (``rlds-lang demo --doc``).

Why this setting learns where the full game does not in a few minutes on a CPU: the word list is the shipped
32-word ``demo_words`` (guesses and answers at once), every word is one token and each feedback is five
(letter, colour) cells (``rlds_lang.wordle.board_tokenizer.WordBoardTokenizer``), and the model starts its output
logits at a scale that lets it commit to a few words early (``ModelConfig.logit_scale``). Each choice counts: BC of
the full setting won 79% of 200 games; with the same data and steps it won 47.5% without the logit scale and 62%
with feedback as one token (``rlds_lang.tokenizers.word_tokenizer``). BC and ILQL are the pair shown because they are
the ILQL paper's comparison: BC imitates every recorded game, ILQL learns values from the rewards and tilts the same
imitation by ``beta * (Q - V)``; ``beta`` is chosen on held-out games, as LMRL-Gym's scripts choose it (the authors'
16 played worse than BC after this short training).

Size: one module, like every results page's experiment: the demo's settings, its run and the page it prints belong
together, and its report class is most of the length.

Example::

    from trainers.experiments.demo import FULL, run_demo

    report = run_demo(FULL, "runs/demo")
    print(report.text())
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from trainers.core.provenance import generated_by

#: the word list of guesses and answers (``rlds_lang.wordle.words.demo_words``; 32 words, MIT, with its source).
WORDS = "demo_words"
#: the demo's tokenizer (words as tokens, feedback as cells), by the name training configs give it.
TOKENIZER = f"words_board:{WORDS}"
#: the colouring rule and hidden-word mode of the games (the ordinary game).
RULE, MODE = "official", "fixed"
#: the recorded policies: ``(name for make_policy, its parameters)``; the expert, then the random mixture.
RECORDED = (("optimal", {}), ("random_mixture", {"prob_smart": 0.5}))
#: recorded game ``i`` of policy ``k`` is seeded ``RECORD_SEED + k * RECORD_SEED_STRIDE + i``; the evaluation's
#: games are seeded from ``DemoSettings.seed`` (0 by default), so they are not the recorded games.
RECORD_SEED, RECORD_SEED_STRIDE = 1_000_000, 1_000_000
#: the algorithms trained, in the table's order.
ALGORITHMS = ("bc", "ilql")
#: the baseline of the verdicts: a uniformly random word of the list every turn.
RANDOM = "random"
#: a learned agent "beats random" when its mean paired return difference exceeds this many standard errors.
VERDICT_SE = 2.0
#: the held-out games that choose ILQL's ``beta`` are seeded from ``DemoSettings.seed + BETA_SEED_OFFSET``.
BETA_SEED_OFFSET = 500_000
#: torch threads while training and playing: a model this small gains little from a second thread, and on a shared
#: 2-core machine two threads spin against the other processes (measured: 60 BC steps took 5.9 s on one thread,
#: 33 s on two, with two test suites running beside them).
TORCH_THREADS = 1
#: the command that regenerates the committed guide, run from the repository's root.
DOC_COMMAND = "rlds-lang demo --doc docs/demo.md"


@dataclasses.dataclass(frozen=True)
class DemoSettings:
    """How big the demo runs: games recorded, training, model and evaluation (``FULL`` is the command's)."""

    #: games recorded per policy (expert and random mixture).
    episodes: int = 400
    #: optimizer steps of each trainer.
    train_steps: int = 400
    #: episodes per optimizer step.
    batch_size: int = 32
    #: AdamW learning rate.
    lr: float = 1e-3
    #: linear warm-up steps.
    warmup_steps: int = 20
    #: transformer blocks, width and attention heads of the (randomly initialised) GPT-2.
    n_layer: int = 2
    n_embd: int = 64
    n_head: int = 4
    #: the starting scale of the output logits (``trainers.core.model.ModelConfig.logit_scale``).
    logit_scale: float = 10.0
    #: ILQL plays its BC logits perturbed by ``beta * (Q - V)``; ``beta`` is chosen among these on held-out games
    #: (0 is ILQL's own imitation head alone; 16 is the ILQL authors' Wordle value).
    beta_grid: tuple[float, ...] = (0.0, 1.0, 4.0, 16.0)
    #: held-out games per ``beta`` of the grid (seeded apart from the table's and the recorded games).
    beta_games: int = 100
    #: games each agent plays (the same seeded games for every agent).
    eval_games: int = 200
    #: seed of training and of the evaluation's games.
    seed: int = 0
    #: recording processes.
    workers: int = 2

    def __post_init__(self) -> None:
        for name in ("episodes", "train_steps", "batch_size", "eval_games", "beta_games", "workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"DemoSettings.{name} must be >= 1, got {getattr(self, name)}")
        if self.eval_games < 2:
            raise ValueError(f"DemoSettings.eval_games must be >= 2 for a standard error, got {self.eval_games}")


#: the command's setting: on the 2-core machine the whole demo takes under 3 minutes.
FULL = DemoSettings()


@dataclasses.dataclass
class Verdict:
    """A learned agent against the random agent on the same games: the mean paired return difference and its SE."""

    agent: str
    difference: float
    stderr: float
    win_rate: float

    @property
    def beats_random(self) -> bool:
        """Whether the agent's return is above the random agent's by more than ``VERDICT_SE`` standard errors."""
        return self.difference > VERDICT_SE * self.stderr

    def sentence(self) -> str:
        """The verdict in plain words, with its numbers."""
        ratio = self.difference / self.stderr if self.stderr > 0 else float("inf")
        verb = "beats" if self.beats_random else "does NOT beat"
        return (f"{self.agent} {verb} random by more than {VERDICT_SE:g} SE: return difference "
                f"{self.difference:+.3f} ± {self.stderr:.3f} ({ratio:.1f} SE), win rate {self.win_rate:.1%}.")


@dataclasses.dataclass
class DemoReport:
    """Everything the demo measured: the settings, the evaluation results, the verdicts and where files went."""

    settings: DemoSettings
    results: list[Any]
    verdicts: list[Verdict]
    workdir: Path
    plot: Path
    dataset_dir: str
    seconds: float
    recorded: dict[str, int]
    #: ILQL's mean return on the held-out games for each ``beta`` tried, and the one chosen.
    beta_returns: dict[float, float]
    beta: float
    #: the machine's one-minute load average when the run started (other processes sharing the CPU).
    load_average: float = float("nan")

    def ilql_against_bc(self) -> str:
        """ILQL's paired return difference to BC on the same games, in plain words (computed, like the verdicts)."""
        from trainers.evaluation.stats import paired_separation

        by_name = {r.name: r for r in self.results}
        difference, stderr, side = paired_separation(by_name["ilql"], by_name["bc"])
        said = {1: "ILQL plays better than BC by more than 2 SE", -1: "ILQL plays worse than BC by more than 2 SE",
                0: "ILQL and BC are within 2 SE of each other"}[side]
        return f"ILQL − BC (same games): {difference:+.3f} ± {stderr:.3f}: {said}."

    def table(self) -> str:
        """The markdown table of every agent, with the paired difference to the random agent."""
        from trainers.evaluation.wordle import results_table

        return results_table(self.results, baseline=RANDOM)

    def setting_lines(self) -> list[str]:
        """What was trained on what, in plain words."""
        s = self.settings
        counts = ", ".join(f"{n} {name}" for name, n in self.recorded.items())
        return [
            f"Wordle on a 32-word list (`{WORDS}`: every word is both a possible answer and an allowed guess; "
            f"{RULE} colouring, 6 guesses, reward -1 per guess that is not the answer, 0 for the winning one).",
            f"Data: {counts} games recorded with loggers.record, built with tfds build and read back with tfds.load.",
            f"Trained on it: BC (imitates every recorded move) and ILQL (learns Q and V from the rewards and plays "
            f"the imitation tilted by β·(Q − V)), each {s.train_steps} steps of {s.batch_size} games "
            f"on a randomly initialised GPT-2 ({s.n_layer} layers, width {s.n_embd}) that reads each guess as one "
            f"token and each feedback as five (letter, colour) tokens.",
            f"ILQL's β = {self.beta:g}, chosen on {s.beta_games} held-out games (mean return "
            + ", ".join(f"β={b:g}: {r:.3f}" for b, r in self.beta_returns.items()) + ").",
            f"Evaluated: every agent plays the same {s.eval_games} seeded games (not the recorded ones); the learned "
            f"agents sample each guess among the 32 words from what they learned (temperature 1); `{RANDOM}` "
            f"guesses a uniformly random list word each turn, `optimal` is the expert that recorded half the data.",
        ]

    def column_lines(self) -> list[str]:
        """What the table's columns mean."""
        return [
            "mean reward ± SE: the mean return per game (0 = solved on the first guess, -6 = not solved) and its "
            "standard error; win rate ± SE: the share of games solved within 6 guesses.",
            f"Δ vs {RANDOM} ± SE: the mean per-game return difference to the random agent on the same games, with "
            f"its paired standard error; beyond 2 SE: whether that difference is larger than twice its SE.",
        ]

    def text(self) -> str:
        """The plain-text summary the command prints after its progress lines."""
        lines = ["", "What you are looking at:", *("  " + line for line in self.setting_lines()), "",
                 self.table(), "", "Columns:", *("  " + line for line in self.column_lines()), "", "Verdicts:"]
        lines += ["  " + v.sentence() for v in self.verdicts] + ["  " + self.ilql_against_bc()]
        lines += ["", f"Plot (training curves beside the returns): {self.plot}",
                  f"demo finished in {self.seconds:.0f} s; everything is under {self.workdir}"]
        return "\n".join(lines)

    def document(self, plot_name: str) -> str:
        """The guide ``docs/demo.md`` as markdown, showing the plot ``plot_name`` (a path relative to the guide)."""
        today = datetime.date.today().isoformat()
        lines = ["# The demo: Wordle agents that learn in a few minutes", "",
                 f"{generated_by(DOC_COMMAND)} on {today}, in "
                 f"{self.seconds:.0f} s on a {os.cpu_count()}-core machine whose load average was "
                 f"{self.load_average:.1f} when it started. `rlds-lang demo` alone prints the same without writing "
                 "this page; `rlds-lang demo --help` lists its options.", "",
                 "The pipeline: record games (`loggers.record`) -> `tfds build` (`builders/wordle_synthetic`, config "
                 "`manual_dir`) -> `tfds.load` -> train BC and ILQL (`trainers.algorithms.registry.train`) -> play "
                 "every agent on the same seeded games (`trainers.evaluation.wordle`). The code and its settings: "
                 "`trainers/experiments/demo.py`.", "", "## What was trained on what", ""]
        lines += ["- " + line for line in self.setting_lines()]
        lines += ["", "## The table", "", self.table(), ""]
        lines += ["- " + line for line in self.column_lines()]
        lines += ["", "## Verdicts (computed from the table's games)", ""]
        lines += ["- " + v.sentence() for v in self.verdicts] + ["- " + self.ilql_against_bc()]
        lines += ["", "## Training curves and returns", "", f"![training curves and returns]({plot_name})", "",
                  "Left: BC's loss (negative log-likelihood of the recorded guesses) by step. Middle: ILQL's loss "
                  "terms by step. Right: each agent's mean return ± 1 SE on the evaluation games, with its win "
                  "rate under its name.", ""]
        return "\n".join(lines)


def make_env(seed: int = 0) -> Any:
    """The demo's Wordle environment."""
    from rlds_lang.wordle.env import WordleEnv

    return WordleEnv(answers=WORDS, guesses=WORDS, rule=RULE, mode=MODE, seed=seed)


def random_agent() -> Any:
    """The baseline: a uniformly random word of the list every turn."""
    from rlds_lang.wordle.policies import RandomMixturePolicy

    return RandomMixturePolicy(prob_smart=0.0, answers=WORDS, guesses=WORDS, rule=RULE)


def expert_agent() -> Any:
    """The expert that records half the data and tops the table (myopic maximum information gain)."""
    from rlds_lang.wordle.policies import OptimalPolicy

    return OptimalPolicy(answers=WORDS, guesses=WORDS, rule=RULE)


def record_games(settings: DemoSettings, logs: Path) -> dict[str, int]:
    """Records ``settings.episodes`` games of each policy of ``RECORDED`` under ``logs/<policy>``; returns the
    counts."""
    from loggers import record
    from rlds_lang.wordle.policies import make_policy

    counts = {}
    for k, (name, params) in enumerate(RECORDED):
        policy = make_policy(name, answers=WORDS, guesses=WORDS, rule=RULE, **params)
        result = record(make_env(), policy, settings.episodes, logs / name,
                        seed=RECORD_SEED + k * RECORD_SEED_STRIDE, run_name=f"demo-{name}",
                        workers=settings.workers, progress=False)
        counts[name] = result.num_episodes
    return counts


def render_episode(steps: Sequence[dict]) -> str:
    """One Wordle episode as lines ``guess  squares  reward``."""
    return "\n".join(f"  {step['action']}  {nxt['observation']['text']}  reward {step['reward']:+.0f}"
                     for step, nxt in zip(steps, steps[1:]))


def show_dataset(dataset_dir: str, say: Callable[[str], None]) -> None:
    """Loads the built dataset with ``tfds.load`` and shows its statistics and its first game."""
    from transforms.loading import load
    from transforms.statistics import compute_statistics

    episodes = load(dataset_dir)
    say("\n".join("  " + line for line in compute_statistics(episodes).table().splitlines()))
    first = next(iter(episodes.take(1)))
    steps = [{"action": st["action"].decode(), "reward": float(st["reward"]),
              "observation": {"text": st["observation"]["text"].decode()}}
             for st in first["steps"].as_numpy_iterator()]
    meta = {k: first[k].numpy().decode() for k in ("episode_id", "answer", "policy")}
    say(f"  episode {meta['episode_id']} (answer {meta['answer']!r}, policy {meta['policy']}):")
    say(render_episode(steps))


def train_configs(settings: DemoSettings, dataset_dir: str, workdir: Path) -> dict[str, Any]:
    """The BC and ILQL configs of the demo, by algorithm name."""
    from trainers.algorithms.bc import BCConfig
    from trainers.algorithms.ilql.ilql import ILQLConfig
    from trainers.core.model import ModelConfig

    s = settings
    model = ModelConfig(n_layer=s.n_layer, n_embd=s.n_embd, n_head=s.n_head, n_positions=64,
                        logit_scale=s.logit_scale)
    common = dict(dataset=dataset_dir, steps=s.train_steps, batch_size=s.batch_size, lr=s.lr,
                  warmup_steps=min(s.warmup_steps, s.train_steps), max_length=64, model=model, tokenizer=TOKENIZER,
                  log_every=max(1, min(10, s.train_steps // 10)), checkpoint_every=s.train_steps, seed=s.seed,
                  resume=False)
    return {"bc": BCConfig(out=str(workdir / "bc"), **common),
            "ilql": ILQLConfig(out=str(workdir / "ilql"), **common)}


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


def verdicts(results: Sequence[Any]) -> list[Verdict]:
    """Each learned agent's paired return difference to the random agent (``paired_difference``)."""
    from trainers.evaluation.stats import paired_difference

    by_name = {r.name: r for r in results}
    found = []
    for name in ALGORITHMS:
        difference, stderr = paired_difference(by_name[name], by_name[RANDOM])
        found.append(Verdict(name, difference, stderr, by_name[name].win_rate))
    return found


def plot_demo(results: Sequence[Any], workdir: Path, path: Path) -> Path:
    """One PNG: BC's loss, ILQL's loss terms (by step) and every agent's mean return ± 1 SE."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from trainers.core.plots import read_metrics

    curves = {"bc": ("nll",), "ilql": ("awac_loss", "q_loss", "v_loss")}
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, (algorithm, keys) in zip(axes, curves.items()):
        rows = read_metrics(workdir / algorithm / "metrics.jsonl")
        for key in keys:
            points = [(row["step"], row[key]) for row in rows if key in row]
            ax.plot([p[0] for p in points], [p[1] for p in points], lw=1.4, label=key)
        ax.set_title(f"{algorithm.upper()} training loss", fontsize=10)
        ax.set_xlabel("optimizer step")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    ax = axes[2]
    x = np.arange(len(results))
    ax.bar(x, [r.mean_reward for r in results], yerr=[r.stderr for r in results], capsize=4,
           color=["tab:gray" if r.name in (RANDOM, "optimal") else "tab:blue" for r in results])
    ax.set_xticks(x, [f"{r.name}\nwins {r.win_rate:.0%}" for r in results])
    ax.set_ylim(-6, 0)
    ax.set_title(f"mean return ± 1 SE ({results[0].games} games each)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"rlds-lang demo: Wordle on the {WORDS} list", fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def run_demo(settings: DemoSettings, workdir: str | Path, say: Callable[[str], None] = print) -> DemoReport:
    """Runs the demo in the new folder ``workdir`` (it must not exist yet) and returns its report.

    ``say`` receives the progress lines (the report's ``text`` is not said: the caller prints or writes it).
    """
    from trainers.algorithms.registry import train
    from trainers.core.build import tfds_build
    from trainers.evaluation.wordle import save_results, torch_threads

    started, load_average = time.perf_counter(), os.getloadavg()[0]
    workdir = Path(workdir)
    if workdir.exists():
        raise FileExistsError(f"demo: {workdir} already exists; give a new folder")
    logs, data = workdir / "logs", workdir / "tfds"
    say(f"[1/5] recording {settings.episodes} expert and {settings.episodes} random-mixture games of Wordle on the "
        f"{WORDS} list into {logs}")
    recorded = record_games(settings, logs)
    say(f"[2/5] tfds build wordle_synthetic --imports rlds_lang_datasets --config manual_dir --manual_dir {logs}")
    dataset_dir = tfds_build("wordle_synthetic", "manual_dir", data, manual_dir=logs)
    say(f"[3/5] tfds.load {dataset_dir}: statistics and one game")
    show_dataset(dataset_dir, say)
    say(f"[4/5] training BC and ILQL for {settings.train_steps} steps each")
    with torch_threads(TORCH_THREADS):
        for algorithm, config in train_configs(settings, dataset_dir, workdir).items():
            result = train(algorithm, config, progress=False)
            say(f"      {algorithm}: {result.steps} steps in {result.seconds:.0f} s, final loss "
                f"{result.final_metrics.get('loss', float('nan')):.3f}")
        beta, tried = choose_beta(settings, workdir)
        say(f"      ILQL's beta on {settings.beta_games} held-out games: "
            + ", ".join(f"{b:g} -> {r.mean_reward:.3f}" for b, r in tried.items()) + f"; chosen {beta:g}")
        say(f"[5/5] playing random, BC, ILQL and the expert on the same {settings.eval_games} seeded games")
        results = evaluate_agents(settings, workdir, beta)
    save_results(results, workdir / "results.json")
    plot = plot_demo(results, workdir, workdir / "demo.png")
    beta_returns = {b: r.mean_reward for b, r in tried.items()}
    return DemoReport(settings, results, verdicts(results), workdir, plot, dataset_dir, time.perf_counter() - started,
                      recorded, beta_returns, beta, load_average)


def write_document(report: DemoReport, path: str | Path) -> Path:
    """Writes the report as the markdown guide ``path`` with its plot beside it (``<stem>.png``)."""
    import shutil

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    plot = path.with_suffix(".png")
    shutil.copyfile(report.plot, plot)
    path.write_text(report.document(plot.name), encoding="utf-8")
    return path


def timestamped(root: str | Path, prefix: str = "demo") -> Path:
    """A new folder name ``root/<prefix>-YYYYmmdd-HHMMSS`` for one run."""
    return Path(root) / f"{prefix}-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}"


__all__ = ["WORDS", "RULE", "MODE", "RECORDED", "ALGORITHMS", "RANDOM", "VERDICT_SE", "BETA_SEED_OFFSET",
           "TORCH_THREADS", "DOC_COMMAND", "DemoSettings", "FULL", "Verdict", "DemoReport", "make_env", "random_agent",
           "expert_agent", "record_games", "render_episode", "show_dataset", "train_configs", "TOKENIZER",
           "eval_config", "choose_beta", "evaluate_agents", "verdicts", "plot_demo", "run_demo", "write_document",
           "timestamped"]
