"""LMRL-Gym's Wordle setting (Abdulhaim et al., arXiv 2311.18232) as named, reusable configuration.

The setting: guesses = answers = LMRL-Gym's 431-word list (shipped with its MIT licence,
``rlds_lang/wordle/data/lmrl_gym/``, list name ``lmrl_gym``); the ILQL code's colouring rule (``ilql``: a
non-green letter found anywhere in the answer is yellow); the hidden word redrawn every turn among the
words consistent with the feedback (``adversarial_resample``); reward -1 per guess that is not the win, 0 for
the win; 6 guesses. Its data come from a random-mixture behaviour policy that guesses a uniformly random list
word with probability 0.66 and otherwise a random word consistent with the feedback -- our
``RandomMixturePolicy`` with ``prob_smart = 1 - 0.66``. The upper bound is a scripted policy: our
``OptimalPolicy`` (myopic maximum information gain) restricted to the list.

The published figures (``PUBLISHED_*``) are LMRL-Gym's table as quoted in ``shared/REFERENCE_TASKS.md``;
``normalised_score`` is its normalisation. No recording and no TensorFlow here: the builder config
``wordle_synthetic/lmrl_gym`` records ``RECIPES``, ``trainers.experiments.lmrl_gym.setting`` measures and compares.

Example::

    from rlds_lang.env import run_episode
    from rlds_lang.wordle import lmrl_gym

    episode = run_episode(lmrl_gym.make_env(), lmrl_gym.behaviour_policy(), seed=3)
    print(episode.total_reward, lmrl_gym.normalised_score(-2.0, dataset_mean=-4.12, scripted=-1.94))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where they are built: the setting's constants alone import nothing (configs' defaults)
    from rlds_lang.wordle.env import WordleEnv
    from rlds_lang.wordle.policies import OptimalPolicy, RandomMixturePolicy
    from rlds_lang.wordle.recipes import Recipe

#: the word list (guesses and answers), by its shipped name (``rlds_lang.wordle.words.lmrl_gym_words``).
WORDS = "lmrl_gym"
#: the colouring rule of the ILQL code, which LMRL-Gym's Wordle uses.
RULE = "ilql"
#: the hidden word is redrawn every turn among the words consistent with the feedback.
MODE = "adversarial_resample"
#: the behaviour policy's probability of a uniformly random list word (else a random consistent word).
PROB_RANDOM_WORD = 0.66
#: the worst return (six wrong guesses): the bottom of the normalisation.
MIN_RETURN = -6.0
#: games of the published dataset: training and evaluation splits.
TRAIN_GAMES, EVAL_GAMES = 1_000_000, 100_000
#: games per recorded shard of the builder config ``wordle_synthetic/lmrl_gym``: its unit of work and of resuming.
SHARD_SIZE = 1000
#: evaluation games per agent in LMRL-Gym.
PUBLISHED_EVAL_GAMES = 4096
#: the published dataset's mean return, success rate and mean length (guesses per game).
PUBLISHED_DATASET = {"mean_return": -4.12, "success_rate": 0.70, "mean_length": 4.82}
#: the published scripted policy's mean return (the normalisation's maximum).
PUBLISHED_SCRIPTED = -1.94
#: the published table: method -> (raw mean return, normalised score).
PUBLISHED_TABLE: dict[str, tuple[float, float]] = {
    "BC": (-2.81, 79.9), "%BC (top 30%)": (-2.85, 79.1), "MC returns": (-2.16, 94.9), "ILQL": (-2.04, 97.7),
    "online PPO": (-2.63, 84.2), "online %BC": (-2.15, 95.2), "GPT-4 (prompted)": (-5.42, 15.4),
}
#: LMRL-Gym's unrounded mean returns of the rows its ``llm_rl_scripts/wordle/load_results.py`` normalises
#: (lines 76-80), by our row names: the published table's raw column is these, rounded.
LOAD_RESULTS_RETURNS: dict[str, float] = {"BC": -2.814208984375, "%BC (top 30%)": -2.849609375,
                                          "online PPO": -2.62646484375, "ILQL": -2.035400390625,
                                          "MC returns": -2.159912109375}
#: the dataset mean and scripted return LMRL-Gym's ``load_results.py`` normalises with (lines 82-86:
#: ``((R + 4.121715) / (4.121715 - 1.935)) * 50 + 50``): they, not the rounded ``PUBLISHED_DATASET`` and
#: ``PUBLISHED_SCRIPTED``, give its published normalised scores (BC's 79.9 from -2.8142).
LOAD_RESULTS_DATASET_MEAN, LOAD_RESULTS_SCRIPTED = -4.121715, -1.935
#: %BC's kept fraction in LMRL-Gym (top 30% of the games by return).
PCT_BC_FRACTION = 0.30
#: seeds of the recipes: the evaluation split's games never share a seed with the training split's.
TRAIN_SEED, EVAL_SEED = 0, 10_000_000


def env_kwargs() -> dict[str, Any]:
    """``WordleEnv`` keyword arguments of the setting (lists, rule, mode)."""
    return {"answers": WORDS, "guesses": WORDS, "rule": RULE, "mode": MODE}


def make_env(seed: int = 0) -> WordleEnv:
    """The setting's environment."""
    from rlds_lang.wordle.env import WordleEnv

    return WordleEnv(seed=seed, **env_kwargs())


def behaviour_policy() -> RandomMixturePolicy:
    """LMRL-Gym's data policy: a uniformly random list word with probability 0.66, else a random consistent word."""
    from rlds_lang.wordle.policies import RandomMixturePolicy

    return RandomMixturePolicy(prob_smart=1.0 - PROB_RANDOM_WORD, answers=WORDS, guesses=WORDS, rule=RULE)


def scripted_policy() -> OptimalPolicy:
    """The scripted upper bound: ``OptimalPolicy`` choosing among the list's words only."""
    from rlds_lang.wordle.policies import OptimalPolicy

    return OptimalPolicy(answers=WORDS, guesses=WORDS, rule=RULE)


def recipe(split: str, episodes: int | None = None) -> Recipe:
    """The recording recipe of a split (``train`` or ``eval``) of the behaviour policy's games."""
    from rlds_lang.wordle.recipes import Recipe

    if split not in ("train", "eval"):
        raise ValueError(f"split must be 'train' or 'eval', got {split!r}")
    size, seed = (TRAIN_GAMES, TRAIN_SEED) if split == "train" else (EVAL_GAMES, EVAL_SEED)
    return Recipe(f"lmrl_gym_{split}", "random_mixture", f'{{"prob_smart": {1.0 - PROB_RANDOM_WORD:.2f}}}',
                  episodes=size if episodes is None else episodes, mode=MODE, rule=RULE, answers=WORDS, guesses=WORDS,
                  seed=seed)


def published_return(name: str) -> float:
    """LMRL-Gym's mean return of its row ``name``: ``load_results.py``'s unrounded value where it has one, else the
    published table's (rounded to 0.01).

    >>> published_return("BC"), published_return("GPT-4 (prompted)")
    (-2.814208984375, -5.42)
    """
    return LOAD_RESULTS_RETURNS.get(name, PUBLISHED_TABLE[name][0])


def published_normalised(name: str) -> float:
    """LMRL-Gym's normalised score of its row ``name``, computed as its ``load_results.py`` computes it: the unrounded
    return (``LOAD_RESULTS_RETURNS``) with its constants (``LOAD_RESULTS_DATASET_MEAN``, ``LOAD_RESULTS_SCRIPTED``).
    A row ``load_results.py`` does not hold (online %BC, GPT-4) keeps the published score: its return is known only
    to 0.01 (online %BC's -2.15 would give 95.1 against the published 95.2).

    >>> round(published_normalised("BC"), 1), round(published_normalised("ILQL"), 1), published_normalised("online %BC")
    (79.9, 97.7, 95.2)
    """
    if name not in LOAD_RESULTS_RETURNS:
        return PUBLISHED_TABLE[name][1]
    return normalised_score(LOAD_RESULTS_RETURNS[name], LOAD_RESULTS_DATASET_MEAN, LOAD_RESULTS_SCRIPTED)


def normalised_score(mean_return: float, dataset_mean: float, scripted: float, minimum: float = MIN_RETURN) -> float:
    """LMRL-Gym's normalised score: ``50 + 50 (R - avg) / (max - avg)`` at or above the dataset's mean return
    ``avg``, ``50 (R - min) / (avg - min)`` below it, with ``max`` the scripted policy's return.

    >>> round(normalised_score(-2.04, dataset_mean=-4.12, scripted=-1.94), 1)
    97.7
    """
    if not minimum < dataset_mean < scripted:
        raise ValueError(f"need min < dataset mean < scripted, got {minimum}, {dataset_mean}, {scripted}")
    if mean_return >= dataset_mean:
        return 50.0 + 50.0 * (mean_return - dataset_mean) / (scripted - dataset_mean)
    return 50.0 * (mean_return - minimum) / (dataset_mean - minimum)
