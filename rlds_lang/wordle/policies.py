"""The eight Wordle policies of the ILQL paper's codebase, as ``rlds_lang.env.Policy`` objects.

Every policy rebuilds the game state only from what the environment showed it (the ``feedback``
arrays of the observations) and its own previous guesses -- never from the environment's private
state. ``GameView.from_history`` (in ``rlds_lang.wordle.knowledge``, re-exported here) turns
``(observations, actions)`` into the feedback history and the indices of the answers still consistent
with it, using the vectorised ``FeedbackMatrix``.

Policies are seeded: ``reset(seed)`` makes a fresh ``numpy.random.Generator``, so a policy plays the
same guesses for the same seed and observations. They are picklable (the feedback matrix is dropped
from the pickled state and reloaded from the disk cache in the worker). ``params()`` is JSON-ready;
nested policies appear as ``{"name": ..., "params": ...}`` and ``make_policy`` rebuilds any policy
from its name and params.

Policies:

* ``UserPolicy`` -- a human at the terminal.
* ``StartWordPolicy`` -- a fixed first word, then another policy.
* ``OptimalPolicy`` -- myopic maximum information gain (expected entropy of the feedback pattern).
* ``RepeatPolicy`` -- repeats its own earlier guesses (bad on purpose).
* ``RandomMixturePolicy`` -- random consistent word with ``prob_smart``, else a random word.
* ``WrongPolicy`` -- random word inconsistent with the feedback (suboptimal on purpose).
* ``MixturePolicy`` -- each turn, one of two policies.
* ``MonteCarloPolicy`` -- picks among a base policy's proposals by simulated rollouts.

Example::

    from rlds_lang.env import run_episode
    from rlds_lang.wordle.env import WordleEnv
    from rlds_lang.wordle.policies import make_policy

    policy = make_policy("mixture", a={"name": "optimal", "params": {}},
                         b={"name": "random_mixture", "params": {"prob_smart": 0.5}}, prob_a=0.7)
    episode = run_episode(WordleEnv(), policy, seed=3)

Size: the eight policies and their registry (``POLICIES``, ``make_policy``) are one unit: the registry names
every class, the composite policies (start word, mixture, Monte Carlo) rebuild their nested policies through
it, and every policy derives from the one private base here; the README and the recorders import them all from
this module.
"""

from __future__ import annotations

import builtins
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from rlds_lang.env import Observation, Policy
from rlds_lang.wordle import game
from rlds_lang.wordle.engine import FeedbackMatrix
from rlds_lang.wordle.knowledge import GameView, WordleKnowledge, feedback_history, feedback_pattern_id
from rlds_lang.wordle.words import WORD_LENGTH, WordList

DEFAULT_MAX_GUESSES = 6


# best guess per (lists+rule key, pool, candidate set), shared by all OptimalPolicy instances of a process
_MOVES: dict[tuple[str, str, bytes], str] = {}
_MAX_MOVES = 200_000


def child_seed(seed: int, k: int) -> int:
    """A deterministic, well-mixed seed for sub-policy ``k`` of a policy reset with ``seed``."""
    return int(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, k]).generate_state(1)[0])


def policy_spec(policy: Policy) -> dict[str, Any]:
    """``{"name": ..., "params": ...}`` of a policy (used for nested policies in ``params()``)."""
    return {"name": policy.name, "params": dict(policy.params())}


class _WordlePolicy:
    """Base: seeded generator, word knowledge, pickling without the (large, reloadable) tables."""

    name = ""

    def __init__(self, answers: WordList | str = "official_answers", guesses: WordList | str = "official_guesses",
                 rule: game.Rule | str = game.Rule.OFFICIAL):
        self.knowledge = WordleKnowledge(answers, guesses, rule)
        self._rng = np.random.default_rng(0)

    def reset(self, seed: int) -> None:
        """Restarts the policy's randomness from ``seed``."""
        self._rng = np.random.default_rng(int(seed))

    def params(self) -> dict[str, Any]:
        return self.knowledge.params()

    def view(self, observations: Sequence[Observation], actions: Sequence[str]) -> GameView:
        """The game state from the observations and the policy's own actions."""
        return GameView.from_history(self.knowledge, observations, actions)

    def _random_guess(self) -> str:
        words = self.knowledge.guesses.words
        return words[int(self._rng.integers(len(words)))]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.params()})"


# ------------------------------------------------------------------------------------------------
# The policies.
# ------------------------------------------------------------------------------------------------
class UserPolicy(_WordlePolicy):
    """A human plays at the terminal: the board is printed as coloured squares and a guess is read.

    Invalid entries (not five letters, or not in the guess list) are refused with a message and asked
    again. ``input_fn``/``output_fn`` default to ``input``/``print`` and can be injected for tests.
    """

    name = "user"

    def __init__(self, input_fn: Callable[[str], str] | None = None, output_fn: Callable[[str], None] | None = None,
                 **lists: Any):
        super().__init__(**lists)
        self.input_fn = input_fn
        self.output_fn = output_fn

    def _out(self, text: str) -> None:
        (self.output_fn or builtins.print)(text)

    def board(self, history: Sequence[tuple[str, int]]) -> str:
        """The board so far, one ``squares GUESS`` line per guess."""
        lines = [f"{game.render(game.pattern_from_id(pid))}  {guess.upper()}" for guess, pid in history]
        return "\n".join(lines) if lines else "(no guesses yet)"

    def act(self, observations: Sequence[Observation], actions: Sequence[str]) -> str:
        history = feedback_history(observations, actions)
        self._out(self.board(history))
        read = self.input_fn or builtins.input
        while True:
            guess = read(f"guess {len(history) + 1}: ").strip().lower()
            if len(guess) != WORD_LENGTH or not guess.isascii() or not guess.isalpha():
                self._out(f"{guess!r} is not a valid guess: enter {WORD_LENGTH} letters a-z.")
            elif guess not in self.knowledge.guesses:
                self._out(f"{guess!r} is not a valid guess: it is not in the word list "
                          f"{self.knowledge.guesses.name!r}.")
            else:
                return guess


class StartWordPolicy:
    """Plays ``start_word`` as the first guess, then delegates every later turn to ``then``."""

    name = "start_word"

    def __init__(self, start_word: str, then: Policy):
        if len(start_word) != WORD_LENGTH or not start_word.isalpha():
            raise ValueError(f"start_word {start_word!r} is not a {WORD_LENGTH}-letter word")
        self.start_word = start_word.lower()
        self.then = then

    def reset(self, seed: int) -> None:
        self.then.reset(child_seed(seed, 0))

    def act(self, observations: Sequence[Observation], actions: Sequence[str]) -> str:
        return self.start_word if not actions else self.then.act(observations, actions)

    def params(self) -> dict[str, Any]:
        return {"start_word": self.start_word, "then": policy_spec(self.then)}


def _xlogx_sums(patterns_t_rows: np.ndarray, num_pool: int) -> np.ndarray:
    """``sum_k c_k log c_k`` per guess, where ``c_k`` counts the answers giving pattern ``k``.

    ``patterns_t_rows`` is ``(n_candidates, num_pool)``: the pattern of pool guess ``j`` for candidate
    ``i``. Counts come from one ``np.bincount`` over ``pattern + 243 * j``.
    """
    offsets = np.arange(num_pool, dtype=np.int64) * game.NUM_PATTERNS
    flat = (patterns_t_rows.astype(np.int64) + offsets[None, :]).ravel()
    counts = np.bincount(flat, minlength=num_pool * game.NUM_PATTERNS)
    nz = np.flatnonzero(counts > 1)  # c log c is 0 for c in {0, 1}
    c = counts[nz].astype(np.float64)
    return np.bincount(nz // game.NUM_PATTERNS, weights=c * np.log(c), minlength=num_pool)


class OptimalPolicy(_WordlePolicy):
    """Myopic maximum information gain ("optimal" in the ILQL paper's code).

    Each turn it picks the guess maximising the entropy of the colour-pattern distribution over the
    answers still consistent with the feedback (uniform prior): ``H = log n - sum_k c_k log c_k / n``.
    With two or fewer candidates left it guesses a candidate directly. Ties go to a word that is
    itself a consistent answer, then to the earlier word of the list. The first move depends only on
    the lists, rule and pool; every choice is memoised per process by candidate set.

    Args:
      guess_pool: ``"all"`` (default) scores every word of the guess list; ``"consistent"`` scores only
        the consistent answers (a hard-mode-like player). Measured on the official lists with the
        official rule in fixed mode (``bench/wordle_engine.py``), ``"all"`` wins all 2,315 games while
        ``"consistent"`` loses 11 (traps such as the ``_atch``/``_ight`` families), hence the default.
    """

    name = "optimal"
    POOLS = ("all", "consistent")

    def __init__(self, guess_pool: str = "all", **lists: Any):
        super().__init__(**lists)
        if guess_pool not in self.POOLS:
            raise ValueError(f"guess_pool must be one of {self.POOLS}, got {guess_pool!r}")
        self.guess_pool = guess_pool

    def params(self) -> dict[str, Any]:
        return {**super().params(), "guess_pool": self.guess_pool}

    def act(self, observations: Sequence[Observation], actions: Sequence[str]) -> str:
        view = self.view(observations, actions)
        return self.best_guess(view.candidates)

    def best_guess(self, candidates: np.ndarray) -> str:
        """The highest-entropy guess for these consistent answer indices."""
        k = self.knowledge
        if len(candidates) <= 2:
            return k.answers.words[int(candidates[0])]
        # The choice depends only on the candidate set (no randomness): memoise it per process, so games
        # that share a feedback prefix (every game shares the first move) pay for each state once.
        cache_key = (FeedbackMatrix.key(k.guesses, k.answers, k.rule), self.guess_pool,
                     np.asarray(candidates, dtype=np.int64).tobytes())
        if cache_key in _MOVES:
            return _MOVES[cache_key]
        t = k.tables
        sub = t.patterns_t[candidates]  # (n, n_guesses)
        if self.guess_pool == "consistent":
            pool = t.answer_rows[candidates]
            sub = sub[:, pool]
        else:
            pool = np.arange(len(k.guesses))
        # Maximising entropy == minimising sum c log c (n is fixed).
        score = _xlogx_sums(sub, len(pool))
        is_candidate = np.zeros(len(k.guesses), dtype=bool)
        is_candidate[t.answer_rows[candidates]] = True
        best = score.min()
        tied = np.flatnonzero(score <= best + 1e-9 * max(1.0, abs(best)))
        preferred = tied[is_candidate[pool[tied]]]
        choice = int(pool[preferred[0] if len(preferred) else tied[0]])
        word = k.guesses.words[choice]
        if len(_MOVES) >= _MAX_MOVES:
            _MOVES.clear()
        _MOVES[cache_key] = word
        return word


class RepeatPolicy(_WordlePolicy):
    """A bad policy: a random first word, then always one of the game's previous guesses (at random), or of its first
    ``first_n`` guesses when ``first_n`` is given (the ILQL code's ``RepeatPolicy(first_n)``, src/wordle/policy.py:86-99:
    ``random.choice(action_history[:first_n])``; its Section-5 data takes over an optimal game with ``first_n=2``)."""

    name = "repeat"

    def __init__(self, first_n: int | None = None, **lists: Any):
        super().__init__(**lists)
        if first_n is not None and first_n < 1:
            raise ValueError(f"RepeatPolicy: first_n must be >= 1 or None, got {first_n}")
        self.first_n = first_n

    def params(self) -> dict[str, Any]:
        return {**super().params(), "first_n": self.first_n}

    def act(self, observations: Sequence[Observation], actions: Sequence[str]) -> str:
        feedback_history(observations, actions)  # validates the inputs
        if not actions:
            return self._random_guess()
        pool = actions if self.first_n is None else actions[:self.first_n]
        return str(pool[int(self._rng.integers(len(pool)))])


class RandomMixturePolicy(_WordlePolicy):
    """With probability ``prob_smart`` a random answer consistent with the feedback, else any random word."""

    name = "random_mixture"

    def __init__(self, prob_smart: float = 0.5, **lists: Any):
        super().__init__(**lists)
        if not 0.0 <= prob_smart <= 1.0:
            raise ValueError(f"prob_smart must be in [0, 1], got {prob_smart}")
        self.prob_smart = float(prob_smart)

    def params(self) -> dict[str, Any]:
        return {**super().params(), "prob_smart": self.prob_smart}

    def act(self, observations: Sequence[Observation], actions: Sequence[str]) -> str:
        view = self.view(observations, actions)
        if self._rng.random() < self.prob_smart:
            return self.knowledge.answers.words[int(self._rng.choice(view.candidates))]
        return self._random_guess()

    def distribution(self, observations: Sequence[Observation], actions: Sequence[str]) -> np.ndarray:
        """The probability that ``act`` returns each word of the guess list in this state: ``(1 - prob_smart) /
        |guesses|``, plus ``prob_smart / |candidates|`` for a consistent answer (it sums to less than 1 only when
        consistent answers lie outside the guess list)."""
        guesses = self.knowledge.guesses.words
        candidates = self._candidate_words(observations, actions)
        p = np.full(len(guesses), (1.0 - self.prob_smart) / len(guesses))
        p[[i for i, word in enumerate(guesses) if word in candidates]] += self.prob_smart / len(candidates)
        return p

    def probability(self, observations: Sequence[Observation], actions: Sequence[str], action: str) -> float:
        """The probability that ``act`` returns ``action`` in this state (``distribution``'s entry for a guess-list
        word). Its mean ``-log`` over a policy's own games is the lowest loss behaviour cloning of its data can reach."""
        guesses = list(self.knowledge.guesses.words)
        if action in guesses:
            return float(self.distribution(observations, actions)[guesses.index(action)])
        candidates = self._candidate_words(observations, actions)
        return self.prob_smart / len(candidates) if action in candidates else 0.0

    def _candidate_words(self, observations: Sequence[Observation], actions: Sequence[str]) -> set[str]:
        """The answers consistent with the feedback so far: what the smart half of ``act`` draws from."""
        return {self.knowledge.answers.words[int(i)] for i in self.view(observations, actions).candidates}


class WrongPolicy(_WordlePolicy):
    """A suboptimal policy: a random word of the guess list that is *not* consistent with the feedback.

    "Consistent" means the word, were it the answer, would have produced every feedback seen. Before
    the first guess every word is consistent, so the first guess is any random word. After a
    non-winning guess the set of inconsistent words is never empty (it holds that guess).
    """

    name = "wrong"

    def act(self, observations: Sequence[Observation], actions: Sequence[str]) -> str:
        history = feedback_history(observations, actions)
        if not history:
            return self._random_guess()
        wrong = np.flatnonzero(~self.knowledge.consistent_guess_mask(history))
        if len(wrong) == 0:  # only possible after an all-green feedback (the game is over)
            return self._random_guess()
        return self.knowledge.guesses.words[int(self._rng.choice(wrong))]


class MixturePolicy:
    """Each turn delegates to ``a`` with probability ``prob_a``, else to ``b``; both are reset."""

    name = "mixture"

    def __init__(self, a: Policy, b: Policy, prob_a: float = 0.5):
        if not 0.0 <= prob_a <= 1.0:
            raise ValueError(f"prob_a must be in [0, 1], got {prob_a}")
        self.a, self.b, self.prob_a = a, b, float(prob_a)
        self._rng = np.random.default_rng(0)

    def reset(self, seed: int) -> None:
        self._rng = np.random.default_rng(child_seed(seed, 0))
        self.a.reset(child_seed(seed, 1))
        self.b.reset(child_seed(seed, 2))

    def act(self, observations: Sequence[Observation], actions: Sequence[str]) -> str:
        chosen = self.a if self._rng.random() < self.prob_a else self.b
        return chosen.act(observations, actions)

    def params(self) -> dict[str, Any]:
        return {"a": policy_spec(self.a), "b": policy_spec(self.b), "prob_a": self.prob_a}


class MonteCarloPolicy(_WordlePolicy):
    """Chooses among ``n_samples`` guesses proposed by ``base`` by their Monte-Carlo estimated return.

    For each distinct proposal, ``n_rollouts`` games are simulated: a hidden word is drawn uniformly
    from the answers consistent with the feedback, the proposal is scored against it, and ``rollout``
    plays on (reward -1 per non-winning guess, 0 for the win, at most ``max_guesses`` guesses in all).
    The proposal with the highest mean return wins (ties: the earliest proposed). Rollouts keep the
    hidden word fixed, which is exact in ``fixed`` mode and an approximation in ``adversarial_resample``.
    """

    name = "monte_carlo"

    def __init__(self, base: Policy, rollout: Policy, n_samples: int = 4, n_rollouts: int = 8,
                 max_guesses: int = DEFAULT_MAX_GUESSES, **lists: Any):
        super().__init__(**lists)
        if n_samples < 1 or n_rollouts < 1:
            raise ValueError(f"n_samples and n_rollouts must be >= 1, got {n_samples} and {n_rollouts}")
        self.base, self.rollout = base, rollout
        self.n_samples, self.n_rollouts, self.max_guesses = int(n_samples), int(n_rollouts), int(max_guesses)

    def reset(self, seed: int) -> None:
        self._rng = np.random.default_rng(child_seed(seed, 0))
        self.base.reset(child_seed(seed, 1))
        self.rollout.reset(child_seed(seed, 2))

    def params(self) -> dict[str, Any]:
        return {**super().params(), "base": policy_spec(self.base), "rollout": policy_spec(self.rollout),
                "n_samples": self.n_samples, "n_rollouts": self.n_rollouts, "max_guesses": self.max_guesses}

    def act(self, observations: Sequence[Observation], actions: Sequence[str]) -> str:
        view = self.view(observations, actions)
        proposals = list(dict.fromkeys(self.base.act(observations, actions) for _ in range(self.n_samples)))
        if len(proposals) == 1:
            return proposals[0]
        values = [self.estimate(proposal, observations, actions, view) for proposal in proposals]
        return proposals[int(np.argmax(values))]

    def estimate(self, proposal: str, observations: Sequence[Observation], actions: Sequence[str],
                 view: GameView) -> float:
        """Mean simulated return of guessing ``proposal`` now and following ``rollout`` afterwards."""
        answers = self.knowledge.answers.words
        total = 0.0
        for _ in range(self.n_rollouts):
            hidden = answers[int(self._rng.choice(view.candidates))]
            obs, acts = list(observations), list(actions)
            guess, ret = proposal, 0.0
            while True:
                acts.append(guess)
                pattern = self.knowledge.pattern(guess, hidden)
                obs.append({"text": game.render(pattern), "feedback": np.asarray(pattern, np.int8),
                            "turn": np.int32(len(acts))})
                if guess == hidden:
                    break
                ret -= 1.0
                if len(acts) >= self.max_guesses:
                    break
                guess = self.rollout.act(obs, acts)
            total += ret
        return total / self.n_rollouts


# ------------------------------------------------------------------------------------------------
# Registry.
# ------------------------------------------------------------------------------------------------
POLICIES: dict[str, type] = {
    cls.name: cls for cls in (UserPolicy, StartWordPolicy, OptimalPolicy, RepeatPolicy, RandomMixturePolicy,
                              WrongPolicy, MixturePolicy, MonteCarloPolicy)
}
_NESTED = {"then", "a", "b", "base", "rollout"}


def _as_policy(value: Any) -> Policy:
    if isinstance(value, Mapping):
        if "name" not in value:
            raise ValueError(f"a nested policy spec needs a 'name': {dict(value)!r}")
        return make_policy(value["name"], **dict(value.get("params", {})))
    if isinstance(value, str):
        return make_policy(value)
    return value


def make_policy(name: str, **params: Any) -> Policy:
    """A policy from its registry name and parameters (as returned by ``params()``).

    Nested policies (``then``, ``a``, ``b``, ``base``, ``rollout``) may be given as policy objects,
    ``{"name": ..., "params": ...}`` dicts or bare names.
    """
    if name not in POLICIES:
        raise ValueError(f"unknown Wordle policy {name!r}; expected one of {sorted(POLICIES)}")
    kwargs = {k: (_as_policy(v) if k in _NESTED else v) for k, v in params.items()}
    return POLICIES[name](**kwargs)


__all__ = [
    "GameView", "MixturePolicy", "MonteCarloPolicy", "OptimalPolicy", "POLICIES", "RandomMixturePolicy",
    "RepeatPolicy", "StartWordPolicy", "UserPolicy", "WordleKnowledge", "WrongPolicy", "feedback_history",
    "child_seed", "feedback_pattern_id", "make_policy", "policy_spec",
]
