"""The ILQL paper's Section-5 "adversarial" Wordle data (Snell et al. 2022, arXiv 2206.11871) as recipes.

The paper builds a dataset on which single-step methods (the data's own values: SARSA, Monte-Carlo returns)
rank the optimal policy's moves *below* worse ones while multi-step ILQL ranks them right. Its
``scripts/data/wordle/generate_adversarial_data.py`` plays, per trajectory, one game of the optimal policy;
when that game lasted more than 3 turns, ``n_adversarial`` branches from the state after its first two moves,
where an adversarial policy takes over; and ``n_suboptimal`` games of a suboptimal policy. So after the
optimal first move most of the data's games are the adversarial branches (return -6), and the optimal first
move's average return falls below the suboptimal policy's, although continuing optimally from there is best.

Its configuration file is not public. ``shared/REFERENCE_TASKS.md`` quotes the paper's shares: about 9%
optimal games (mean -2.647), 45.5% adversarial (-6.0) and 45.5% suboptimal (-4.262). Here, in the same MDP
(``adversarial_resample``, ``ilql`` colouring, the official lists), about half of the optimal games last 4
turns or more, so 1 : 10 x 0.5 : 5 gives those shares: ``N_ADVERSARIAL = 10``, ``N_SUBOPTIMAL = 5``. The
adversarial policy is ``WrongPolicy`` (a word inconsistent with the feedback: it can never win, so its games
score -6); the suboptimal one ``RandomMixturePolicy(prob_smart=0.5)``, whose mean here (-4.29 on 300 games)
matches the paper's -4.262. No recording here: the builder config ``wordle_synthetic/ilql_adversarial``
records ``recipes()``; ``trainers.experiments.section5`` trains on it and ranks.
"""

from __future__ import annotations

from rlds_lang.wordle.recipes import Recipe

#: the MDP of the paper's Section 5.
MODE, RULE = "adversarial_resample", "ilql"
#: branches per optimal game, taken over at ``BRANCH_TURN`` when the game lasted ``MIN_TURNS`` turns or more.
N_ADVERSARIAL, BRANCH_TURN, MIN_TURNS = 10, 2, 4
#: suboptimal games per optimal game.
N_SUBOPTIMAL = 5
#: optimal games (trajectories) of the builder config.
GAMES = 2000
#: the paper's shares and mean returns of the three kinds of game (``shared/REFERENCE_TASKS.md``).
PUBLISHED_SHARES = {"optimal": 0.09, "adversarial": 0.455, "suboptimal": 0.455}
PUBLISHED_MEANS = {"optimal": -2.647, "adversarial": -6.0, "suboptimal": -4.262}


def recipes(games: int = GAMES) -> tuple[Recipe, Recipe]:
    """The optimal games with their adversarial branches, and the suboptimal games (seeds disjoint)."""
    common = dict(mode=MODE, rule=RULE)
    return (Recipe("ilql_adversarial_optimal", "optimal", episodes=games, seed=0, branch_policy="wrong",
                   branch_at_turn=BRANCH_TURN, branches_per_turn=N_ADVERSARIAL, branch_min_turns=MIN_TURNS, **common),
            Recipe("ilql_adversarial_suboptimal", "random_mixture", '{"prob_smart": 0.5}',
                   episodes=N_SUBOPTIMAL * games, seed=1_000_000, **common))


__all__ = ["BRANCH_TURN", "GAMES", "MIN_TURNS", "MODE", "N_ADVERSARIAL", "N_SUBOPTIMAL", "PUBLISHED_MEANS",
           "PUBLISHED_SHARES", "RULE", "recipes"]
