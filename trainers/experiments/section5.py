"""The ILQL paper's Section-5 ranking test on its adversarial Wordle data: ``rlds-lang results section5``.

The paper (Snell et al. 2022, Section 5) builds data on which single-step methods, which learn the values of
the data's own policy, rank the optimal policy's moves below worse ones, while ILQL, whose ``V`` is an upper
expectile of ``Q`` over the data's moves, ranks them right: after the optimal first guess most of the data's
games are adversarial takeovers that score -6, so that guess's average return is below the suboptimal games'
(``rlds_lang.wordle.ilql_adversarial`` rebuilds the data; ``wordle_synthetic/ilql_adversarial`` records it).

This module builds that dataset, trains the rows of ``ROWS`` on it (resumable, ``--train-only`` as in the
lmrl_gym setting) and measures the authors' ranking (``trainers.evaluation.q_rank``: their
``Action_Ranking_Evaluator_Adversarial`` of ``scripts/eval/wordle/eval_q_rank.py``): on pairs drawn as it draws
them, the fraction where ``Q`` of the optimal policy's move is strictly above the other's, at the whole word (its
end token) and at each of its letters:

* at the initial state: the optimal games' first guess against the suboptimal games' first guesses;
* at the branch states: the optimal game's third guess against the adversarial takeovers' there.

It also reads off the data what a single-step learner should learn: the mean return after the optimal first
guess and after the suboptimal ones. The document (``docs/section5.md``) states the measured fractions beside
the paper's (ILQL near 1, single-step near 0 at the initial state), and whether ILQL's reached it, computed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from rlds_lang.env import as_text
from rlds_lang.wordle import ilql_adversarial
from trainers.core.build import tfds_build
from trainers.core.provenance import command_line, generated_by, source_commit
from trainers.experiments.common import (
    SHARED,
    Experiment,
    experiment_config,
    training_minutes,
)
from trainers.experiments.section5_ranking import TESTS, Draws, expectile, tabular_prediction, tabular_q

#: training of every row: the shared model and optimisation, with undiscounted returns (the authors' ranking
#: evaluator, ``config/wordle/eval_q_rank.yaml``, sets ``gamma: 1.0``) so that a value is the game's return.
TRAINING: dict[str, Any] = {**SHARED, "steps": 2000, "checkpoint_every": 250, "gamma": 1.0}
#: the rows: the single-step baseline (Q and V regress onto the data's returns) and ILQL at the authors' Wordle
#: expectile (``config/wordle/train_iql.yaml``: tau 0.7) and at higher ones: on the games of the earlier recipe
#: (10 WrongPolicy takeovers per optimal game of 4+ guesses) the exact tabular solution (``tabular_q``) valued the
#: optimal first guess at -5.05 with tau 0.7, -4.23 with 0.9 and -3.74 with 0.95, against the suboptimal games' mean
#: of -4.24 (the page states it for the data it ran on). Only Q is ranked; the policy the rows train plays no part.
ROWS: tuple[Experiment, ...] = (
    Experiment("MC returns", "mc"),
    Experiment("ILQL (tau 0.7)", "ilql", {"tau": 0.7, "alpha": 0.05}),
    Experiment("ILQL (tau 0.9)", "ilql", {"tau": 0.9, "alpha": 0.05}),
    Experiment("ILQL (tau 0.95)", "ilql", {"tau": 0.95, "alpha": 0.05}),
)
#: ILQL's Polyak rate here is 0.05, not ``ILQLConfig``'s 0.005 (the authors'): a value moves back one action
#: token per bootstrapping round, and a round takes about 1/alpha steps for the target heads to follow, so 2,000
#: steps at 0.005 carry the returns back about 10 of a game's up to 36 action tokens. Measured on the earlier
#: recipe's games: with 0.005 the tau 0.95 row valued the optimal first guess at -1.97 (two turns' rewards) where
#: the data return -5.36 after it; at 0.05 they reach about 100 tokens back.
#: the row at the ILQL authors' Wordle expectile.
AUTHORS_ROW = "ILQL (tau 0.7)"
#: the expectile each row's V takes of the data's values: MC returns regress onto the returns (their mean).
ROW_TAU: dict[str, float] = {e.name: e.overrides.get("tau", 0.5) for e in ROWS}
#: what the paper reports for the initial-state test (``shared/REFERENCE_TASKS.md``): ILQL near 1, SARSA near 0.
PUBLISHED_ILQL, PUBLISHED_SINGLE_STEP = 1.0, 0.0
#: ILQL reached the paper's result when its initial-state fraction is at least this.
TARGET_FRACTION = 0.9
#: the document, relative to the current directory (the results commands run from the repository).
DOC = Path("docs") / "section5.md"


@dataclasses.dataclass
class Game:
    """What the test reads of one recorded episode."""

    episode_id: str
    policy: str
    parent_episode_id: str
    branch_turn: int
    steps: list[dict[str, Any]]

    @property
    def episode_return(self) -> float:
        """The game's summed reward."""
        return _return(self.steps)

    @property
    def kind(self) -> str:
        """``optimal``, ``adversarial`` (a takeover branch) or ``suboptimal``."""
        if self.branch_turn >= 0:
            return "adversarial"
        return "optimal" if self.policy == "optimal" else "suboptimal"

    def __getitem__(self, key: str) -> Any:  # read by trainers.evaluation.diagnostics like an RLDS episode
        return getattr(self, key)


def check_recipe(games: Sequence[Game]) -> None:
    """Refuses games recorded by an earlier recipe of ``wordle_synthetic/ilql_adversarial`` (a dataset built before
    it followed the authors' config is found and reused by ``tfds_build``): every branch must be
    ``ilql_adversarial.BRANCH_POLICY``'s takeover."""
    expected = f"{ilql_adversarial.BRANCH_POLICY}_takeover"
    other = sorted({g.policy for g in games if g.branch_turn >= 0} - {expected})
    if other:
        raise ValueError(f"the built wordle_synthetic/ilql_adversarial holds branches of {other}, not {expected!r}: it "
                         f"was built by an earlier recipe; delete it (or give another --data-dir) to rebuild it")


def read_games(dataset: str) -> list[Game]:
    """Every episode of the dataset's ``train`` split, steps included."""
    from transforms.loading import load

    games = []
    for episode in load(dataset):
        text = {key: as_text(episode[key].numpy(), key) for key in ("episode_id", "policy", "parent_episode_id")}
        games.append(Game(text["episode_id"], text["policy"], text["parent_episode_id"], int(episode["branch_turn"]),
                          list(episode["steps"].as_numpy_iterator())))
    return games


def data_figures(games: Sequence[Game]) -> dict[str, Any]:
    """Shares and mean returns per kind of game, and the mean return after each first guess class."""
    kinds = {kind: [g.episode_return for g in games if g.kind == kind]
             for kind in ("optimal", "adversarial", "suboptimal")}
    optimal_first = next(_first_move(g) for g in games if g.kind == "optimal")
    after = {True: [], False: []}
    for game in games:
        after[_first_move(game) == optimal_first].append(game.episode_return)
    return {"games": len(games), "optimal_first": optimal_first,
            "share": {k: len(v) / len(games) for k, v in kinds.items()},
            "mean": {k: float(np.mean(v)) for k, v in kinds.items()},
            "after_optimal_first": float(np.mean(after[True])), "after_other_first": float(np.mean(after[False])),
            "optimal_branched": float(np.mean([len(g.steps) - 1 >= ilql_adversarial.MIN_TURNS
                                               for g in games if g.kind == "optimal"]))}


def _first_move(game: Game) -> str:
    return as_text(game.steps[0]["action"], "action")


def _return(steps: Sequence[Mapping[str, Any]]) -> float:
    """The summed reward of some steps."""
    return float(sum(float(s["reward"]) for s in steps))


def rank(run: Path, draws: Draws) -> dict[str, float]:
    """The authors' ranking of the row trained in ``run`` on ``draws`` (``trainers.evaluation.q_rank.q_rank``): per
    test, the fraction at the whole word for the trained Q (``initial``, ``branch``) and the target Q
    (``initial_target``, ``branch_target``), the fractions at every position (``..._positions``), the number of
    pairs, and the mean Q of the optimal and of the other first guesses drawn."""
    from trainers.algorithms.registry import load_agent_model
    from trainers.evaluation.q_rank import q_rank

    loaded = load_agent_model(run / "checkpoint")
    out: dict[str, Any] = {}
    for test in TESTS:
        measured = q_rank(loaded, draws.states[test], draws.pairs[test])
        out.update({test: measured["live"][0], f"{test}_target": measured["target"][0], f"{test}_pairs":
                    measured["draws"], f"{test}_positions": measured["live"], f"{test}_target_positions":
                    measured["target"]})
        if test == "initial":
            out.update(q_first=measured["better_q"], q_others=measured["worse_q"])
    return out


def plot_first_move(ranks: Mapping[str, Mapping[str, float]], data: Mapping[str, Any], path: Path) -> Path:
    """Per row: the learned and the tabular Q of the optimal first guess, and the learned Q of the suboptimal first
    guesses (their mean), beside the suboptimal games' mean return; a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(ranks)
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(8, 4))
    for k, (key, label) in enumerate((("q_first", f"learned Q of `{data['optimal_first']}`"),
                                      ("q_first_predicted", f"tabular Q of `{data['optimal_first']}`"),
                                      ("q_others", "learned Q of the suboptimal first guesses (mean)"))):
        ax.bar(x + (k - 1) * 0.27, [ranks[n][key] for n in names], 0.27, label=label)
    ax.axhline(data["mean"]["suboptimal"], color="k", linestyle="--", linewidth=1,
               label="suboptimal games' mean return")
    ax.set_xticks(x, [f"{n}" for n in names], fontsize=8)
    ax.set_ylabel("value at the initial state")
    ax.legend(fontsize=7)
    fig.suptitle("Section-5 test: what each row values the first guesses at")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def train_row(experiment: Experiment, dataset: str, runs: Path, steps: int | None) -> tuple[Path, float]:
    """Trains (or resumes) one row; ``(run folder, training minutes so far)``."""
    from trainers.algorithms.registry import train

    config = experiment_config(experiment, dataset, runs, steps, TRAINING)
    return Path(config.out), training_minutes(train(experiment.algorithm, config))


def render(data: Mapping[str, Any], ranks: Mapping[str, Mapping[str, float]], minutes: Mapping[str, float],
           steps: int, command: str, commit: str | None = None) -> str:
    """The document: the verdict first, then the data beside the paper's and the two tests per row; ``commit`` is
    the one the page names (default: ``source_commit()``'s)."""
    ilql = {name: r["initial"] for name, r in ranks.items() if name.startswith("ILQL")}
    best = max(ilql, key=ilql.get)
    reached = ilql[best] >= TARGET_FRACTION
    single = ranks["MC returns"]["initial"]
    verdict = (f"**{'Reached' if reached else 'Not reached'}**: the paper's ILQL ranks the optimal first guess "
               f"above the suboptimal ones at about {PUBLISHED_ILQL:.1f} and single-step methods at about "
               f"{PUBLISHED_SINGLE_STEP:.1f}; here the best ILQL row ({best}) reaches {ilql[best]:.3f} "
               f"(target ≥ {TARGET_FRACTION}) and MC returns {single:.3f}. At the authors' expectile (τ "
               f"{ROW_TAU[AUTHORS_ROW]}) even the exact tabular solution ranks it above only "
               f"{ranks[AUTHORS_ROW]['predicted']:.3f} of them: it values the optimal first guess at "
               f"{ranks[AUTHORS_ROW]['q_first_predicted']:.2f}, the suboptimal games return "
               f"{data['mean']['suboptimal']:.2f} on average.")
    kinds = "\n".join(f"| {kind} | {data['share'][kind]:.3f} | {ilql_adversarial.PUBLISHED_SHARES[kind]} | "
                      f"{data['mean'][kind]:.3f} | {ilql_adversarial.PUBLISHED_MEANS[kind]} |"
                      for kind in ("optimal", "adversarial", "suboptimal"))
    rows = "\n".join(f"| {name} | {ROW_TAU[name]} | {r['initial']:.3f} ({r['initial_pairs']}) | "
                     f"{r['initial_target']:.3f} | {r['q_first']:.2f} | {r['q_others']:.2f} | {r['predicted']:.3f} "
                     f"({r['q_first_predicted']:.2f}) | {r['branch']:.3f} ({r['branch_pairs']}) | "
                     f"{r['branch_target']:.3f} | {r['branch_predicted']:.3f} | {minutes[name]:.0f} |"
                     for name, r in ranks.items())
    return f"""# The ILQL paper's Section-5 ranking test, on its adversarial Wordle data

{verdict}

{generated_by(command, commit=commit)} (`trainers/experiments/section5.py`); nothing in it is typed by hand.

## The data

`wordle_synthetic/ilql_adversarial` (`rlds_lang/wordle/ilql_adversarial.py`): {data['games']:,} games in the ILQL
paper's Section-5 MDP (`adversarial_resample`, `ilql` colouring, official lists), built as the authors'
`config/wordle/generate_adversarial_data.yaml` and `generate_adversarial_data.py` build it (the module lists the
differences). Per optimal game: {ilql_adversarial.N_ADVERSARIAL} branches from the state after its first
{ilql_adversarial.BRANCH_TURN} moves, where `RepeatPolicy(first_n=2)` takes over, when it lasted
{ilql_adversarial.MIN_TURNS} guesses or more ({data['optimal_branched']:.0%} of them here); and
{ilql_adversarial.N_SUBOPTIMAL} games of `RandomMixturePolicy(prob_smart=0.5)`.

| kind | share | paper | mean return | paper |
| --- | --- | --- | --- | --- |
{kinds}

What a single-step learner sees at the initial state:
the games that open with the optimal first guess `{data['optimal_first']}` return {data['after_optimal_first']:.3f} on average, the others {data['after_other_first']:.3f}.
So the data's own values rank `{data['optimal_first']}` {"below" if data['after_optimal_first'] < data['after_other_first'] else "above"} the other first guesses,
although continuing optimally after it returns {data['mean']['optimal']:.3f}.

## The tests

The authors' ranking (`trainers.evaluation.q_rank`, their `Action_Ranking_Evaluator_Adversarial`): pairs drawn
as it draws them (a state uniformly among the distinct ones, then a move of each policy uniformly among the games'
moves there, with replacement; their number in brackets), and the fraction where the row's `Q` of the whole word
(its end-of-action token; the minimum of the twin heads, trained or target) is strictly above for the optimal
policy's move: at the initial state its first guess against the suboptimal games' first guesses, at the branch
states its third guess against the adversarial takeover's. The fractions at each letter are in the page's JSON.
{steps:,} steps each, `trainers.experiments.section5.TRAINING` (the shared 4-layer model, undiscounted returns).

| row | expectile of V | initial state | (target Q) | its Q of `{data['optimal_first']}` | its Q of the others (mean) | tabular (its Q of `{data['optimal_first']}`) | branch states | (target Q) | tabular | training minutes |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
{rows}

"Tabular" is the same fraction for the exact tabular solution of the row's objective on these games
(`trainers.experiments.section5.tabular_q`: a state is the game's history, `Q(s, a)` the mean of the reward plus `V` of the
next state over the games that made that move, `V(s)` the row's expectile of `Q` over the games' moves), on the
same pairs: what the row can reach when it tells every state apart. There each suboptimal first guess is worth its one
game's return; a learned Q values these rarely seen guesses by what it generalises from all of them instead
(their games' mean return is {data['mean']['suboptimal']:.2f}).
"""


def run_section5(args: argparse.Namespace) -> Path | None:
    """Builds, trains, ranks and writes ``args.out`` (default ``docs/section5.md``); None with ``--train-only``."""
    dataset = tfds_build("wordle_synthetic", "ilql_adversarial", args.data_dir, small=args.small)
    runs = Path(args.runs) / "section5"
    names = args.train_only or [e.name for e in ROWS]
    unknown = sorted(set(names) - {e.name for e in ROWS})
    if unknown:
        raise ValueError(f"--train-only {unknown}: rows are {[e.name for e in ROWS]}")
    trained = {e.name: train_row(e, dataset, runs, args.steps) for e in ROWS if e.name in names}
    if args.train_only:
        return None
    games = read_games(dataset)
    check_recipe(games)
    draws = Draws.of(games, args.section5_pairs)
    ranks = {}
    for name, (run, _) in trained.items():
        predicted = tabular_prediction(games, ROW_TAU[name], draws)
        ranks[name] = {**rank(run, draws), "predicted": predicted["initial"],
                       "q_first_predicted": predicted["q_first"], "branch_predicted": predicted["branch"]}
    out = Path(args.out or DOC)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = data_figures(games)
    steps = args.steps or TRAINING["steps"]
    command, commit = _command(args, steps), source_commit()
    out.with_suffix(".json").write_text(json.dumps({"command": command, "commit": commit, "data": data,
                                                    "ranks": ranks}, indent=1))
    plot = plot_first_move(ranks, data, out.with_name(f"{out.stem}-first-move.png"))
    document = render(data, ranks, {n: m for n, (_, m) in trained.items()}, steps, command, commit)
    document += f"\n![What each row values the first guesses at]({plot.name})\n"
    out.write_text(document)
    print(document)
    return out


def _command(args: argparse.Namespace, steps: int) -> str:
    """The command line that reproduces the document: as typed, its sizes spelled out (``steps``: the optimizer
    steps the rows trained, so that a later change of ``TRAINING`` does not change what the command means)."""
    return command_line(args, "rlds-lang results section5", (("--small", args.small), ("--steps", steps),
                                                             ("--section5-pairs", args.section5_pairs)))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """This setting's own options of ``rlds-lang results section5``."""
    parser.add_argument("--section5-pairs", type=int, default=1000,
                        help="section5: pairs of moves drawn per ranking test, as the authors' evaluator draws them "
                             "(a fixed seed; theirs: 64 x 128 = 8,192)")


__all__ = ["DOC", "Game", "Draws", "TESTS", "check_recipe", "ROWS", "ROW_TAU", "expectile", "plot_first_move", "tabular_prediction", "tabular_q", "TARGET_FRACTION", "TRAINING", "add_arguments", "data_figures", "rank", "read_games",
           "render", "run_section5", "train_row"]
