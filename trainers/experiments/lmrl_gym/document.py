"""The markdown of ``docs/lmrl_gym.md`` (``rlds-lang results lmrl-gym``): our rows beside LMRL-Gym's
published table, the verdicts of the comparisons and targets computed from the evaluations, BC's diagnosis,
and what was trained. Every number in it comes from the arguments; ``trainers.experiments.lmrl_gym.run`` trains and
evaluates, this module only writes."""

from __future__ import annotations

import argparse
import datetime
import json
from typing import TYPE_CHECKING, Any

from rlds_lang.wordle import lmrl_gym
from trainers.core import provenance
from trainers.experiments.beta_choice import render_beta_choices
from trainers.experiments.lmrl_gym.decodings import SAVE_BEST

if TYPE_CHECKING:  # pragma: no cover - type hints only
    from trainers.evaluation.selection import Selection
    from trainers.experiments.common import Experiment
    from trainers.experiments.lmrl_gym.decodings import DecodingOutcome
    from trainers.experiments.lmrl_gym.linear import LinearReport
    from trainers.experiments.lmrl_gym.setting import ConsistencyReport

#: the rows that are not offline experiments: online %BC (trained from BC) and the scripted upper bound.
ONLINE, SCRIPTED = "online %BC", "scripted"
#: the ILQL row trained with the earlier target scheme (lagged target heads on the live trunk) and this setting's
#: optimizer, beside the ILQL row built as LMRL-Gym builds it.
ILQL_TARGET_HEADS = "ILQL (target heads, lr 1e-3)"
#: the published row each of ours is compared with (a row not named here is compared with its own name; a
#: ``SAVE_BEST`` row with the row it was chosen from).
PUBLISHED_NAME = {ONLINE: "online %BC", SCRIPTED: None, ILQL_TARGET_HEADS: "ILQL"}
#: the comparisons the page decides: (row, baseline); each must be > 2 paired SE, ILQL's normalised score >= 90.
#: All four met is LMRL-Gym's published ordering (ILQL and MC returns above BC and %BC).
COMPARISONS = (("ILQL", "BC"), ("ILQL", "%BC (top 30%)"), ("MC returns", "BC"), ("MC returns", "%BC (top 30%)"))
#: the two ILQL target schemes, compared on the same games.
SCHEMES = (("ILQL", ILQL_TARGET_HEADS),)
TARGET_ILQL_NORMALISED = 90.0
#: the rows that start from the BC row and act on (or train on) its model: their gain over BC is what they add to it.
FROM_BC = ("MC returns", "ILQL", ONLINE)


def _normalised(mean: float, dataset_mean: float, scripted: float) -> str:
    try:
        return f"{lmrl_gym.normalised_score(mean, dataset_mean, scripted):.1f}"
    except ValueError:  # a smoke run's tiny data can leave min < avg < max unmet
        return "n/a"


def comparison_lines(by_name: dict, comparisons: tuple[tuple[str, str], ...] = COMPARISONS
                     ) -> tuple[list[str], list[bool]]:
    """The computed verdicts of ``comparisons`` (paired differences) and whether each clears 2 SE upwards."""
    from trainers.evaluation.stats import in_standard_errors, paired_separation

    lines, met = [], []
    for row, base in comparisons:
        diff, se, side = paired_separation(by_name[row], by_name[base])
        ratio = abs(in_standard_errors(diff, se))
        met.append(side == 1)
        word = {1: "beats {base} by more than 2 SE", -1: "is below {base} by more than 2 SE",
                0: "is not separated from {base} by 2 SE"}[side].format(base=base)
        lines.append(f"- {row} − {base} = {diff:+.3f} ± {se:.3f} ({ratio:.1f} SE): {row} {word}.")
    return lines, met


def _published_row(name: str) -> tuple[float, float] | None:
    """LMRL-Gym's (mean return, normalised score) of our row ``name``, or None: the return unrounded where its
    ``load_results.py`` holds it, the score computed with that script's constants (``lmrl_gym.published_normalised``);
    the scripted bound is its ``load_results.py`` maximum, 100."""
    published = PUBLISHED_NAME.get(name, name.removesuffix(SAVE_BEST.format(name="")))
    if not published:
        return (lmrl_gym.LOAD_RESULTS_SCRIPTED, 100.0)
    if published not in lmrl_gym.PUBLISHED_TABLE:
        return None
    return lmrl_gym.published_return(published), lmrl_gym.published_normalised(published)


def _gain_over_bc(result: Any, bc: Any) -> tuple[float, float, float | None]:
    """``result``'s paired gain over our ``bc`` in raw return (mean, SE) and its published row's gain over LMRL-Gym's
    BC (None where LMRL-Gym publishes no such row)."""
    from trainers.evaluation.stats import paired_difference

    diff, se = paired_difference(result, bc)
    theirs, published_bc = _published_row(result.name), _published_row("BC")
    if theirs is None or theirs == published_bc:  # BC chosen another way has no published gain
        return diff, se, None
    return diff, se, theirs[0] - published_bc[0]


def render_table(results: list, dataset_mean: float, scripted_mean: float) -> str:
    """Our rows (raw ± SE, normalised) beside the published ones, and each row's gain over BC in raw return, ours
    (paired on the same games) beside LMRL-Gym's: how much each method adds to the BC it is compared with."""
    bc = next((r for r in results if r.name == "BC"), None)
    rows = ["| method | ours: mean return ± SE | ours: normalised | LMRL-Gym: mean return | LMRL-Gym: normalised "
            "| ours − BC (paired) | LMRL-Gym − BC |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        theirs = _published_row(r.name)
        raw, norm = (f"{theirs[0]:.2f}", f"{theirs[1]:.1f}") if theirs else ("—", "—")
        gain, published_gain = "—", "—"
        if bc is not None and r is not bc:
            diff, se, published = _gain_over_bc(r, bc)
            gain = f"{diff:+.3f} ± {se:.3f}"
            published_gain = "—" if published is None else f"{published:+.2f}"
        rows.append(f"| {r.name} | {r.mean_reward:.3f} ± {r.stderr:.3f} | "
                    f"{_normalised(r.mean_reward, dataset_mean, scripted_mean)} | {raw} | {norm} | {gain} | "
                    f"{published_gain} |")
    return "\n".join(rows)


def render_online_rounds(rounds: list[dict[str, Any]]) -> str:
    """Online %BC round by round (``trainers.algorithms.online_pbc``'s summaries, ``rounds.json``): what the policy of each
    round scored in the games it played, and the return a game needed to be kept."""
    if not rounds:
        return "No rounds were run.\n"
    lines = ["| round | games played | mean return of the games played | success rate | games kept | "
             "lowest kept return |", "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {r['round']} | {r['games']} | {r['mean_return']:.3f} | {r['success_rate']:.3f} | {r['kept']} | "
              f"{r['kept_min_return']:g} |" for r in rounds]
    best = max(rounds, key=lambda r: r["mean_return"])
    return ("Round 0 plays the BC model; round k plays the model trained in round k − 1 on its kept games. The table "
            f"plays the last round's model. The best round played {best['mean_return']:.3f} (round "
            f"{best['round']}); the last {rounds[-1]['mean_return']:.3f} (these are the rounds' own games, not the "
            "table's).\n\n" + "\n".join(lines) + "\n")


def command_line(args: argparse.Namespace) -> str:
    """The ``rlds-lang results lmrl-gym`` command that reproduces a run of ``args``: as typed, its sizes spelled out."""
    return provenance.command_line(args, "rlds-lang results lmrl-gym", (
                        ("--small", args.small), ("--steps", args.steps), ("--games", args.games),
                        ("--headline-games", getattr(args, "headline_games", None)),
                        ("--pbc-rounds", args.pbc_rounds), ("--pbc-games", args.pbc_games),
                        ("--pbc-steps", args.pbc_steps), ("--selection-games", getattr(args, "selection_games", None)),
                        ("--calibration-games", args.calibration_games),
                        ("--beta-games", args.beta_games), ("--beta-grid", args.beta_grid),
                        ("--consistency-games", args.consistency_games),
                        ("--linear-train-games", args.linear_train_games),
                        ("--linear-held-out-games", args.linear_held_out_games), ("--linear-steps", args.linear_steps)))


def temperature_one(outcomes: list[DecodingOutcome]) -> dict | None:
    """The results by row name of the table sampled at temperature 1, the data policy's own way of acting (the
    one decoding in which BC can be compared with the data it imitates); None if no such table was played."""
    return next((o.by_name for o in outcomes if o.decoding.key == "sample"), None)


def diagnosis(sampled: dict | None, data: dict, consistency: ConsistencyReport | None = None,
              linear: LinearReport | None = None) -> str:
    """BC's success rate sampled at temperature 1 (``sampled``: the results of the temperature-1 table by name; the
    data policy samples its guesses, so only a BC sampled alike can match its success rate; None: no such table,
    no comparison) beside the data policy's, and (``consistency``:
    ``trainers.experiments.lmrl_gym.setting.ConsistencyReport`` of the BC model) how much of the data's one
    learnable regularity BC took up, on held-out games, beside (``linear``) what a linear model of the board takes
    up."""
    from trainers.evaluation.stats import separation

    text = "The value-based rows act on BC's logits (β·(Q − V) added to them)."
    if sampled is not None:
        bc = sampled["BC"]
        below = separation(bc.win_rate, bc.win_rate_stderr, reference=data["success_rate"]) == -1
        learned = "has not learned" if below else "has learned"
        text = (f"Sampled at temperature 1, as the data policy samples its guesses, BC wins {bc.win_rate:.1%} ± "
                f"{bc.win_rate_stderr:.1%} of games, the data policy it imitates {data['success_rate']:.1%}: BC "
                f"{learned} the behaviour policy. " + text)
    if consistency is not None:
        c = consistency
        text += (f" On {c.states} held-out states of the data policy, BC puts {c.model_mass:.1%} of its probability "
                 f"on the words consistent with the feedback, the data policy {c.behaviour_mass:.1%} and uniform "
                 f"guessing {c.uniform_mass:.1%}: BC has learned {c.learned:.0%} of the one regularity of the data "
                 f"beyond the word list (held-out loss {c.model_nats:.3f} nats per guess; the data policy's own, the "
                 f"lowest BC can reach, {c.behaviour_nats:.3f}; uniform guessing {c.uniform_nats:.3f}).")
        if linear is not None:
            reached = "has reached" if c.model_nats <= linear.lowest else "has not reached"
            text += (f" A linear model of the board (`trainers.experiments.lmrl_gym.linear`: a softmax bilinear in the board's "
                     f"(place, letter, colour) indicators and the word's spelling, no conjunction of constraints) "
                     f"gets to {linear.lowest:.3f} nats per guess on {linear.states} held-out guesses: BC {reached} "
                     "what a linear model of the board learns.")
    return text


def gains_over_bc(by_name: dict) -> str:
    """Each ``FROM_BC`` row's paired gain over our BC beside LMRL-Gym's gain over its BC, whether ours reaches the
    published gain (not below it by more than 2 SE), and how far our BC is below LMRL-Gym's: separates what the
    methods add from where they start."""
    from trainers.evaluation.stats import separation

    bc, published_bc = by_name["BC"], lmrl_gym.published_return("BC")
    parts, reached = [], 0
    for name in FROM_BC:
        diff, se, published = _gain_over_bc(by_name[name], bc)
        reached += separation(diff, se, reference=published) != -1
        parts.append(f"{name} {diff:+.3f} ± {se:.3f} (LMRL-Gym {published:+.2f})")
    gap = bc.mean_reward - published_bc
    side = "above" if gap > 0 else "below" if gap < 0 else "level with"
    return (f"Gains over BC in raw return, ours (paired) beside LMRL-Gym's: {'; '.join(parts)}. {reached} of "
            f"{len(FROM_BC)} rows that start from BC add at least the published gain to it (within 2 SE); our BC "
            f"itself is {abs(gap):.3f} {side} LMRL-Gym's BC ({bc.mean_reward:.3f} against {published_bc:.4f}).")


def _committed_betas(rows: tuple[Experiment, ...]) -> str:
    committed = ", ".join(f"{e.name} {e.beta:g}" for e in rows if e.beta is not None)
    return f"Not chosen in this run (`--beta-games 0`): each row played its committed β ({committed}).\n"


def ordering_reproduced(outcome: DecodingOutcome) -> bool:
    """Whether ``outcome`` reproduces LMRL-Gym's ordering: every ``COMPARISONS`` row above its baseline by > 2 SE."""
    return all(comparison_lines(outcome.by_name)[1])


def normalised_gap(outcome: DecodingOutcome, dataset_mean: float, scripted_mean: float) -> float:
    """The mean absolute difference between our normalised score and LMRL-Gym's over the rows that have a
    published score (the scripted bound and the ``SAVE_BEST`` rows left out): how close the decoding comes to
    the published table."""
    gaps = []
    for r in outcome.results:
        theirs = _published_row(r.name)
        if r.name == SCRIPTED or r.name.endswith(SAVE_BEST.format(name="")) or theirs is None:
            continue
        try:
            ours = lmrl_gym.normalised_score(r.mean_reward, dataset_mean, scripted_mean)
        except ValueError:
            continue
        gaps.append(abs(ours - theirs[1]))
    return sum(gaps) / len(gaps) if gaps else float("nan")


def decoding_status(outcomes: list[DecodingOutcome], data: dict) -> str:
    """The page's first lines about the decodings: which reproduce the published ordering, or, when none does,
    that none does with the closest one's figures."""
    scripted = outcomes[0].by_name[SCRIPTED].mean_reward
    reproduced = [o.decoding.title for o in outcomes if ordering_reproduced(o)]
    if reproduced:
        return ("**The published ordering** (ILQL and MC returns above BC and %BC by more than 2 paired SE) **is "
                f"reproduced** under: {', '.join(reproduced)}.")
    closest = max(outcomes, key=lambda o: (sum(comparison_lines(o.by_name)[1]),
                                           -normalised_gap(o, data["mean_return"], scripted)))
    lines = comparison_lines(closest.by_name)[0]
    return ("**No decoding reproduces the published ordering** (ILQL and MC returns above BC and %BC by more than 2 "
            f"paired SE). Closest: {closest.decoding.title} ({sum(comparison_lines(closest.by_name)[1])} of "
            f"{len(COMPARISONS)} comparisons met; mean gap to the published normalised scores "
            f"{normalised_gap(closest, data['mean_return'], scripted):.1f}):\n" + "\n".join(lines))


def render_decoding(outcome: DecodingOutcome, data: dict) -> str:
    """One decoding's section: its table, its verdicts, whether it reproduces the ordering, the ILQL schemes'
    paired difference and its gap to the published normalised scores."""
    scripted = outcome.by_name[SCRIPTED].mean_reward
    lines, _ = comparison_lines(outcome.by_name)
    schemes = [(a, b) for a, b in SCHEMES if a in outcome.by_name and b in outcome.by_name]
    scheme_lines = comparison_lines(outcome.by_name, tuple(schemes))[0] if schemes else []
    verdict = "reproduces" if ordering_reproduced(outcome) else "does not reproduce"
    return (f"### {outcome.decoding.title} ({outcome.games} games)\n\n"
            f"{render_table(outcome.results, data['mean_return'], scripted)}\n\n"
            + "\n".join([*lines, *scheme_lines]) + "\n\n"
            f"This decoding {verdict} the published ordering; mean gap to the published normalised scores: "
            f"{normalised_gap(outcome, data['mean_return'], scripted):.1f}.\n")


def render_selections(selections: dict[str, Selection]) -> str:
    """BC's and %BC's kept checkpoints with their held-out losses, the chosen one marked."""
    if not selections:
        return "No checkpoints were kept.\n"
    parts = []
    for name, selection in selections.items():
        chosen = "its last" if selection.best.step == selection.last.step else f"step {selection.best.step}"
        parts.append(f"**{name}** (loss on the first {selection.episodes} games of the `{selection.split}` split; "
                     f"chosen: {chosen}):\n\n{selection.table()}\n")
    return "\n".join(parts)


def render_document(headline: DecodingOutcome, outcomes: list[DecodingOutcome], data: dict, calibration: str,
                    minutes: dict, steps: dict, curves: list[str], args: argparse.Namespace, seconds: float, *,
                    rows: tuple[Experiment, ...], training: dict[str, Any],
                    consistency: ConsistencyReport | None = None, linear: LinearReport | None = None,
                    online_rounds: list[dict[str, Any]] | None = None,
                    selections: dict[str, Selection] | None = None) -> str:
    """The markdown of ``docs/lmrl_gym.md`` (every number and verdict computed from its arguments): ``headline``
    the headline decoding's evaluations (``trainers.experiments.lmrl_gym.decodings.headline_decoding``, on its own
    games), ``outcomes`` every decoding's, ``data`` the built dataset's figures, ``rows`` and ``training`` the offline
    rows and model/optimisation config that were trained (``trainers.experiments.lmrl_gym.run.ROWS`` and
    ``TRAINING``), ``minutes``/``steps`` per run, ``online_rounds`` online %BC's round summaries, ``selections``
    BC's and %BC's checkpoints scored by held-out loss."""
    by_name = headline.by_name
    sampled = temperature_one(outcomes)
    scripted_mean = by_name[SCRIPTED].mean_reward
    lines, met = comparison_lines(by_name)
    scheme_lines = comparison_lines(by_name, tuple((a, b) for a, b in SCHEMES if b in by_name))[0]
    ilql_norm = _normalised(by_name["ILQL"].mean_reward, data["mean_return"], scripted_mean)
    norm_met = ilql_norm != "n/a" and float(ilql_norm) >= TARGET_ILQL_NORMALISED
    missed = [line[2:] for line, ok in zip(lines, met) if not ok]
    if not norm_met:
        missed.append(f"ILQL's normalised score is {ilql_norm} (target ≥ {TARGET_ILQL_NORMALISED:g}).")
    status = ("**All targets met** under the headline decoding: ILQL and MC returns each beat BC and %BC by more "
              f"than 2 paired standard errors and ILQL's normalised score is {ilql_norm} (≥ "
              f"{TARGET_ILQL_NORMALISED:g})." if not missed else
              "**Targets not reached** under the headline decoding (measured):\n" + "\n".join(f"- {m}" for m in missed)
              + "\n\n" + gains_over_bc(by_name) + "\n\n" + diagnosis(sampled, data, consistency, linear)
              + " What was trained (and so tried) is listed under *What was trained*.")
    published = lmrl_gym.PUBLISHED_DATASET
    trained = "\n".join(f"| {name} | {steps[name]} | {minutes[name]:.1f} |" for name in minutes)
    chosen_on = next(o for o in outcomes if o.decoding.key == headline.decoding.key)
    bc = chosen_on.by_name["BC"].mean_reward
    betas = "\n".join(f"### {o.decoding.title}\n\n{render_beta_choices(o.betas, args_held_out(args))}"
                      for o in outcomes if o.betas) or _committed_betas(rows)
    return f"""# Wordle in LMRL-Gym's setting: our trainers beside the published table

{provenance.generated_by(command_line(args))} on {datetime.date.today().isoformat()}
(this invocation: {seconds / 60:.1f} min; finished training and evaluations are reused). Setting:
`rlds_lang.wordle.lmrl_gym` (431-word list as guesses and answers, `ilql` colouring, hidden word redrawn every turn,
reward −1 per guess that is not the win, 6 guesses); data: `wordle_synthetic/lmrl_gym`. Every row is played under
{len(outcomes)} decodings ({", ".join(o.decoding.title for o in outcomes)}) on the same {args.games} seeded games
(seed {args.eval_seed}). **The headline table is {headline.decoding.title}, chosen because its BC row comes closest to
LMRL-Gym's BC** ({bc:.3f} on those {chosen_on.games} games against {lmrl_gym.published_return("BC"):.4f}); it is
played again on {headline.games:,} games (LMRL-Gym evaluates on {lmrl_gym.PUBLISHED_EVAL_GAMES:,}).

{decoding_status(outcomes, data)}

{status}

## The table ({headline.decoding.title}, {headline.games:,} games)

{render_table(headline.results, data["mean_return"], scripted_mean)}

Normalised score (LMRL-Gym's formula): 50 + 50·(R − avg)/(max − avg) at or above the dataset's mean return,
50·(R − min)/(avg − min) below it, with min = −6, avg = our dataset's mean return ({data["mean_return"]:.3f}) and
max = our scripted policy's mean return ({scripted_mean:.3f}); LMRL-Gym's columns are computed as its
`load_results.py` computes them: its unrounded mean returns (BC {lmrl_gym.published_return("BC"):.4f}) with its avg
({lmrl_gym.LOAD_RESULTS_DATASET_MEAN:g}) and max ({lmrl_gym.LOAD_RESULTS_SCRIPTED:g}); rows that script does not hold
keep their published score. A row marked *(save_best)* plays its run's checkpoint of lowest held-out loss (LMRL-Gym's `save_best`);
{ILQL_TARGET_HEADS} is ILQL with the earlier target scheme (lagged target heads on the live trunk, decoding with
them) and this setting's optimizer.

## Verdicts (paired differences on the same games)

{chr(10).join([*lines, *scheme_lines])}

## Every decoding

{chr(10).join(render_decoding(o, data) for o in outcomes)}
## Checkpoints chosen by held-out loss (`save_best`)

{render_selections(selections or {})}
## Online %BC, round by round

{render_online_rounds(online_rounds or [])}
## β of the value rows, chosen on held-out games for each decoding

{betas}
## The data and the scripted policy

| figure | ours | LMRL-Gym |
| --- | --- | --- |
| training games | {data["games"]:,} | {lmrl_gym.TRAIN_GAMES:,} |
| data mean return | {data["mean_return"]:.3f} ± {data["stderr"]:.3f} | {published["mean_return"]:.2f} |
| data success rate | {data["success_rate"]:.3f} | {published["success_rate"]:.2f} |
| data mean length (guesses) | {data["mean_length"]:.3f} | {published["mean_length"]:.2f} |
| scripted mean return | {scripted_mean:.3f} ± {by_name[SCRIPTED].stderr:.3f} | {lmrl_gym.PUBLISHED_SCRIPTED:.2f} |

## Did Q and V learn? Calibration on held-out games (`eval` split, {args.calibration_games} games)

{calibration}
## What was trained

Model and optimisation: `trainers.experiments.lmrl_gym.run.TRAINING` ({json.dumps({k: v for k, v in training.items() if k != "steps"})});
overrides: {"; ".join(f"{e.name}: `{e.algorithm}` {json.dumps(e.overrides) if e.overrides else ''}" for e in rows)};
the value rows decode with the finished BC row's policy, unchanged, perturbed by β·(Q − V) (β as in the
section on β above) of a second
transformer that starts from BC's and learns only Q and V (`ON_BC_POLICY`), as LMRL-Gym's value-based agents
decode with its BC model and a separately trained value model;
online %BC: {args.pbc_rounds} rounds × {args.pbc_games} games, top 30% kept, from the BC model.
Training curves: {", ".join(curves) or "—"}.

| run | optimizer steps | training minutes (summed over resumed calls) |
| --- | --- | --- |
{trained}

Differences from LMRL-Gym: its policies are a pretrained GPT-2 small trained on a GPU; ours are a small randomly
initialised GPT-2-architecture transformer trained on 2 CPU cores, whose tokens are whole words and the board's
(letter, colour) cells (`rlds_lang.wordle.board_tokenizer`).

Other choices measured outside this document (word-as-token vs letter-as-token, spelled embeddings, batch and
learning rate, each read with `python -m trainers.experiments.lmrl_gym --consistency` on held-out games): the guide
[LMRL-Gym's Wordle setting](guides/lmrl_gym.md).
"""


def args_held_out(args: argparse.Namespace) -> Any:
    """The held-out games the β choices played (``trainers.experiments.beta_choice.tuning_config``)."""
    from trainers.experiments.beta_choice import tuning_config
    from trainers.experiments.lmrl_gym.setting import setting_config

    return tuning_config(setting_config(args.games, args.eval_seed), args.beta_games)


__all__ = ["ONLINE", "SCRIPTED", "PUBLISHED_NAME", "COMPARISONS", "TARGET_ILQL_NORMALISED", "FROM_BC",
           "comparison_lines", "command_line", "gains_over_bc", "diagnosis", "render_table", "render_online_rounds",
           "render_document", "ILQL_TARGET_HEADS", "SCHEMES", "ordering_reproduced", "normalised_gap",
           "decoding_status", "render_decoding", "render_selections", "args_held_out"]
