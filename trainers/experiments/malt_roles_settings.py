"""The committed settings of the two-role Wordle section of ``docs/malt.md`` (``trainers.experiments.malt_roles``):
``COMMITTED`` with the source or the held-out measurement behind each choice, ``SMOKE`` (the same pipeline in
minutes, not a result) and ``TEAM_CHOICES``, why the rounds depart from ``TeamMALTConfig``'s defaults."""

from __future__ import annotations

from typing import Any

#: the committed settings of the two-role section; ``SMOKE`` shrinks them for a quick check of the pipeline.
COMMITTED: dict[str, Any] = {
    # the demo's 32-word list as answers and guesses, and logits that start at scale 10 (trainers.experiments.demo says
    # why): with the full lists a first run's BC start (this model, 800 steps) never won a game, so no round had
    # anything to keep or prefer
    "max_sendbacks": 1, "words": "demo_words",
    # words as tokens and the board as (letter, colour) cells, the demo's encoding: with letters and squares as
    # characters the BC proposer used the board no better than chance (after the first guess 0.033 of its
    # probability on words that fit the feedback; uniform: 0.047), and every arm was limited by that (below). With
    # cells the BC start puts 0.109 there (uniform 0.082; the BC data's proposals fit 0.25-0.62 of the time);
    # training it on for 2,500, 5,000 and 7,500 more steps gave 0.161, 0.193 and 0.192
    "tokenizer": "words_board:demo_words",
    # the checker's text is the proposal marked by the board (ProposerCheckerEnv's checker_view; Constraints.marks).
    # P(accept | fits) against P(accept | does not fit) of the BC start on 200 held-out games: with the board alone
    # ("board", a proposal only as its word token) 0.46 vs 0.51, and no EI or MALT checker told them apart either
    # (malt 0.17 vs 0.18); with the last guess coloured as if the proposal were the answer 0.54 vs 0.55; marked
    # 0.66 vs 0.52
    "checker_view": "marked",
    # the BC data: scripted teams (rlds_lang.wordle_roles.policies.STRENGTHS), strong/strong and medium/medium. On
    # 200 held-out games the BC start's first proposals fit the feedback 0.06 of the time when trained on weak and
    # medium roles (weak/weak, weak/medium, medium/weak, medium/medium, 250 games each), and the shared model's MALT
    # checker then sent back almost everything: the headline arm missed its target. With this mix 0.28, and its
    # checker accepts 0.84 of fitting proposals against 0.31 of the others (medium/medium, medium/strong,
    # strong/medium and weak/strong, 250 each: 0.11, 0.76 against 0.12). A held-out run of both arms on this mix
    # (1,000 games, eval_seed 2_000_000_000): MALT vs BC team +0.499 +- 0.067 on `0+1` (proposer +0.671, checker
    # +0.564), +0.109 +- 0.063 on `0,1`
    "bc_data": [["strong", "strong"], ["medium", "medium"]],
    "bc_games_each": 500,
    "model": {"n_layer": 2, "n_embd": 64, "n_head": 2, "n_positions": 512, "logit_scale": 10.0},
    # the BC start (under 25 CPU minutes for the three models of both arms). A first run with 800 BC steps and 2 DPO
    # passes (4.6 CPU min) started from a BC team at -5.45 (near random play) and moved nothing
    "bc_steps": 2500, "bc_batch_size": 32, "bc_lr": 1e-3, "model_groups": "0+1",
    # The rounds: chosen on held-out games (eval_seed 2_000_000_000, 1,000 games; never the page's seeds), from these
    # numbers. The previous settings (192 EI games, 100 steps; 48 trees, branching 2 at decision points 0-3,
    # positive_negative, plain DPO 4 passes at 2e-5) moved nothing: MALT vs BC +0.004 +- 0.052 on held-out games.
    # Its MALT round trained on 27 proposer and 20 checker pairs out of 708 sibling groups: the mid-point thresholds
    # (-4.5 proposer, -6 checker) sit above most values (medians -6.5, -7.75); the checker's 96 first checks gave no
    # two different answers (it accepts 99% there, rightly: the first proposal always fits), and a first guess has
    # no feedback to use, so decision points 0-1 carry no signal; at the checker's later points branching 2 gave two
    # different answers in 114 of 376. Its 12 DPO steps at 2e-5 left the model as it was (-0.017 +- 0.021).
    # EI kept 150 turns of 192 games and made 21 passes over them: the proposer narrowed onto the words of a few
    # lucky wins (entropy 2.95 -> 2.69) without proposing consistent words more often.
    # Held-out trials (MALT vs BC: team, proposer's own, checker's own; paired SE about 0.05-0.07): 1024 EI games
    # and 200 steps with the old MALT round +0.036, -0.138, +0.170; these settings +0.059, -1.020, +0.840; with a
    # second MALT round +0.035, -1.212, +0.926; branching at points 1-3 instead +0.045, -0.884, +0.777; EI alone
    # moved nothing (-0.010). What limits every arm: the BC start's proposer uses the board no better than chance
    # (after the first guess it puts 0.033 of its probability on words that fit the feedback; uniform: 0.047) and
    # neither EI nor MALT changed that (0.032), so the checker learns to send proposals back (its P(accept) fell
    # from 0.67 to 0.25, alike for fitting and non-fitting proposals) and the proposer pays the send-back cost.
    "rounds": 2, "malt_initial_ei_rounds": 1, "ei_games": 1024, "ei_min_return": -4.0, "ei_steps": 200,
    "ei_lr": 1e-4, "trees": 128, "branching": 3, "branch_from": 2, "branch_depth": 5, "pair_method": "interval",
    "dpo_epochs": 2.0, "dpo_lr": 1e-4, "nll_coef": 1.0,
    # 1,000 games, as the single-agent section evaluates on (decided before the rerun, not after looking at its rows;
    # the first run's 300 games left MALT's +0.150 team gain at 1.6 paired SE)
    "games": 1000, "eval_seed": 1_000_000_000, "seed": 0,
    # a second arm beside the headline's shared model: one model per role, with its own BC start, EI and MALT rows
    "other_model_groups": ["0,1"],
}
SMOKE: dict[str, Any] = {
    **COMMITTED, "bc_data": [["weak", "medium"]], "bc_games_each": 6,
    "model": {"n_layer": 1, "n_embd": 32, "n_head": 2, "n_positions": 512}, "bc_steps": 3, "bc_batch_size": 8,
    "rounds": 2, "ei_games": 6, "ei_min_return": -6.0, "ei_steps": 2, "trees": 2, "branching": 2, "branch_from": 0,
    "branch_depth": 2, "games": 6,
}
#: why the page's rounds depart from ``TeamMALTConfig``'s defaults (the reference trainer's), per field; each was
#: chosen on held-out games (eval_seed 2_000_000_000, 1,000 games; never the page's seeds), COMMITTED's comments say
#: what the earlier settings did.
TEAM_CHOICES: dict[str, str] = {
    "ei_games": "more games, so EI keeps about 870 turns instead of 150 and does not copy a few lucky wins (at 192 "
                "games the proposer narrowed onto their words)",
    "ei_steps": "about 7 passes over the kept turns (100 steps made 21 passes over 150 turns at 192 games)",
    "trees": "more start states: the earlier 48 trees gave 27 proposer and 20 checker pairs",
    "branching": "the MALT paper's three samples: the checker has two answers and a peaked policy, so two samples "
                 "gave two different answers at 114 of 376 of its later checks",
    "branch_from": "no branching at decision points 0-1: a first guess has no feedback to use, and the checker "
                   "accepts 99% of first proposals (rightly: they always fit), so neither gave a pair with a signal",
    "branch_depth": "with branch_from, trees branch at decision points 2-4 (the second guess's proposal and check, "
                    "and the next proposal)",
    "pair_method": "interval pairs: the mid-point thresholds (-4.5 proposer, -6 checker) sit above most values "
                   "(medians -6.5 and -7.75), so positive_negative paired few sibling groups",
    "nll_coef": "iterative RPO's NLL term, as the single-agent page (plain DPO lowered the chosen responses' "
                "likelihood there); DPO at the default learning rate and passes now moves the model (12 steps at "
                "2e-5 left it as it was)",
}

__all__ = ["COMMITTED", "SMOKE", "TEAM_CHOICES"]
