"""The two-role Wordle section of ``docs/malt.md``: a BC start, expert iteration and per-agent MALT from it on
``rlds_lang.wordle_roles`` (a proposer and a checker), evaluated on the same seeded games with paired standard
errors; rerun with ``rlds-lang results malt-roles``.

Everything the section depends on is here: the BC data (scripted teams of the strengths in ``bc_data``, recorded
through ``loggers.record``), the BC start (one model per model group, trained on its agents' turns), an EI arm
(every round EI) and a MALT arm (``malt_initial_ei_rounds`` EI rounds, then per-agent MALT rounds;
``trainers.algorithms.malt.team_rounds``), and the table: per row the team's game return and each role's own return,
mean ± SE over the same ``games`` seeded games. The verdict is computed: MALT improves the team's return over the
BC start by more than 2 paired SE, and no role's own return falls (a fall: a paired difference below -2 SE). Each
arm of model groups (``model_groups``, the headline, then each of ``other_model_groups``) has its own BC start, EI
and MALT rows and verdict lines; the rows of a later arm are named with its groups (``malt[0,1]``) and its runs are
in their own folder of the workdir (``arm_dir``), on the same BC data. The page lists the settings in which
the rounds differ from ``TeamMALTConfig``'s defaults (the reference trainer's) with the reason for each
(``TEAM_CHOICES``; ``differing_settings``). The section is spliced into the page between markers (``splice``),
so ``rlds-lang malt-results`` keeps it, and a one-line summary goes under the page's title. Rounds and training
resume from ``round.json`` files and checkpoints in ``--workdir``.

Example::

    OMP_NUM_THREADS=1 rlds-lang results malt-roles                       # the committed run -> docs/malt.md
    rlds-lang results malt-roles --smoke --out runs/malt.md --workdir runs/mrr     # minutes: not a result
"""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path
from typing import Any

import numpy as np

from trainers.experiments.malt_roles_reading import BoardReading, reading_table
from trainers.experiments.malt_roles_settings import TEAM_CHOICES

#: the row of the MALT arm after its EI rounds (where its MALT rounds start).
MALT_START = "malt_ei_start"
#: the markers around the generated blocks of ``docs/malt.md``.
SECTION_BEGIN, SECTION_END = "<!-- two-role section: generated, begin -->", "<!-- two-role section: end -->"
SUMMARY_BEGIN, SUMMARY_END = "<!-- two-role summary: generated, begin -->", "<!-- two-role summary: end -->"
COLUMNS = ("team return", "proposer's own return", "checker's own return")


@dataclasses.dataclass
class TeamRow:
    """One row: its name, checkpoints, ``[games, 3]`` returns (team, proposer's own, checker's own) and the suffix
    of its arm (``arm_suffix``: "" for the headline arm), whose ``bc`` row its Δ is taken against."""

    name: str
    checkpoints: list[str]
    returns: np.ndarray
    arm: str = ""
    reading: BoardReading | None = None


def arm_groups(settings: dict[str, Any]) -> list[str]:
    """The model groups of every arm: the headline's (``model_groups``) first, then ``other_model_groups``."""
    return [settings["model_groups"], *settings.get("other_model_groups", [])]


def arm_suffix(groups: str, settings: dict[str, Any]) -> str:
    """What the row names of the arm of ``groups`` end with: "" for the headline arm, else ``[groups]``."""
    return "" if groups == settings["model_groups"] else f"[{groups}]"


def arm_dir(workdir: Path, groups: str, settings: dict[str, Any]) -> Path:
    """The runs of the arm of ``groups``: ``workdir`` for the headline arm, else ``workdir/groups_<groups>`` (``,``
    and ``+`` written ``_`` and ``p``)."""
    if groups == settings["model_groups"]:
        return workdir
    return workdir / ("groups_" + groups.replace(",", "_").replace("+", "p"))


def make_env(settings: dict[str, Any]):
    """The two-role environment of ``settings``."""
    from rlds_lang.wordle_roles.env import ProposerCheckerEnv

    return ProposerCheckerEnv(max_sendbacks=settings["max_sendbacks"], answers=settings["words"],
                              guesses=settings["words"], checker_view=settings["checker_view"])


def bc_episodes(settings: dict[str, Any], workdir: Path) -> list:
    """The scripted games of the BC start (``bc_data``: ``bc_games_each`` games per pair of strengths), recorded once
    in ``workdir/bc_data`` (shared by every arm) and read back."""
    from loggers import read_episodes
    from loggers.record import record
    from rlds_lang.wordle_roles.policies import scripted_team
    from trainers.algorithms.malt.expert_iteration import record_once

    env, episodes = make_env(settings), []
    for k, (proposer, checker) in enumerate(settings["bc_data"]):
        folder = record_once(workdir / "bc_data" / f"{proposer}_{checker}", lambda d: record(
            env, scripted_team(proposer, checker, answers=settings["words"], guesses=settings["words"]),
            settings["bc_games_each"], d,
            seed=settings["seed"] + k * 1_000_000, progress=False))
        episodes += list(read_episodes(folder))
    return episodes


def train_bc(settings: dict[str, Any], workdir: Path, groups: str | None = None, progress: bool = False) -> list[str]:
    """The BC start of the arm of ``groups`` (default: the headline's): one checkpoint per model group on its
    agents' turns of the scripted games (``bc_episodes``), in its ``arm_dir``. The games are recorded and read only
    when a checkpoint is missing."""
    from trainers.algorithms.bc import BCConfig
    from trainers.algorithms.malt.team import agent_turns, fit_turns, parse_groups
    from trainers.core.model import ModelConfig

    groups = groups or settings["model_groups"]
    episodes = None
    checkpoints = []
    for g, group in enumerate(parse_groups(groups, 2)):
        out = arm_dir(workdir, groups, settings) / "bc" / f"g{g}"
        if not (out / "checkpoint" / "model.pt").exists():
            episodes = bc_episodes(settings, workdir) if episodes is None else episodes
            config = BCConfig(out=str(out), model=ModelConfig(**settings["model"]), tokenizer=settings["tokenizer"],
                              steps=settings["bc_steps"], batch_size=settings["bc_batch_size"], lr=settings["bc_lr"],
                              warmup_steps=0, max_length=settings["model"]["n_positions"], seed=settings["seed"])
            fit_turns(config, agent_turns(episodes, group), progress=progress)
        checkpoints.append(str(out / "checkpoint"))
    return checkpoints


def team_config(settings: dict[str, Any], groups: str, ei_rounds: int, out: str = "") -> Any:
    """The ``TeamMALTConfig`` of an arm of model groups ``groups`` with ``ei_rounds`` EI rounds, from ``settings``."""
    from trainers.algorithms.malt.team_rounds import TeamMALTConfig

    keys = {f.name for f in dataclasses.fields(TeamMALTConfig)} - {"rounds", "model_groups", "out"}
    return TeamMALTConfig(**{k: v for k, v in settings.items() if k in keys}, model_groups=groups, out=out,
                          rounds=settings["rounds"], num_initial_ei_rounds=ei_rounds)


def differing_settings(settings: dict[str, Any]) -> list[tuple[str, Any, Any, str]]:
    """``(field, the page's value, TeamMALTConfig's default, why)`` for every field of the headline MALT arm's
    config that differs from the trainer's defaults (the reference trainer's), but its folder and model groups; a
    difference without a reason in ``TEAM_CHOICES`` is an error (a choice the page would not explain)."""
    from trainers.algorithms.malt.team_rounds import TeamMALTConfig
    from trainers.experiments.common import differing_fields

    page = team_config(settings, settings["model_groups"], settings["malt_initial_ei_rounds"])
    return differing_fields(page, TeamMALTConfig(), TEAM_CHOICES, ("out", "model_groups"), "TEAM_CHOICES")


def run_arm(name: str, start: list[str], ei_rounds: int, settings: dict[str, Any], workdir: Path,
            groups: str | None = None, progress: bool = False) -> list:
    """An EI-only or MALT arm from the BC start of the model groups ``groups`` (default: the headline's), in its
    ``arm_dir``; its round records."""
    from trainers.algorithms.malt.team_rounds import run_team_malt

    groups = groups or settings["model_groups"]
    config = team_config(settings, groups, ei_rounds, str(arm_dir(workdir, groups, settings) / name))
    return run_team_malt(config, start, make_env(settings), progress)


def run_arms(settings: dict[str, Any], workdir: Path,
             progress: bool = False) -> tuple[list[tuple[str, str, list[str]]], dict[str, list]]:
    """Trains (or resumes) every arm of model groups: ``(rows to evaluate as (name, groups, checkpoints), round
    records by arm row name)``: per arm ``bc``, ``ei``, ``malt_ei_start`` and ``malt``."""
    agents, arms = [], {}
    for groups in arm_groups(settings):
        suffix = arm_suffix(groups, settings)
        bc = train_bc(settings, workdir, groups, progress)
        agents.append(("bc" + suffix, groups, bc))
        for name, ei_rounds in (("ei", settings["rounds"]), ("malt", settings["malt_initial_ei_rounds"])):
            rounds = arms[name + suffix] = run_arm(name, bc, ei_rounds, settings, workdir, groups, progress)
            if name == "malt" and 0 < ei_rounds < len(rounds):  # what the MALT rounds start from
                agents.append((MALT_START + suffix, groups, rounds[ei_rounds - 1].checkpoints))
            agents.append((name + suffix, groups, rounds[-1].checkpoints))
    return agents, arms


def evaluate_rows(agents: list[tuple[str, str, list[str]]], settings: dict[str, Any],
                  progress: bool = False) -> list[TeamRow]:
    """Every row ``(name, model groups, checkpoints)`` on the same ``games`` seeded games (sampling at temperature 1)."""
    from trainers.algorithms.malt.team import parse_groups, play_team, team_policy

    seeds = [settings["eval_seed"] + i for i in range(settings["games"])]
    rows = []
    for name, groups, checkpoints in agents:
        reading = BoardReading()
        team = team_policy(make_env(settings), parse_groups(groups, 2), checkpoints, name=name)
        returns = play_team(lambda: make_env(settings), team, seeds, progress=progress, on_step=reading)
        rows.append(TeamRow(name, checkpoints, returns, arm_suffix(groups, settings), reading))
    return rows


def verdict(rows: list[TeamRow], suffix: str = "") -> tuple[bool, list[str]]:
    """``(target met, lines)`` of the arm whose row names end with ``suffix``: MALT's team return vs BC's beyond 2
    paired SE, and each role's own return not falling (not below BC's by more than 2 paired SE); plus EI vs BC and
    MALT vs its EI start, for reading."""
    from trainers.evaluation.stats import sample_separation

    by_name = {r.name: r for r in rows}
    malt, bc = by_name["malt" + suffix], by_name["bc" + suffix]
    lines, met = [], True
    for c, column in enumerate(COLUMNS):
        delta, se, side = sample_separation(malt.returns[:, c], bc.returns[:, c])
        if c == 0:
            holds = side == 1
            text = "improves by more than 2 paired SE" if holds else "does NOT improve by more than 2 paired SE"
        else:
            holds = side != -1
            text = "does not fall" if holds else "FALLS by more than 2 paired SE"
        met &= holds
        lines.append(f"- {column}, `{malt.name}` vs `{bc.name}`: Δ = {delta:+.3f} ± {se:.3f} (paired SE) -> {text}")
    for a, b in (("ei" + suffix, bc.name), (malt.name, MALT_START + suffix)):
        if a in by_name and b in by_name:
            delta, se, side = sample_separation(by_name[a].returns[:, 0], by_name[b].returns[:, 0])
            lines.append(f"- team return, `{a}` vs `{b}` (for reading): Δ = {delta:+.3f} ± {se:.3f} (paired SE)")
    return met, lines


def results_table(rows: list[TeamRow]) -> str:
    """Markdown: per row the mean ± SE of each column, the win rate, and the team return's paired Δ vs its arm's
    ``bc`` row."""
    from trainers.evaluation.stats import mean_and_se, sample_difference

    bases = {r.arm: r for r in rows if r.name == "bc" + r.arm}
    lines = ["| row | games | " + " | ".join(f"{c} ± SE" for c in COLUMNS) + " | win rate | Δ team vs its bc ± SE |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        base = bases[row.arm]
        cells = [f"{m:.3f} ± {s:.3f}" for m, s in (mean_and_se(row.returns[:, c]) for c in range(3))]
        wins = float(np.mean(row.returns[:, 0] > -6.0 + 1e-9)) if len(row.returns) else 0.0
        delta = "—" if row is base else "{:+.3f} ± {:.3f}".format(*sample_difference(row.returns[:, 0],
                                                                                    base.returns[:, 0]))
        lines.append(f"| {row.name} | {len(row.returns)} | " + " | ".join(cells) + f" | {wins:.3f} | {delta} |")
    return "\n".join(lines)


def rounds_table(rounds: list) -> str:
    """One line per round: kind, responses sampled, episodes, mean team return, what each group trained on."""
    lines = ["round  kind  env_steps  episodes  mean_team_return  trained_on (per group)"]
    for r in rounds:
        lines.append(f"{r.round:5d}  {r.kind:4s}  {r.env_steps:9d}  {r.episodes:8d}  {r.mean_team_return:16.3f}  "
                     f"{r.trained_on}" + "".join(f"  (group {k} empty: {why})" for k, why in enumerate(r.empty_reasons)
                                                 if why))
    return "\n".join(lines)


def section(rows: list[TeamRow], arms: dict[str, list], settings: dict[str, Any], seconds: float, smoke: bool,
            command: str, cpu_seconds: float = 0.0) -> tuple[str, str]:
    """``(summary line, section)`` markdown of the two-role result (see the module docstring); ``seconds`` and
    ``cpu_seconds``: the command's wall-clock and CPU time. The target is the headline arm's."""
    from trainers.core.provenance import generated_by

    met, lines = verdict(rows)
    state = "met" if met else "NOT met"
    others = ""
    for groups in arm_groups(settings)[1:]:
        other_met, other_lines = verdict(rows, arm_suffix(groups, settings))
        others += (f"\n\nModel groups `{groups}` (rows `…{arm_suffix(groups, settings)}`, their own BC start): MALT's "
                   f"target {'met' if other_met else 'NOT met'} on this arm.\n\n" + "\n".join(other_lines))
    summary = (f"**Two-role Wordle (proposer and checker): target {state}** — MALT vs the BC start, team return and "
               f"each role's own return; see the section below." + (" Smoke run: not a result." if smoke else ""))
    text = ("## Two-role Wordle: a proposer and a checker\n\n"
            + ("**Smoke run with tiny settings: not a result.**\n\n" if smoke else "")
            + f"**Target {state}** (model groups `{settings['model_groups']}`): MALT improves the team's return over "
            "the BC start by more than 2 paired SE and no role's own return falls.\n\n"
            f"{generated_by(command)} (`trainers/experiments/malt_roles.py`) on "
            f"{datetime.date.today().isoformat()} in {cpu_seconds / 60:.1f} CPU min on one thread ({seconds / 60:.1f} min "
            "wall-clock on a shared machine; a resumed run counts only its own part); do not edit by hand.\n\n"
            f"The task (`rlds_lang.wordle_roles`, word list `{settings['words']}` as answers and guesses): the "
            "proposer offers a guess, the checker accepts it or sends it back "
            f"(at most {settings['max_sendbacks']} time(s) a turn); the accepted guess is played. Team return: the "
            "game's (-1 per guess that is not the answer). Own returns: the game's plus the proposer's cost of a "
            "proposal sent back and the checker's cost of a wrong judgement. Model groups: `0+1` puts both roles on "
            "one model with role prompts, `0,1` gives each role its own model. The headline arm is model groups "
            f"`{settings['model_groups']}`; "
            + (f"the rows of model groups {', '.join(f'`{g}`' for g in arm_groups(settings)[1:])} end with the groups "
               "and are compared with their own BC start.\n\n" if arm_groups(settings)[1:] else "there is no other arm.\n\n")
            + "### Verdicts (computed)\n\n" + "\n".join(lines) + others + "\n\n"
            f"### Results ({settings['games']} seeded games each, the same seeds for every row, temperature 1)\n\n"
            + results_table(rows) + "\n\n### How the roles use the board (computed on the same games)\n\n"
            "After the first guess: the share of a turn's first proposals that fit the feedback so far (could still be "
            "the answer), and the share of fitting and of non-fitting proposals the checker accepts. A checker that "
            "reads the board accepts fitting proposals far more often than the others.\n\n"
            + reading_table([(row.name, row.reading) for row in rows if row.reading is not None])
            + "\n\n### Rounds\n\n"
            + "".join(f"`{name}`:\n\n```\n{rounds_table(rounds)}\n```\n\n" for name, rounds in arms.items())
            + "### Settings that differ from the trainer's defaults\n\n"
            "The MALT arm's rounds against `TeamMALTConfig`'s defaults (the reference trainer's semantics), each with "
            "its reason (`TEAM_CHOICES`):\n\n"
            + ("Smoke run: its tiny settings are not compared." if smoke else choices_table(settings)) + "\n\n"
            + "### Settings\n\n```\n" + "\n".join(f"{k} = {v}" for k, v in settings.items()) + "\n```\n")
    return summary, text


def choices_table(settings: dict[str, Any]) -> str:
    """Markdown: one row per ``differing_settings`` entry (or a line saying there is none)."""
    from trainers.experiments.common import differences_table

    rows = differing_settings(settings)
    if not rows:
        return "None: the rounds run at the trainer's defaults."
    return differences_table(rows, "this page", "TeamMALTConfig default")


def _replace_block(page: str, begin: str, end: str, block: str, where: str) -> str:
    """``page`` with the text between ``begin`` and ``end`` replaced by ``block`` (or the marked block put
    ``where``: ``after_title`` or ``end``)."""
    marked = f"{begin}\n{block}\n{end}"
    if begin in page and end in page:
        head, rest = page.split(begin, 1)
        return head + marked + rest.split(end, 1)[1]
    if where == "after_title" and page.startswith("# "):
        title, _, rest = page.partition("\n")
        return f"{title}\n\n{marked}\n{rest}"
    return page.rstrip("\n") + f"\n\n{marked}\n"


def splice(page: str, summary: str, text: str) -> str:
    """``page`` with the two-role summary under its title and the section at its end (replacing earlier ones)."""
    return _replace_block(_replace_block(page, SUMMARY_BEGIN, SUMMARY_END, summary, "after_title"),
                          SECTION_BEGIN, SECTION_END, text, "end")


def kept_blocks(old_page: str, new_page: str) -> str:
    """``new_page`` with the two-role blocks of ``old_page`` carried over (a regenerated single-agent page)."""
    for begin, end, where in ((SUMMARY_BEGIN, SUMMARY_END, "after_title"), (SECTION_BEGIN, SECTION_END, "end")):
        if begin in old_page and end in old_page:
            block = old_page.split(begin, 1)[1].split(end, 1)[0].strip("\n")
            new_page = _replace_block(new_page, begin, end, block, where)
    return new_page


__all__ = ["COLUMNS", "MALT_START", "TeamRow", "arm_dir",
           "arm_groups", "arm_suffix", "bc_episodes", "choices_table", "differing_settings", "evaluate_rows",
           "kept_blocks", "make_env", "results_table", "rounds_table", "run_arm", "run_arms",
           "section", "splice", "team_config", "train_bc", "verdict"]
