"""The markdown of ``docs/baselines.md``: every number and verdict computed from the outcomes
(``trainers.experiments.baselines.run.SettingOutcome``); this module only writes."""

from __future__ import annotations

import argparse
import datetime
import json
from typing import TYPE_CHECKING, Any, Sequence

from trainers.core import provenance
from trainers.experiments.baselines.settings import LMRL_GYM, SETTINGS, TARGETS, setting_scale
from trainers.experiments.beta_choice import render_beta_choices, tuning_config
from trainers.experiments.lmrl_gym.document import comparison_lines

if TYPE_CHECKING:  # pragma: no cover - type hints only
    from trainers.experiments.baselines.outcome import SettingOutcome
    from trainers.experiments.common import Decoding


def command_line(args: argparse.Namespace) -> str:
    """The ``rlds-lang results baselines`` command that regenerates a run of ``args``: as typed, its sizes and
    settings spelled out (``trainers.core.provenance.command_line``)."""
    decodings = " ".join(args.decodings) if args.decodings else "sample"
    return provenance.command_line(args, "rlds-lang results baselines", (
        ("--small", args.small), ("--steps", args.steps), ("--games", args.games), ("--eval-seed", args.eval_seed),
        ("--decodings", decodings), ("--beta-games", args.beta_games), ("--beta-grid", args.beta_grid),
        ("--dt-targets", args.dt_targets), ("--section5-pairs", args.section5_pairs),
        ("--top-advantage-episodes", args.top_advantage_episodes), ("--lmrl-gym-small", args.lmrl_gym_small),
        ("--lmrl-gym-steps", args.lmrl_gym_steps)))


def dt_trend(sweep: Sequence[tuple[float, Any]]) -> tuple[str, int]:
    """Whether the Decision Transformer's achieved return rises with its target: the paired difference of the
    highest target's games and the lowest's, and its side (+1 rises, -1 falls, 0 not separated by 2 SE)."""
    from trainers.evaluation.stats import in_standard_errors, paired_separation

    (low, low_result), (high, high_result) = sweep[0], sweep[-1]
    diff, se, side = paired_separation(high_result, low_result)
    word = {1: "rises with the target", -1: "falls as the target rises",
            0: "does not rise with the target (not separated by 2 SE)"}[side]
    return (f"Achieved return at target {high:g} − at target {low:g} = {diff:+.3f} ± {se:.3f} "
            f"({abs(in_standard_errors(diff, se)):.1f} SE): the achieved return {word}.", side)


def target_status(lmrl_gym: SettingOutcome) -> str:
    """The page's first paragraph: whether CQL, ψ and utterance ILQL each beat BC by more than 2 paired SE on
    LMRL-Gym's Wordle, with the measured numbers either way."""
    lines, met = comparison_lines(lmrl_gym.by_name, TARGETS)
    if all(met):
        return ("**All targets met** on LMRL-Gym's Wordle: CQL, ψ and utterance ILQL each beat BC by more than 2 "
                "paired standard errors.\n" + "\n".join(lines))
    return (f"**Targets not met** on LMRL-Gym's Wordle ({sum(met)} of {len(met)}: CQL, ψ and utterance ILQL should "
            "each beat BC by more than 2 paired standard errors). Measured:\n" + "\n".join(lines)
            + "\n\nTried: " + tried(lmrl_gym) + " (every row: each setting's *What was trained*).")


def left_out(outcomes: Sequence[SettingOutcome]) -> str:
    """A paragraph naming the settings this page did not run and the option that adds them; ``""`` when it ran
    every setting."""
    ran = {o.setting.key for o in outcomes}
    missing = [s for s in SETTINGS if s.key not in ran]
    if not missing:
        return ""
    return ("Not run for this page: " + "; ".join(s.title for s in missing) + ". The command without `--settings` "
            "runs every setting (what each costs: the guide [The ILQL code's other baselines](guides/baselines.md)).")


def scale_note(outcome: SettingOutcome, args: argparse.Namespace) -> str:
    """The scale LMRL-Gym's Wordle ran at here, beside LMRL-Gym's own: training games, the transformer, each row's
    optimizer steps and batch (so the games a row saw), and the evaluation games; computed from the run.

    >>> from types import SimpleNamespace as NS
    >>> from trainers.experiments.baselines.outcome import TrainedRun
    >>> from trainers.experiments.common import Experiment
    >>> run = TrainedRun(Experiment("BC", "bc"), None, 500, 1.0)
    >>> args = NS(small=None, steps=None, lmrl_gym_small=20000, lmrl_gym_steps=500, games=1000)
    >>> print(scale_note(NS(setting=LMRL_GYM, trained={"BC": run}), args))  # doctest: +ELLIPSIS
    **Scale of this run** (LMRL-Gym's in brackets): 20,000 training games (1,000,000); ...
    """
    from rlds_lang.wordle import lmrl_gym

    training = outcome.setting.training
    model = training["model"]
    small = setting_scale(outcome.setting, args)[0]
    games = lmrl_gym.TRAIN_GAMES if small is None else min(small, lmrl_gym.TRAIN_GAMES)
    steps = ", ".join(f"{name} {t.steps:,}" for name, t in outcome.trained.items())
    return (f"**Scale of this run** (LMRL-Gym's in brackets): {games:,} training games "
            f"({lmrl_gym.TRAIN_GAMES:,}); a {model['n_layer']}-layer, {model['n_embd']}-wide transformer from random "
            f"weights, the rows that start from BC (*What was trained*) from BC's trained one (GPT-2 small, 124M "
            f"parameters, pretrained); optimizer steps at batch {training['batch_size']}: {steps} (LMRL-Gym's ILQL: 10 epochs at "
            f"batch 128); {args.games:,} evaluation games ({lmrl_gym.PUBLISHED_EVAL_GAMES:,}).\n")


def page_status(outcomes: Sequence[SettingOutcome]) -> str:
    """The page's first paragraph: ``target_status`` of LMRL-Gym's Wordle when this page ran it; otherwise that
    the targets were not measured, and why."""
    lmrl_gym = next((o for o in outcomes if o.setting.key == LMRL_GYM.key), None)
    if lmrl_gym is not None:
        return target_status(lmrl_gym)
    rows = ", ".join(row for row, _ in TARGETS)
    return (f"**Targets not measured**: {rows} should each beat BC by more than 2 paired standard errors on "
            f"{LMRL_GYM.title}, and this page did not run that setting. " + left_out(outcomes))


def tried(outcome: SettingOutcome) -> str:
    """How the target rows were trained: algorithm, overrides and optimizer steps of each that was trained."""
    runs = [outcome.trained[row] for row, _ in TARGETS if row in outcome.trained]
    return "; ".join(f"{t.experiment.name}: `{t.experiment.algorithm}` {json.dumps(t.experiment.overrides)}, "
                     f"{t.steps} steps" for t in runs) or "—"


def render_table(outcome: SettingOutcome) -> str:
    """Every row's mean return ± SE and success rate, and its paired difference to BC on the same games."""
    from trainers.evaluation.stats import paired_difference

    bc = outcome.by_name["BC"]
    rows = ["| row | algorithm | mean return ± SE | success rate | − BC (paired) |", "| --- | --- | --- | --- | --- |"]
    for r in outcome.results:
        algorithm = outcome.trained[r.name].experiment.algorithm
        gain = "—" if r is bc else "{:+.3f} ± {:.3f}".format(*paired_difference(r, bc))
        rows.append(f"| {r.name} | `{algorithm}` | {r.mean_reward:.3f} ± {r.stderr:.3f} | {r.win_rate:.3f} | {gain} |")
    return "\n".join(rows)


#: a row "almost never wins" below this share of its games.
RARE_WIN_RATE = 0.01


def floor_note(outcome: SettingOutcome) -> str:
    """A paragraph when at least half the rows win fewer than ``RARE_WIN_RATE`` of their games (their returns then
    sit near a lost game's and the table separates little): the rows, how the game works (``Setting.hard_game``),
    the win rates of the scripted reference players on the same games (``SettingOutcome.references``), and what
    share of those rows' guesses were answers still consistent with the feedback (the only guesses that can win) or
    at least on the answer list; otherwise ``""``."""
    from trainers.evaluation.guess_quality import guess_shares

    rare = [r for r in outcome.results if r.win_rate < RARE_WIN_RATE]
    if not rare or 2 * len(rare) < len(outcome.results):
        return ""
    winnable = ", ".join(f"{r.name} {r.win_rate:.1%}" for r in outcome.references)
    counted = [(r.name, guess_shares(r)) for r in rare if any(r.actions)]
    shares = ("Share of their guesses that were answers consistent with the feedback so far, and (in brackets) "
              "that were on the answer list: " + ", ".join(f"{name} {s.consistent_share:.0%} "
                                                          f"({s.on_answer_list_share:.0%})" for name, s in counted)
              + "." if counted else "")
    sentences = [f"{len(rare)} of {len(outcome.results)} rows win fewer than {RARE_WIN_RATE:.0%} of their games "
                 f"({', '.join(r.name for r in rare)}): their returns sit near a lost game's and differ little.",
                 outcome.setting.hard_game, f"Win rates of scripted players on the same games: {winnable}.", shares]
    return " ".join(sentence for sentence in sentences if sentence) + "\n"


def render_sweep(outcome: SettingOutcome) -> str:
    """The Decision Transformer's achieved return at each target return, and the computed trend."""
    if not outcome.dt_sweep:
        return "The Decision Transformer was not trained in this run.\n"
    rows = ["| target return | achieved mean return ± SE | success rate |", "| --- | --- | --- |"]
    rows += [f"| {target:g} | {r.mean_reward:.3f} ± {r.stderr:.3f} | {r.win_rate:.3f} |"
             for target, r in outcome.dt_sweep]
    return ("The DT row of the table plays its config's target return; here it plays each target on the same "
            "games.\n\n" + "\n".join(rows) + "\n\n" + dt_trend(outcome.dt_sweep)[0] + "\n")


def render_ranks(outcome: SettingOutcome) -> str:
    """The Section-5 ranking of every value row: measured fractions, or why not."""
    rows = ["| row | initial state (pairs) | branch states (pairs) |", "| --- | --- | --- |"]
    for name, r in outcome.ranks.items():
        if isinstance(r, str):
            rows.append(f"| {name} | {r} | {r} |")
        else:
            rows.append(f"| {name} | {r['initial']:.3f} ({r['initial_pairs']}) | {r['branch']:.3f} "
                        f"({r['branch_pairs']}) |")
    return ("The fraction of pairs, drawn as the ILQL authors' ranking evaluator draws them, where the row's Q of the "
            "whole word (the minimum of its trained twin heads) is strictly above for the optimal policy's move "
            "(`trainers.experiments.section5.rank`, as on [section5.md](section5.md)): at the initial "
            "state its first guess against the suboptimal games' first guesses, at the branch states its third "
            "guess against the adversarial takeover's. The paper's ILQL is near 1 at the initial state, "
            "single-step methods near 0.\n\n" + "\n".join(rows) + "\n")


def render_trained(outcome: SettingOutcome) -> str:
    """What each row trained: algorithm, overrides of the setting's training config, steps and minutes."""
    setting = outcome.setting
    rows = ["| row | algorithm | overrides | starts from the BC row | optimizer steps "
            "| training minutes (wall clock, pauses included) |", "| --- | --- | --- | --- | --- | --- |"]
    for name, t in outcome.trained.items():
        overrides = json.dumps(t.experiment.overrides) if t.experiment.overrides else "—"
        rows.append(f"| {name} | `{t.experiment.algorithm}` | `{overrides}` | "
                    f"{'yes' if name in setting.from_bc else 'no'} | {t.steps} | {t.minutes:.1f} |")
    shared = json.dumps({k: v for k, v in setting.training.items() if k != "steps"})
    steps = setting.training["steps"]
    return f"Shared config ({steps} steps unless overridden): `{shared}`.\n\n" + "\n".join(rows) + "\n"


def render_setting(outcome: SettingOutcome, args: argparse.Namespace) -> str:
    """One setting's section: table, verdicts to BC, DT's sweep, β choices, its diagnostics, what was trained."""
    names = [r.name for r in outcome.results if r.name != "BC"]
    lines, _ = comparison_lines(outcome.by_name, tuple((name, "BC") for name in names))
    held_out = tuning_config(outcome.setting.eval_config(args.games, args.eval_seed), args.beta_games)
    betas = (render_beta_choices(outcome.betas, held_out) if outcome.betas
             else "Not chosen in this run (`--beta-games 0`): each value row played its committed β.\n")
    note = floor_note(outcome)
    scale = [scale_note(outcome, args)] if outcome.setting.key == LMRL_GYM.key else []
    parts = [f"## {outcome.setting.title}\n", *scale,
             f"{outcome.results[0].games} seeded games (seed {args.eval_seed}).\n",
             render_table(outcome), "", *([note] if note else []), "### Paired differences to BC\n", "\n".join(lines),
             "\n### The Decision Transformer's target returns\n", render_sweep(outcome),
             "### β of the token-level value rows, chosen on held-out games\n", betas]
    if outcome.ranks:
        parts += ["### Section-5 ranking of the value rows\n", render_ranks(outcome)]
    if outcome.top_advantage is not None:
        parts += [f"### Top advantage: {outcome.setting.top_advantage_row}\n",
                  "The actions of the `train` split the row rates best and worst (sum over the action's tokens of "
                  "Q − V, averaged per action text; `trainers.experiments.top_advantage`).\n",
                  outcome.top_advantage + "\n"]
    parts += ["### What was trained\n", render_trained(outcome)]
    return "\n".join(parts)


def render_page(outcomes: Sequence[SettingOutcome], args: argparse.Namespace, decoding: Decoding,
                seconds: float) -> str:
    """The markdown of ``docs/baselines.md``; ``outcomes`` in the page's order (LMRL-Gym's Wordle first), of the
    settings this page ran."""
    # without LMRL-Gym's Wordle the first paragraph already names what was left out
    skipped = left_out(outcomes) if any(o.setting.key == LMRL_GYM.key for o in outcomes) else ""
    return f"""# The ILQL code's baselines on Wordle: BC, %BC, ILQL, CQL, DT, ψ, utterance ILQL and CHAI

{page_status(outcomes)}

{provenance.generated_by(command_line(args))} on
{datetime.date.today().isoformat()} (this invocation: {seconds / 60:.1f} min; finished training and evaluations
are reused). Every row of a setting plays {decoding.title} on the same seeded games; the utterance-level agents
(utterance ILQL, CHAI) sample their candidates at that temperature and say the one of highest Q. Verdicts are
paired differences on the same games, beyond 2 standard errors (`trainers.evaluation.stats`). How the page is
made: the guide [The ILQL code's other baselines](guides/baselines.md).{chr(10) + chr(10) + skipped if skipped else ""}

{chr(10).join(render_setting(o, args) for o in outcomes)}"""


__all__ = ["RARE_WIN_RATE", "command_line", "dt_trend", "target_status", "left_out", "scale_note", "page_status", "tried",
           "render_table", "floor_note", "render_sweep", "render_ranks", "render_trained", "render_setting",
           "render_page"]
