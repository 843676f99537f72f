"""The Wordle result of ``docs/malt.md``: a BC start, expert iteration and MALT from it, evaluated on the same
seeded games with paired differences; rerun with ``rlds-lang results malt``.

Everything the result depends on is here: the BC data (``wordle_synthetic/expert``, built with ``tfds
build`` if absent), the committed settings (``COMMITTED``), the evaluation, and the document (table with
mean ± SE per row ``bc``, ``ei``, ``malt``, ``malt_reference`` and any ``--agent`` given, e.g. ILQL or PPO
checkpoints, each with the environment steps it used; verdicts computed from paired differences, never typed).
``malt`` uses this page's choices (``COMMITTED``); ``malt_reference`` runs ``MALTConfig``'s defaults, the reference
trainer's, from the same BC start (``reference_config``), and the page lists the settings in which the two differ
with the reason for each of the page's (``PROJECT_CHOICES``). Training and the
rounds resume from their checkpoints and ``round.json`` files, so an interrupted reproduction continues.

Example::

    OMP_NUM_THREADS=1 rlds-lang results malt                              # the committed run -> docs/malt.md
    rlds-lang results malt --smoke --out runs/malt.md --workdir runs/mr    # minutes: tiny settings, not a result
"""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path
from typing import Any

from trainers.core.provenance import generated_by

#: the committed settings of docs/malt.md; ``SMOKE`` shrinks them for a quick check of the pipeline.
COMMITTED: dict[str, Any] = {
    # the BC start must leave room both ways: BC on random_mixture with a 2x64 model never won a game (a first run
    # gave -6.000 +- 0.000 over 1,000 games, so no round kept anything); BC on the expert games with docs/results.md's
    # model wins some and loses some, which is what EI and MALT can improve
    "dataset_config": "expert", "dataset_small": None,
    "model": {"n_layer": 4, "n_embd": 128, "n_head": 4, "n_positions": 96}, "bc_steps": 3000, "bc_batch_size": 32,
    "rounds": 3, "malt_initial_ei_rounds": 1, "ei_games": 1024, "trees": 256, "branching": 3,
    # rounds fine-tune the previous round's model with a fresh optimiser: at MALTConfig's defaults (BC 3e-4, DPO 1e-4)
    # a first run with this BC start got worse every round (EI sampled -4.03 -> -4.68 -> -4.70; MALT -> -5.56)
    "round_bc_steps": 300, "round_bc_lr": 3e-5, "round_dpo_lr": 1e-5,
    # MALT rounds: the second full run's trees held 136 copies among 149 pairs, and DPO (300 steps, no NLL term) moved
    # the chosen responses' likelihood from 0.98 to 0.52; copies are now resampled (and never paired), the DPO loss
    # keeps iterative RPO's NLL term, and fewer steps suit a round's few hundred pairs
    "round_nll_coef": 1.0,
    # the third full run still lost 0.3 to BC: all of a round's pairs sat at the second guess (the first is fixed), a
    # rejected response was a forced alternative the policy almost never samples (log-prob -16), and 150 steps made
    # 37 passes over 64 pairs. On held-out games (seed 2e9, 500 games; never the table's seed) MALT rounds went from
    # neutral (forced alternatives or natural samples, 2 passes: -3.92 / -3.91 after EI's -3.93, BC -4.14) to
    # -3.79 with natural samples branched at guesses 2-3 and interval pairs (positive_negative there: -3.84)
    "round_dpo_epochs": 2, "round_dpo_steps": 150, "round_distinct_tries": 0, "branch_from": 1, "branch_depth": 3,
    "pair_method": "interval",  # round_dpo_steps: used only when round_dpo_epochs is None
    # this page's MALT rounds also train on the pairs of compatible earlier rounds (MALTConfig's default is now the
    # reference trainer's: each round's own pairs only)
    "round_reuse_rollouts": True,
    "ei_min_return": -5.0, "ei_top_fraction": None, "games": 1000, "eval_seed": 1_000_000_000, "seed": 0,
    # the malt_reference arm runs MALTConfig's defaults as they are (reference_config): nothing here changes them
    "reference_sizes": {},
}
SMOKE: dict[str, Any] = {
    **COMMITTED, "dataset_small": 40, "model": {"n_layer": 1, "n_embd": 32, "n_head": 2, "n_positions": 96},
    "bc_steps": 3, "bc_batch_size": 4, "rounds": 2, "malt_initial_ei_rounds": 1, "ei_games": 4, "trees": 2,
    "branching": 2, "branch_from": 0, "branch_depth": 1, "round_bc_steps": 2, "round_dpo_epochs": 1,
    "ei_min_return": None, "ei_top_fraction": 0.5, "games": 8,
    "reference_sizes": {"rounds": 2, "ei_games": 4, "trees": 2, "branch_depth": 1, "bc_steps": 2, "dpo_steps": 2,
                        "ei_min_return": None, "ei_top_fraction": 0.5},
}


#: the row of the MALT arm's policy after its initial EI rounds (where its DPO rounds start).
MALT_START = "malt_ei_start"
#: the row of the MALT arm run at ``MALTConfig``'s defaults, the reference trainer's (``reference_config``).
REFERENCE = "malt_reference"
#: why this page's ``malt`` arm departs from the reference defaults, per ``MALTConfig`` field (from ``COMMITTED``'s
#: comments and ``trainers.algorithms.malt.malt``'s docstring).
PROJECT_CHOICES: dict[str, str] = {
    "ei_games": "more games per EI round than the default 512, sized for this page's run (no comparison measured)",
    "trees": "more start states per MALT round than the default 128, sized for this page's run (no comparison "
             "measured)",
    "branching": "the MALT paper's three samples per agent (the reference trainer samples two)",
    "bc_steps": "rounds fine-tune the previous round's model with a fresh optimiser: at the defaults a first run "
                "got worse every round (EI sampled -4.03 -> -4.68 -> -4.70; MALT -> -5.56)",
    "bc_lr": "as bc_steps: the default 3e-4 made every round worse in a first run",
    "dpo_lr": "as bc_steps: the default 1e-4 made every round worse in a first run",
    "nll_coef": "iterative RPO's NLL term: plain DPO moved the chosen responses' likelihood from 0.98 to 0.52 in a "
                "round, and the round played worse than its start",
    "dpo_epochs": "passes over a round's pairs instead of a fixed step count, which made 37 passes over 64 pairs",
    "dpo_steps": "used only when dpo_epochs is None",
    "branch_from": "a BC policy's first guess is fixed, so trees branch from the 2nd guess (held-out games, never "
                   "the table's seeds)",
    "branch_depth": "with branch_from, trees branch at guesses 2-3 (held-out games: -3.79 against neutral rounds "
                    "at -3.92 when branching elsewhere)",
    "pair_method": "interval pairs (held-out games: -3.79; positive_negative there: -3.84)",
    "reuse_rollouts": "more pairs per round from the trees of compatible earlier rounds",
}


@dataclasses.dataclass
class Row:
    """One agent of the table: its evaluation, checkpoint and environment steps used (None: not known)."""

    name: str
    result: Any
    checkpoint: str
    env_steps: int | None


def dataset_steps(folder: str) -> int:
    """Actions in the BC dataset (every step but the last of each episode)."""
    from transforms.loading import load

    lengths = load(folder).map(lambda episode: episode["steps"].reduce(-1, lambda count, _: count + 1))
    return int(sum(lengths.as_numpy_iterator()))


def train_bc(settings: dict[str, Any], workdir: Path, progress: bool) -> tuple[Path, int]:
    """The BC start: ``(checkpoint, environment steps of its data)``."""
    from trainers.algorithms.bc import BCConfig
    from trainers.algorithms.registry import train
    from trainers.core.build import tfds_build
    from trainers.core.model import ModelConfig

    dataset = tfds_build("wordle_synthetic", settings["dataset_config"], workdir / "tfds",
                         small=settings["dataset_small"], quiet=not progress)
    config = BCConfig(dataset=dataset, out=str(workdir / "bc"), steps=settings["bc_steps"],
                      batch_size=settings["bc_batch_size"], model=ModelConfig(**settings["model"]),
                      seed=settings["seed"], checkpoint_every=max(1, settings["bc_steps"] // 4))
    train("bc", config, progress=progress)
    return workdir / "bc" / "checkpoint", dataset_steps(dataset)


def rollout_steps(checkpoint: str | Path) -> int | None:
    """Environment steps an online run took: the actions in ``<run>/rollouts`` beside its checkpoint (PPO records
    every rollout batch there), or None when it has none (its start's own data is never counted)."""
    from loggers import read_episodes

    rollouts = Path(checkpoint).parent / "rollouts"
    if not rollouts.is_dir():
        return None
    return sum(len(episode["steps"]) - 1 for episode in read_episodes(rollouts))


def arm_config(name: str, init: Path, ei_rounds: int, settings: dict[str, Any], workdir: Path) -> Any:
    """The ``MALTConfig`` of this page's EI-only (``ei_rounds == rounds``) or MALT arm: the committed settings."""
    from trainers.algorithms.malt.malt import MALTConfig

    return MALTConfig(init=str(init), out=str(workdir / name), rounds=settings["rounds"],
                      num_initial_ei_rounds=ei_rounds, ei_games=settings["ei_games"], trees=settings["trees"],
                      branching=settings["branching"], branch_depth=settings["branch_depth"],
                      branch_from=settings["branch_from"], pair_method=settings["pair_method"],
                      bc_steps=settings["round_bc_steps"], dpo_steps=settings["round_dpo_steps"],
                      dpo_epochs=settings["round_dpo_epochs"],
                      bc_lr=settings["round_bc_lr"], dpo_lr=settings["round_dpo_lr"],
                      distinct_tries=settings["round_distinct_tries"], nll_coef=settings["round_nll_coef"],
                      reuse_rollouts=settings["round_reuse_rollouts"],
                      ei_min_return=settings["ei_min_return"], ei_top_fraction=settings["ei_top_fraction"],
                      seed=settings["seed"])


def reference_config(init: Path, settings: dict[str, Any], workdir: Path) -> Any:
    """The ``MALTConfig`` of the ``REFERENCE`` arm: MALTConfig's defaults (the reference trainer's), from the same BC
    start and seed, in ``workdir/malt_reference``; only ``settings["reference_sizes"]`` (empty when committed, the
    smoke run's small sizes otherwise) changes them."""
    from trainers.algorithms.malt.malt import MALTConfig

    return MALTConfig(init=str(init), out=str(workdir / REFERENCE), seed=settings["seed"],
                      **settings.get("reference_sizes", {}))


def differing_settings(project: Any, reference: Any) -> list[tuple[str, Any, Any, str]]:
    """``(field, project value, reference value, why the project's value)`` for every ``MALTConfig`` field of the
    two arms that differs, but where they write their runs; a difference without a reason in ``PROJECT_CHOICES`` is
    an error (a choice the page would not explain)."""
    from trainers.experiments.common import differing_fields

    return differing_fields(project, reference, PROJECT_CHOICES, ("out",), "PROJECT_CHOICES")


def run_arms(settings: dict[str, Any], workdir: Path, progress: bool
             ) -> tuple[list[tuple[str, str, int | None]], dict[str, list], list[tuple[str, Any, Any, str]]]:
    """Trains (or resumes) the BC start and every arm in ``workdir``: ``(rows to evaluate as (name, checkpoint,
    environment steps), round manifests by arm, the settings in which the malt arm differs from the reference's)``.
    The rows: ``bc``, ``ei``, ``malt_ei_start`` (where the MALT rounds start), ``malt`` and ``malt_reference``."""
    from trainers.algorithms.malt.malt import run_malt

    bc, bc_steps = train_bc(settings, workdir, progress)
    agents: list[tuple[str, str, int | None]] = [("bc", str(bc), bc_steps)]
    configs = {name: arm_config(name, bc, ei_rounds, settings, workdir)
               for name, ei_rounds in (("ei", settings["rounds"]), ("malt", settings["malt_initial_ei_rounds"]))}
    configs[REFERENCE] = reference_config(bc, settings, workdir)
    arms = {}
    for name, config in configs.items():
        manifests = arms[name] = run_malt(config, progress=progress)
        ei_rounds = config.num_initial_ei_rounds
        if name == "malt" and 0 < ei_rounds < len(manifests):  # what the DPO rounds start from
            start = manifests[:ei_rounds]
            agents.append((MALT_START, start[-1].checkpoint, bc_steps + sum(m.env_steps for m in start)))
        agents.append((name, manifests[-1].checkpoint, bc_steps + sum(m.env_steps for m in manifests)))
    return agents, arms, differing_settings(configs["malt"], configs[REFERENCE])


def evaluate_rows(agents: list[tuple[str, str, int | None]], settings: dict[str, Any], progress: bool) -> list[Row]:
    """Every agent on the same ``games`` seeded games (sampling at temperature 1)."""
    from trainers.algorithms.registry import load_policy
    from trainers.evaluation.wordle import EvalConfig, evaluate

    config = EvalConfig(games=settings["games"], seed=settings["eval_seed"])
    rows = []
    for name, checkpoint, steps in agents:
        policy = load_policy(checkpoint, allowed_actions=config.guesses, name=name)
        rows.append(Row(name, evaluate(policy, config, name=name, progress=progress), checkpoint, steps))
    return rows


def verdicts(rows: list[Row]) -> list[str]:
    """For every row but ``bc``: whether it improves on ``bc`` by more than 2 paired standard errors; whether
    ``malt`` improves on its own start (``MALT_START``, after its EI rounds), i.e. what the DPO rounds added; and
    whether ``REFERENCE`` (the reference defaults) improves on this page's ``malt``."""
    by_name = {r.name: r for r in rows}
    lines = [_verdict(row, by_name["bc"]) for row in rows if row.name != "bc"]
    if MALT_START in by_name and "malt" in by_name:
        lines.append(_verdict(by_name["malt"], by_name[MALT_START]) + " (the MALT rounds' own effect)")
    if REFERENCE in by_name and "malt" in by_name:
        lines.append(_verdict(by_name[REFERENCE], by_name["malt"]) + " (the reference defaults against this page's "
                                                                      "choices)")
    return lines


def _verdict(row: Row, base: Row) -> str:
    from trainers.evaluation.stats import paired_separation

    delta, se, side = paired_separation(row.result, base.result)
    holds = side == 1
    return (f"- `{row.name}` vs `{base.name}`: Δ = {delta:+.3f} ± {se:.3f} (paired SE) -> "
            f"{'improves by more than 2 paired SE' if holds else 'does NOT improve by more than 2 paired SE'}")


def given_section(given: list[tuple[str, str]]) -> str:
    """The page's section on its ``--agent`` rows (empty without any): each row's checkpoint and the command that
    saved it (``saved_by_table``), so the page names how to produce everything it plays."""
    from trainers.experiments.common import saved_by_table

    return f"## Where the `--agent` rows come from\n\n{saved_by_table(given)}\n\n" if given else ""


def reference_section(differences: list[tuple[str, Any, Any, str]]) -> str:
    """Markdown: the settings in which this page's ``malt`` arm and the ``REFERENCE`` arm differ, and why each of
    the page's exists."""
    from trainers.experiments.common import differences_table

    lines = [f"## The reference defaults (`{REFERENCE}`)\n",
             f"`{REFERENCE}` runs `trainers.algorithms.malt.malt.MALTConfig`'s defaults, the reference trainer's (its "
             "module docstring says where each comes from), from the same BC start and seed; `malt` departs from them "
             "in these settings (a `MALTConfig` field each):\n",
             differences_table(differences, "`malt`", f"`{REFERENCE}`", "why `malt`'s value")]
    return "\n".join(lines) + "\n\n"


def document(rows: list[Row], arms: dict[str, list], settings: dict[str, Any], seconds: float, smoke: bool,
             command: str = "rlds-lang results malt", differences: list[tuple[str, Any, Any, str]] | None = None,
             given: list[tuple[str, str]] = ()) -> str:
    """The markdown of ``docs/malt.md`` (``arms``: each arm's round manifests; ``command``: what reproduces it;
    ``differences``: ``differing_settings`` of the ``malt`` and ``REFERENCE`` arms, when the page has both;
    ``given``: the ``--agent`` rows as ``(name, checkpoint)``, whose section names the command that saved each)."""
    from trainers.algorithms.malt.malt import rounds_table
    from trainers.evaluation.wordle import results_table

    steps = "\n".join(f"| {r.name} | {r.env_steps if r.env_steps is not None else 'not known'} |" for r in rows)
    head = "# MALT and expert iteration on Wordle\n\n"
    if smoke:
        head += "**Smoke run with tiny settings: not a result.**\n\n"
    return (head + f"{generated_by(command)} (`trainers/experiments/malt.py`) on "
            f"{datetime.date.today().isoformat()} in {seconds / 60:.1f} min (wall-clock; a resumed run counts only its "
            "own part); do not edit by hand.\n\n"
            "## Verdicts (computed)\n\n" + "\n".join(verdicts(rows)) + "\n\n"
            f"## Results ({settings['games']} seeded games each, official rule, sampling at temperature 1)\n\n"
            + results_table([r.result for r in rows], baseline="bc") + "\n\n"
            "## Environment steps used (the BC data, plus every response sampled in the rounds; an `--agent` row: "
            "the actions of its recorded rollouts, without its start's data)\n\n"
            "| agent | environment steps |\n| --- | --- |\n" + steps + "\n\n"
            "## Rounds (selected: games kept by EI, preference pairs trained on by MALT)\n\n"
            + "".join(f"`{name}`:\n\n```\n{rounds_table(manifests)}\n```\n\n" for name, manifests in arms.items())
            + given_section(given)
            + (reference_section(differences) if differences else "")
            + "## Settings\n\n```\n" + "\n".join(f"{k} = {v}" for k, v in settings.items()) + "\n```\n")


__all__ = ["COMMITTED", "MALT_START", "PROJECT_CHOICES", "REFERENCE", "SMOKE", "Row", "arm_config", "differing_settings",
           "document", "given_section", "reference_config", "reference_section", "rollout_steps", "run_arms", "verdicts"]
