"""The ILQL paper's Section-5 "adversarial" Wordle data (Snell et al. 2022, arXiv 2206.11871) as recipes.

The paper builds a dataset on which single-step methods (the data's own values: SARSA, Monte-Carlo returns)
rank the optimal policy's moves *below* worse ones while multi-step ILQL ranks them right. The authors' settings
are public: ``config/wordle/generate_adversarial_data.yaml`` of Sea-Snell/Implicit-Language-Q-Learning, run by
``scripts/data/wordle/generate_adversarial_data.py``. Read there, and kept here:

* ``n_trajectories: 2000`` games of the optimal policy (``expert_policy: optimal_policy``; ``GAMES``);
* per optimal game, when ``len(expert_sequence) > 3`` (script line 48): ``interact_environment`` appends a final
  entry for the terminal state (src/data/language_environment.py:59), so the condition is "3 or more guesses"
  (``MIN_TURNS = 3``), ``n_adversarial: 5`` games of ``adversarial_policy: repeat_policy`` with ``first_n: 2``
  (``N_ADVERSARIAL``), started from the state after the optimal game's first two guesses (``o =
  expert_sequence[2][0]``, line 51; ``BRANCH_TURN = 2``): ``RepeatPolicy(first_n=2)`` repeats one of the game's
  first two guesses at random (src/wordle/policy.py:86-99), so its games never win;
* per optimal game, ``n_suboptimal: 5`` games of ``suboptimal_policy: random_mixture_policy`` with ``prob_smart:
  0.5`` (``N_SUBOPTIMAL``);
* so 1 : 5 : 5, the paper's shares 1/11 = 0.09, 5/11 = 0.455 and 0.455 when (almost) every optimal game lasts 3
  guesses or more.

Remaining differences, each deliberate or unavoidable:

* Their ``interact_environment(WordleEnvironment(vocab), adversarial_policy, o)`` hands the policy the branch state
  ``o`` but steps a fresh environment (``WordleEnvironment.__init__`` resets it, src/wordle/wordle_env.py:18), so
  as run, their "adversarial" games are fresh games of one repeated word (one of the optimal game's first two)
  whose history does not start with the optimal game's moves. Here each is a branch of the optimal game at
  turn 2 (``branch_at_turn``): its first two moves are the optimal game's, then ``RepeatPolicy(first_n=2)``
  takes over, which is what the script's bookkeeping (``adversarial_reward`` adds the optimal game's first two
  rewards, line 53), its meta ``s_2`` (the branch state) and the paper describe.
* Their vocabulary is one list for guesses and answers (``vocab: wordle_official``,
  ``data/wordle/word_lists/wordle_official.txt``, not in the repository); here the official answers (2,315) and
  guesses (12,972), so the suboptimal policy's random half draws from the guess list.
* Each recipe seeds its games (game ``i`` of the optimal recipe ``seed + i``, a branch its parent's seed); theirs
  draw from Python's global ``random``.

The MDP is theirs (``adversarial_resample``: the hidden word is redrawn among the consistent ones after every
guess; ``ilql`` colouring). No recording here: the builder config ``wordle_synthetic/ilql_adversarial`` records
``recipes()``; ``trainers.experiments.section5`` trains on it and ranks.
"""

from __future__ import annotations

from rlds_lang.wordle.recipes import Recipe

#: the MDP of the paper's Section 5.
MODE, RULE = "adversarial_resample", "ilql"
#: per optimal game of at least ``MIN_TURNS`` guesses: ``N_ADVERSARIAL`` games that take over at ``BRANCH_TURN``
#: (config/wordle/generate_adversarial_data.yaml: ``n_adversarial: 5``; ``len(expert_sequence) > 3`` and
#: ``expert_sequence[2]`` in scripts/data/wordle/generate_adversarial_data.py:48-51).
N_ADVERSARIAL, BRANCH_TURN, MIN_TURNS = 5, 2, 3
#: the policy that takes over, and its parameters (the config's ``adversarial_policy: repeat_policy``,
#: ``first_n: 2``).
BRANCH_POLICY, BRANCH_PARAMS = "repeat", '{"first_n": 2}'
#: suboptimal games per optimal game (the config's ``n_suboptimal: 5``) and their policy's parameters
#: (``suboptimal_policy: random_mixture_policy``, ``prob_smart: 0.5``).
N_SUBOPTIMAL, SUBOPTIMAL_PARAMS = 5, '{"prob_smart": 0.5}'
#: optimal games (trajectories) of the builder config (the config's ``n_trajectories: 2000``).
GAMES = 2000
#: the paper's shares and mean returns of the three kinds of game (``shared/REFERENCE_TASKS.md``).
PUBLISHED_SHARES = {"optimal": 0.09, "adversarial": 0.455, "suboptimal": 0.455}
PUBLISHED_MEANS = {"optimal": -2.647, "adversarial": -6.0, "suboptimal": -4.262}


def recipes(games: int = GAMES) -> tuple[Recipe, Recipe]:
    """The optimal games with their adversarial branches, and the suboptimal games (seeds disjoint)."""
    common = dict(mode=MODE, rule=RULE)
    return (Recipe("ilql_adversarial_optimal", "optimal", episodes=games, seed=0, branch_policy=BRANCH_POLICY,
                   branch_params=BRANCH_PARAMS, branch_at_turn=BRANCH_TURN, branches_per_turn=N_ADVERSARIAL,
                   branch_min_turns=MIN_TURNS, **common),
            Recipe("ilql_adversarial_suboptimal", "random_mixture", SUBOPTIMAL_PARAMS,
                   episodes=N_SUBOPTIMAL * games, seed=1_000_000, **common))


__all__ = ["BRANCH_PARAMS", "BRANCH_POLICY", "BRANCH_TURN", "GAMES", "MIN_TURNS", "MODE", "N_ADVERSARIAL",
           "N_SUBOPTIMAL", "PUBLISHED_MEANS", "PUBLISHED_SHARES", "RULE", "SUBOPTIMAL_PARAMS", "recipes"]
