"""The decoding β of a value-based agent (MC returns, ILQL), chosen on held-out games, never on the table's.

A value-based agent samples from its policy's logits plus ``β · (Q − V)``. How large β should be depends on
how large and how reliable the learned advantages are. LMRL-Gym's Wordle results loader reads each value model's
evaluations at β = 1, 2, 4, ..., 128, sampled and greedy (in lines left commented out), while each of its eval
scripts plays one β, 16 by default (``LMRL_GYM_BETAS``). Here every β of ``BETA_GRID`` plays the
same held-out games, seeded ``eval_seed + TUNING_SEED_OFFSET + i`` (disjoint from the table's ``eval_seed + i``
for any table shorter than ten million games); the β with the highest mean return is the one the table's
games are then played with.

Example::

    choice = choose_beta(experiment, Path("runs/lmrl_gym/ILQL"), 16000, held_out_config, DECODINGS["sample"])
    print(choice.best, choice.row())
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any, Sequence

#: LMRL-Gym's sweep of β in its Wordle evaluation scripts (llm_rl_scripts/wordle/*/eval_*: 1 to 128).
BETA_GRID: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)
#: the held-out games of the choice start at ``eval_seed + TUNING_SEED_OFFSET``.
TUNING_SEED_OFFSET = 10_000_000


@dataclasses.dataclass
class BetaChoice:
    """One agent's held-out results at each β (``trainers.evaluation.wordle.EvalResult``, in ``betas`` order)."""

    name: str
    betas: list[float]
    results: list[Any]

    @property
    def best(self) -> float:
        """The β with the highest held-out mean return (the smaller β on a tie)."""
        means = [r.mean_reward for r in self.results]
        return self.betas[means.index(max(means))]

    def row(self) -> str:
        """A markdown row: the agent, its mean return ± SE at each β (the chosen one in bold), the choice."""
        cells = [f"**{r.mean_reward:.3f} ± {r.stderr:.3f}**" if beta == self.best else
                 f"{r.mean_reward:.3f} ± {r.stderr:.3f}" for beta, r in zip(self.betas, self.results)]
        return f"| {self.name} | " + " | ".join(cells) + f" | {self.best:g} |"


def tuning_config(eval_config: Any, games: int) -> Any:
    """``eval_config`` (a ``trainers.evaluation.wordle.EvalConfig``) moved to the held-out seeds, with ``games`` games."""
    return dataclasses.replace(eval_config, games=games, seed=eval_config.seed + TUNING_SEED_OFFSET)


#: what LMRL-Gym's code does with β, read in its repository (abdulhaim/LMRL-Gym at 911d726): its Wordle results
#: loader, ``llm_rl_scripts/wordle/load_results.py``, reads ILQL's and MC's evaluations at
#: ``for beta in [1, 2, 4, 8, 16, 32, 64, 128]`` in lines left commented out, and each of its eval scripts
#: (``eval_ilql_gpt2.py``, ``eval_mc_gpt2.py``) plays one β, ``policy_beta: float=16.0`` by default.
LMRL_GYM_BETAS = ("LMRL-Gym's Wordle results loader reads its ILQL and MC evaluations at β = 1, 2, 4, ..., 128 (in "
                  "lines left commented out in `llm_rl_scripts/wordle/load_results.py`); each of its eval scripts "
                  "plays one β, 16 by default.")


def choose_beta(experiment: Any, run: Path, steps: int, held_out: Any, decoding: Any, fresh: bool = False,
                grid: Sequence[float] = BETA_GRID) -> BetaChoice:
    """Plays ``experiment``'s checkpoint in ``run`` at every β of ``grid`` on the ``held_out`` games (each
    result cached beside the run, as ``trainers.experiments.results`` caches evaluations)."""
    from trainers.experiments.common import evaluate_run

    if not grid:
        raise ValueError("choose_beta: the β grid is empty")
    results = [evaluate_run(experiment, run, steps, held_out, decoding, fresh, beta) for beta in grid]
    return BetaChoice(experiment.name, [float(b) for b in grid], results)


def render_beta_choices(choices: Sequence[BetaChoice], held_out: Any) -> str:
    """The markdown table of the choices: mean return ± SE on the held-out games at each β, the β chosen."""
    betas = choices[0].betas
    header = "| row | " + " | ".join(f"β={b:g}" for b in betas) + " | β chosen |"
    rule = "| --- |" + " --- |" * (len(betas) + 1)
    return (f"Mean return ± SE on {held_out.games} held-out games seeded from {held_out.seed} (not the table's "
            f"games); the table plays each row at its β chosen here. {LMRL_GYM_BETAS}\n\n"
            + "\n".join([header, rule, *(c.row() for c in choices)]) + "\n")


def parse_grid(text: str) -> tuple[float, ...]:
    """``"1,2,4"`` -> ``(1.0, 2.0, 4.0)``; a clear error naming the option otherwise."""
    try:
        grid = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"--beta-grid: expected comma-separated numbers, got {text!r}") from None
    if not grid:
        raise ValueError("--beta-grid: no β given")
    return grid


def add_beta_choice_arguments(parser: argparse.ArgumentParser, rows: str) -> None:
    """Adds ``--beta-grid`` and ``--beta-games``, the options of this choice, to a results page's parser; ``rows``
    names in the help the page's rows that choose their β (e.g. ``"MC returns and ILQL"``)."""
    parser.add_argument("--beta-grid", default=",".join(f"{b:g}" for b in BETA_GRID),
                        help=f"the β values {rows} play on held-out games before the table "
                             "(LMRL-Gym's scripts sweep 1..128)")
    parser.add_argument("--beta-games", type=int, default=500,
                        help="held-out games per β of that choice (0: play each row's committed β)")


__all__ = ["BETA_GRID", "LMRL_GYM_BETAS", "TUNING_SEED_OFFSET", "BetaChoice", "tuning_config", "choose_beta", "render_beta_choices",
           "parse_grid", "add_beta_choice_arguments"]
