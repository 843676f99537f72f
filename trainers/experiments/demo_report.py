"""What ``rlds-lang demo`` (``trainers.experiments.demo``) measured, and the text, page and plot it makes of it.

The verdicts are computed from the per-game returns of the agents on the same games
(``trainers.evaluation.stats.paired_separation``), ILQL against BC first; ``DemoReport.text`` is the screen the
command prints (the table, the verdicts, the agents' opening words), ``DemoReport.document`` the markdown guide with
the setting, the columns explained, the verdicts of several seeds and the plot.

Example::

    from trainers.experiments.demo_report import verdicts

    for verdict in verdicts(results):   # results: the EvalResults of random, bc, ilql and optimal
        print(verdict.sentence())
"""

from __future__ import annotations

import dataclasses
import datetime
import os
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from trainers.core.provenance import generated_by
from trainers.evaluation.stats import SEPARATION_FACTOR, in_standard_errors, paired_separation

#: the comparisons the verdicts make, ``(agent, baseline)``: the point of the demo first.
COMPARISONS = (("ilql", "bc"), ("ilql", "random"), ("bc", "random"))
#: the agent that records the minority of the data: its opening word is the one the others are counted against.
EXPERT = "optimal"
#: what the data's policies are called on the page (their names in the recorded episodes).
POLICY_WORDS = {"optimal": "the expert", "random_mixture": "the random player"}


@dataclasses.dataclass(frozen=True)
class PolicyData:
    """The games one recorded policy contributed, as ``tfds.load`` read them back."""

    games: int
    mean_return: float
    win_rate: float


@dataclasses.dataclass(frozen=True)
class Verdict:
    """``agent`` against ``baseline`` on the same games: the mean paired return difference, its SE and its side
    (+1 / -1: above / below by more than ``SEPARATION_FACTOR`` SE; 0: within)."""

    agent: str
    baseline: str
    difference: float
    stderr: float
    side: int
    win_rates: tuple[float, float]

    @property
    def beats(self) -> bool:
        """Whether ``agent``'s return is above ``baseline``'s by more than ``SEPARATION_FACTOR`` standard errors."""
        return self.side > 0

    def sentence(self) -> str:
        """The verdict in plain words, with its numbers."""
        said = {1: "beats", 0: "does NOT beat", -1: "is worse than"}[self.side]
        return (f"{self.agent} {said} {self.baseline} by more than {SEPARATION_FACTOR:g} SE: return difference "
                f"{self.difference:+.3f} ± {self.stderr:.3f} ({in_standard_errors(self.difference, self.stderr):.1f} "
                f"SE); win rate {self.win_rates[0]:.1%} against {self.win_rates[1]:.1%}.")


def verdicts(results: Sequence[Any]) -> list[Verdict]:
    """The ``COMPARISONS`` of ``results`` (``EvalResult``s on the same games, by name), paired per game."""
    by_name = {r.name: r for r in results}
    found = []
    for agent, baseline in COMPARISONS:
        difference, stderr, side = paired_separation(by_name[agent], by_name[baseline])
        found.append(Verdict(agent, baseline, difference, stderr, side,
                             (by_name[agent].win_rate, by_name[baseline].win_rate)))
    return found


def opening_shares(results: Sequence[Any]) -> dict[str, dict[str, float]]:
    """Per agent, the share of its games opened with each word (from the games' recorded actions)."""
    shares = {}
    for result in results:
        counts = Counter(game[0] for game in result.actions if game)
        shares[result.name] = {word: n / result.games for word, n in counts.most_common()}
    return shares


@dataclasses.dataclass
class DemoReport:
    """Everything one demo run measured: the settings, the data read back, the evaluation results, the verdicts and
    where its files went."""

    settings: Any
    results: list[Any]
    verdicts: list[Verdict]
    workdir: Path
    plot: Path
    dataset_dir: str
    seconds: float
    #: games recorded per policy, and what ``tfds.load`` read back of them.
    recorded: dict[str, int]
    data: dict[str, PolicyData]
    #: ILQL's mean return on the held-out games for each ``beta`` tried, and the one chosen.
    beta_returns: dict[float, float]
    beta: float
    #: per agent, the share of its evaluation games opened with each word (``opening_shares``).
    openings: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    #: the machine's one-minute load average when the run started (other processes sharing the CPU).
    load_average: float = float("nan")

    def verdict(self, agent: str, baseline: str) -> Verdict:
        """The verdict of ``agent`` against ``baseline``."""
        return next(v for v in self.verdicts if (v.agent, v.baseline) == (agent, baseline))

    def table(self) -> str:
        """The markdown table of every agent, with the paired difference to BC."""
        from trainers.evaluation.wordle import results_table

        return results_table(self.results, baseline="bc")

    def opening_line(self) -> str:
        """How often each agent opened with the expert's first word (computed from the evaluation games)."""
        expert_shares = self.openings.get(EXPERT, {})
        if not expert_shares:
            return "Opening words: the expert's games were not recorded."
        word = next(iter(expert_shares))
        agents = [name for name in self.openings if name != EXPERT]
        shares = ", ".join(f"{name} {self.openings[name].get(word, 0.0):.0%}" for name in agents)
        return (f"Opening words: the expert opened {expert_shares[word]:.0%} of its games with {word!r}; "
                f"of the other agents' games, these opened with it: {shares}.")

    def data_line(self) -> str:
        """The recorded data as ``tfds.load`` read it back: games, mean return and win rate per policy."""
        return "; ".join(f"{POLICY_WORDS.get(policy, policy)} ({policy}) {d.games} games, mean return "
                         f"{d.mean_return:.2f}, won {d.win_rate:.0%}" for policy, d in self.data.items())

    def text(self) -> str:
        """The screen the command prints after its progress lines: table, verdicts, opening words, where to read on."""
        s = self.settings
        lines = ["", f"Every agent played the same {s.eval_games} new games (seeded {s.seed}..{s.seed + s.eval_games - 1};"
                     f" none was recorded). Return: -1 per guess that is not the answer (0 = first guess right, "
                     f"-6 = lost).", "", self.table(), "",
                 f"Verdicts (paired differences on those games, computed by trainers.evaluation.stats):"]
        lines += ["  " + v.sentence() for v in self.verdicts]
        lines += ["", self.opening_line(), "",
                  f"What it shows, the setting and the columns: docs/demo.md. This run (report.md, results.json, "
                  f"demo.png, the data and both checkpoints): {self.workdir}",
                  f"demo finished in {self.seconds:.0f} s"]
        return "\n".join(lines)

    def setting_lines(self) -> list[str]:
        """What was recorded, trained and played, in plain words."""
        s = self.settings
        return [
            "Wordle on a 32-word list (`demo_words`: every word is both a possible answer and an allowed guess; "
            "official colouring, 6 guesses, reward -1 per guess that is not the answer, 0 for the winning one).",
            f"Data: {sum(self.recorded.values())} games recorded with `loggers.record`, {s.expert_share:.0%} of them "
            f"by the expert (`OptimalPolicy`: myopic maximum information gain) and the rest by a player guessing a "
            f"uniformly random list word every turn, built with `tfds build` and read back with `tfds.load`: "
            f"{self.data_line()}. The episodes do not say which games are good; only the rewards do.",
            f"Trained on it: BC, which imitates every recorded move, on a randomly initialised GPT-2 ({s.n_layer} "
            f"layers, width {s.n_embd}) that reads each guess as one token and each feedback as five (letter, colour) "
            f"tokens; then ILQL's Q and V, learned from the rewards on a second transformer started from BC's weights "
            f"(target heads' Polyak rate {s.ilql_alpha:g}), with BC as its policy (LMRL-Gym's arrangement): ILQL "
            f"plays BC's logits tilted by β·(Q − V), so at β = 0 it is BC. Each {s.train_steps} steps of "
            f"{s.batch_size} games.",
            f"ILQL's β = {self.beta:g}, chosen on {s.beta_games} held-out games (mean return "
            + ", ".join(f"β={b:g}: {r:.3f}" for b, r in self.beta_returns.items()) + ").",
            f"Evaluated: every agent plays the same {s.eval_games} new seeded games (none of them recorded; the 32 "
            f"answers are the same words as in the data, it is a 32-word game); the learned agents sample each guess "
            f"among the 32 words from what they learned (temperature 1); `random` is the random player, `optimal` "
            f"the expert.",
        ]

    def column_lines(self) -> list[str]:
        """What the table's columns mean."""
        return [
            "mean reward ± SE: the mean return per game (0 = solved on the first guess, -6 = not solved) and its "
            "standard error; win rate ± SE: the share of games solved within 6 guesses.",
            "Δ vs bc ± SE: the mean per-game return difference to BC on the same games, with its paired standard "
            "error; beyond 2 SE: whether that difference is larger than twice its SE.",
        ]

    def seed_rows(self, seeds: Sequence["DemoReport"]) -> list[str]:
        """A markdown table of each seed's run: BC's and ILQL's mean returns and each verdict's difference."""
        header = ["seed", "bc", "ilql", "β"] + [f"{a} − {b} ± SE" for a, b in COMPARISONS]
        rows = [header, ["---"] * len(header)]
        for report in seeds:
            by_name = {r.name: r for r in report.results}
            rows.append([str(report.settings.seed), f"{by_name['bc'].mean_reward:.3f}",
                         f"{by_name['ilql'].mean_reward:.3f}", f"{report.beta:g}"]
                        + [f"{v.difference:+.3f} ± {v.stderr:.3f} ({in_standard_errors(v.difference, v.stderr):.1f} "
                           f"SE{', beyond 2 SE' if v.beats else ''})" for v in report.verdicts])
        return ["| " + " | ".join(row) + " |" for row in rows]

    def seed_summary(self, seeds: Sequence["DemoReport"]) -> str:
        """Whether every seed's verdicts agree, in plain words (computed)."""
        lines = []
        for agent, baseline in COMPARISONS:
            held = [r.settings.seed for r in seeds if r.verdict(agent, baseline).beats]
            differences = [r.verdict(agent, baseline).difference for r in seeds]
            lines.append(f"{agent} beats {baseline} by more than {SEPARATION_FACTOR:g} SE in {len(held)} of "
                         f"{len(seeds)} seeds (differences {min(differences):+.3f} to {max(differences):+.3f}).")
        return " ".join(lines)

    def document(self, plot_name: str, command: str, seeds: Sequence["DemoReport"] = ()) -> str:
        """The report as a markdown page showing the plot ``plot_name`` (relative to the page), opening with
        ``command``; ``seeds``: the reports of the seeds to tabulate (this one first)."""
        today = datetime.date.today().isoformat()
        seeds = list(seeds) or [self]
        lines = ["# The demo: offline RL against imitation, on games that are mostly poor play", "",
                 f"{generated_by(command)} on {today}: the run below took {self.seconds:.0f} s on a "
                 f"{os.cpu_count()}-core machine whose load average was {self.load_average:.1f} when it started. "
                 "`rlds-lang demo` prints the table and the verdicts of one run and writes this page into its run "
                 "folder (`report.md`); `rlds-lang demo --help` lists its options.", "",
                 "The question: when good play is only a minority of the recorded games, and nothing but the "
                 "rewards says which games are good, does offline RL (ILQL) play better than imitation (BC) of the "
                 "same games? BC copies every recorded move, so it plays like the data's average; ILQL learns from "
                 "the rewards which moves lead to a win and tilts the same imitation towards them.", "",
                 "The pipeline: record games (`loggers.record`) -> `tfds build` (`builders/wordle_synthetic`, config "
                 "`manual_dir`) -> `tfds.load` -> train BC and ILQL (`trainers.algorithms.registry.train`) -> play "
                 "every agent on the same seeded games (`trainers.evaluation.wordle`). The code and its settings: "
                 "`trainers/experiments/demo.py` (its docstring says why this data).", "",
                 "## What was recorded, trained and played", ""]
        lines += ["- " + line for line in self.setting_lines()]
        lines += ["", f"## The table (seed {self.settings.seed})", "", self.table(), ""]
        lines += ["- " + line for line in self.column_lines()]
        lines += ["", "## Verdicts (computed from the table's games)", ""]
        lines += ["- " + v.sentence() for v in self.verdicts] + ["- " + self.opening_line()]
        if len(seeds) > 1:
            lines += ["", f"## The same run with {len(seeds)} seeds", "",
                      "Each seed records its own games, trains its own BC and ILQL and plays its own evaluation "
                      "games (same settings otherwise).", "", *self.seed_rows(seeds), "", self.seed_summary(seeds)]
        lines += ["", "## Training curves and returns", "", f"![training curves and returns]({plot_name})", "",
                  "Left: BC's loss (negative log-likelihood of the recorded guesses) by step. Middle: ILQL's loss "
                  "terms by step. Right: each agent's mean return ± 1 SE on the evaluation games, with its win "
                  "rate under its name.", ""]
        return "\n".join(lines)

    def write(self, path: str | Path) -> Path:
        """Writes the plot (``self.plot``) and this run's page (``document``, its command the run's own) to ``path``."""
        from trainers.core.provenance import running_command

        plot_demo(self.results, self.workdir, self.plot)
        path = Path(path)
        command = running_command() or "trainers.experiments.demo.run_demo"
        path.write_text(self.document(os.path.relpath(self.plot, path.parent), command), encoding="utf-8")
        return path


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
           color=["tab:gray" if r.name in ("random", EXPERT) else "tab:blue" for r in results])
    ax.set_xticks(x, [f"{r.name}\nwins {r.win_rate:.0%}" for r in results])
    ax.set_ylim(-6, 0)
    ax.set_title(f"mean return ± 1 SE ({results[0].games} games each)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    fig.suptitle("rlds-lang demo: Wordle on the demo_words list, data mostly random play", fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


__all__ = ["COMPARISONS", "EXPERT", "POLICY_WORDS", "PolicyData", "Verdict", "verdicts", "opening_shares",
           "DemoReport", "plot_demo"]
