"""The Section-5 pairs and the exact tabular solution they are checked against (``trainers.experiments.section5``).

``Draws`` draws the authors' ranking pairs once (``trainers.evaluation.q_rank``) for every row and for the tabular
solution; ``tabular_q`` solves implicit Q-learning exactly on the recorded games, a state being the game's history,
and ``tabular_prediction`` ranks the drawn pairs by it: what a learner of that expectile reaches when it tells every
state apart.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Sequence

import numpy as np

from rlds_lang.env import as_text

#: the two tests: at the initial state and at the branch states.
TESTS = ("initial", "branch")


@dataclasses.dataclass
class Draws:
    """The Section-5 pairs, drawn once (``trainers.evaluation.q_rank.draw_pairs``, seed 0) and read by every row and
    by the tabular solution: ``states[test]`` and ``pairs[test]`` for ``test`` in ``TESTS``."""

    states: dict[str, Any]
    pairs: dict[str, list[tuple[int, str, str]]]

    @classmethod
    def of(cls, games: Sequence[Any], draws: int, seed: int = 0) -> "Draws":
        """``draws`` pairs per test of ``games``."""
        from trainers.evaluation.q_rank import adversarial_ranking_states, draw_pairs

        states = adversarial_ranking_states(games)
        return cls(states, {test: draw_pairs(states[test], draws, seed) for test in TESTS})


def expectile(values: Sequence[float], tau: float, iterations: int = 200) -> float:
    """The ``tau``-expectile of ``values`` (``tau`` 0.5: their mean), the fixed point of the weighted mean with
    weight ``tau`` above it and ``1 - tau`` below.

    >>> round(expectile([-1.0] + [-4.0] * 10, 0.9), 3)
    -2.579
    """
    x = np.asarray(values, dtype=float)
    v = float(x.mean())
    for _ in range(iterations):
        w = np.where(x > v, tau, 1.0 - tau)
        v = float((w * x).sum() / w.sum())
    return v


def tabular_q(games: Sequence[Any], tau: float) -> dict[tuple, dict[str, float]]:
    """The exact tabular solution of implicit Q-learning on the games (``tau`` 0.5: the data's own values, what
    MC returns and SARSA learn): ``{state: {move: Q}}``, a state being the game's history (observation texts
    and moves) before a move. ``Q(s, a)`` is the mean over the games that made move ``a`` in ``s`` of its reward
    plus ``V`` of the state they reached; ``V(s)`` the ``tau``-expectile of ``Q(s, a)`` over the games' moves in
    ``s`` (undiscounted, ``V`` 0 at the end)."""
    paths = []
    for game in games:
        moves = game.steps[:-1]  # the last RLDS step holds the final observation, no move
        actions = [as_text(step["action"], "action") for step in moves]
        paths.append([(_state(([s["observation"] for s in moves[:k + 1]], actions[:k])), actions[k],
                       float(step["reward"])) for k, step in enumerate(moves)])
    q: dict[tuple, dict[str, float]] = {}
    depth = max((len(p) for p in paths), default=0)
    v: dict[tuple, float] = {}
    for k in reversed(range(depth)):  # deepest states first: V of every next state is known
        targets: dict[tuple, dict[str, list[float]]] = {}
        for path in paths:
            if k < len(path):
                state, move, reward = path[k]
                after = v.get(path[k + 1][0], 0.0) if k + 1 < len(path) else 0.0
                targets.setdefault(state, {}).setdefault(move, []).append(reward + after)
        for state, moves in targets.items():
            q[state] = {move: float(np.mean(values)) for move, values in moves.items()}
            v[state] = expectile([q[state][move] for move, values in moves.items() for _ in values], tau)
    return q


def tabular_prediction(games: Sequence[Any], tau: float, draws: Draws | None = None) -> dict[str, float]:
    """The two Section-5 fractions that ``tabular_q`` gives on the drawn pairs (``Draws``; those of ``games``, 1,000
    per test, unless given) and its Q of the optimal first guess: what a learner of that expectile can reach on these
    games when it tells every state apart. There a suboptimal first guess is worth its one game's return; a learned
    Q values these rarely seen guesses by what it generalises from all of them instead (in ``docs/section5.md``
    above their mean at tau 0.9 and 0.95)."""
    draws = draws or Draws.of(games, 1000)
    q = tabular_q(games, tau)
    out = {}
    for test in TESTS:
        histories = draws.states[test].histories
        wins = [q[_state(histories[i])][b] > q[_state(histories[i])][w] for i, b, w in draws.pairs[test]]
        out[test] = float(np.mean(wins)) if wins else float("nan")
    start = q[_state(draws.states["initial"].histories[0])]
    out["q_first"] = start[draws.pairs["initial"][0][1]]
    return out


def _state(history: tuple[Sequence[Mapping[str, Any]], Sequence[str]]) -> tuple:
    """The state a game is in before a move, as ``tabular_q`` keys it (``trainers.evaluation.q_rank.state_key``)."""
    from trainers.evaluation.q_rank import state_key

    return state_key((list(history[0]), list(history[1])))


__all__ = ["TESTS", "Draws", "expectile", "tabular_q", "tabular_prediction"]
