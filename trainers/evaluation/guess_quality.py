"""What an agent's Wordle guesses were, measured on its evaluated games: the share of its guesses that are words of
the answer list, and the share that are answers still consistent with all the feedback the agent had seen (the only
guesses that can win in ``adversarial_resample`` mode, where the hidden word is redrawn among those answers after
every guess).

The feedback of a game is not stored in an ``EvalResult``; ``guess_shares`` replays each game in a fresh environment
seeded as ``trainers.evaluation.wordle.evaluate`` seeded it (game ``i``: seed ``config.seed + i``, initial answer
``answers[i]``) with the recorded guesses, which reproduces every redraw, and checks that each replayed game ends
with the return the evaluation recorded (a clear error otherwise: the result does not come from its config).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rlds_lang.env import InvalidActionError
from rlds_lang.wordle import game
from rlds_lang.wordle.env import WordleEnv
from rlds_lang.wordle.policies import make_policy
from rlds_lang.wordle.words import resolve_word_list
from trainers.evaluation.wordle import EvalConfig, EvalResult, evaluate


@dataclasses.dataclass(frozen=True)
class GuessShares:
    """Counts of one agent's guesses over all its games (a rejected last guess included)."""

    #: guesses made.
    guesses: int
    #: guesses that are words of the answer list.
    on_answer_list: int
    #: guesses that are answers consistent with every (guess, colours) pair the game had shown before them.
    consistent: int

    @property
    def on_answer_list_share(self) -> float:
        """The share of the guesses on the answer list (NaN without guesses)."""
        return self.on_answer_list / self.guesses if self.guesses else float("nan")

    @property
    def consistent_share(self) -> float:
        """The share of the guesses that could have been the hidden word (NaN without guesses)."""
        return self.consistent / self.guesses if self.guesses else float("nan")


def consistent_with(word: str, history: list[tuple[str, tuple[int, ...]]], rule: game.Rule | str) -> bool:
    """Whether ``word``, were it the hidden word, would have coloured every guess of ``history`` as it was coloured.

    >>> consistent_with("crane", [("crate", (2, 2, 2, 0, 2))], "official")
    True
    >>> consistent_with("crate", [("crate", (2, 2, 2, 0, 2))], "official")
    False
    """
    return game.constraints_from_history(history, rule).allows(word)  # equal on answers (tests/test_wordle_game.py)


def guess_shares(result: EvalResult) -> GuessShares:
    """Counts ``result``'s guesses on the answer list and consistent with the feedback, replaying its games (see the
    module docstring); ``ValueError`` when the result holds no guesses per game or a replay ends with another return."""
    if len(result.actions) != result.games or len(result.answers) != result.games:
        raise ValueError(f"result {result.name!r} has no per-game guesses and answers to replay "
                         f"({len(result.actions)} and {len(result.answers)} for {result.games} games)")
    config = EvalConfig(**result.config)
    answers, guesses = resolve_word_list(config.answers), resolve_word_list(config.guesses)
    answer_set = set(answers.words)
    env = WordleEnv(answers=answers, guesses=guesses, rule=config.rule, mode=config.mode)
    made = on_list = consistent = 0
    for index, (answer, actions) in enumerate(zip(result.answers, result.actions)):
        env.seed(config.seed + index)
        env.set_next_answer(answer)
        env.reset()
        total, rejected = 0.0, False
        for action in actions:
            made += 1
            on_list += action in answer_set
            consistent += action in answer_set and consistent_with(action, env.history, env.rule)
            try:
                total += float(env.step(action).reward)
            except InvalidActionError:
                rejected = True
                break
        recorded = float(result.rewards[index])
        if rejected and recorded == -float(env.max_guesses) or not rejected and total == recorded:
            continue
        raise ValueError(f"game {index} of {result.name!r} replays to return {total:g}, but the evaluation "
                         f"recorded {recorded:g}: the result's config does not reproduce its games")
    return GuessShares(guesses=made, on_answer_list=on_list, consistent=consistent)


#: the scripted players whose win rates say how winnable a setting's games are: always a consistent answer, and the
#: ILQL authors' suboptimal data policy (``RandomMixturePolicy``: a consistent answer half the time, else any word).
REFERENCE_PLAYERS: dict[str, dict[str, Any]] = {
    "always a consistent answer": {"prob_smart": 1.0},
    "random mixture (prob_smart 0.5)": {"prob_smart": 0.5},
}


def mixture_player(config: EvalConfig, prob_smart: float) -> Any:
    """A ``RandomMixturePolicy`` on ``config``'s lists and rule: a consistent answer with probability ``prob_smart``,
    else any accepted word."""
    return make_policy("random_mixture", prob_smart=prob_smart, answers=config.answers, guesses=config.guesses,
                       rule=config.rule)


def reference_results(config: EvalConfig) -> list[EvalResult]:
    """``REFERENCE_PLAYERS`` played on ``config``'s games, named by their keys."""
    return [evaluate(mixture_player(config, **params), config, name=name, progress=False)
            for name, params in REFERENCE_PLAYERS.items()]


__all__ = ["GuessShares", "REFERENCE_PLAYERS", "consistent_with", "guess_shares", "mixture_player",
           "reference_results"]
