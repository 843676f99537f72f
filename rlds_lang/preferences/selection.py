"""Which pairs of clips to ask about, and how often.

``PairSelector`` draws pairs of two different clips never asked before (in either order: ``pair_key``).
``method="random"`` takes them as drawn; ``method="disagreement"`` draws ``candidates`` unasked pairs per
query, scores them with an injected ``disagreement(pairs) -> np.ndarray`` (one score per pair, e.g.
``trainers.algorithms.reward.model.RewardModel.disagreement``: the std over ensemble members of P(left > right)) and
keeps the most disagreed -- the paper's choice ("select those trajectories for which the predictions have
the highest variance across ensemble members", arXiv 1706.03741 section 2.2.4).

``QuerySchedule`` says how many queries are due as environment steps go by. The paper (appendix A, as we
recall it; the exact wording was not checked against the text) lowers the labelling rate over training,
roughly proportionally to ``T0 / (T0 + T)`` after ``T`` environment steps (``T0`` = 2e6 steps for MuJoCo,
5e6 for Atari). We use ``rate(t) = rate_0 * T0 / (T0 + t)`` queries per step, and the number of
queries due by step ``t`` is its integral ``rate_0 * T0 * ln(1 + t / T0)``, so queries are spread
deterministically; ``T0=None`` keeps the rate constant.

Example::

    selector = PairSelector("disagreement", disagreement=model.disagreement, seed=0)
    for pair in selector.select(clips, n=schedule.advance(steps_done)):
        judgement = judge(labeller, pair.left, pair.right, pair.selection, pair.disagreement)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Iterable, Sequence

import numpy as np

from rlds_lang.preferences.defaults import CANDIDATES_PER_QUERY
from rlds_lang.preferences.types import Clip

#: scores pairs of clips, one float per pair; higher = more worth asking.
Disagreement = Callable[[Sequence[tuple[Clip, Clip]]], np.ndarray]

METHODS = ("random", "disagreement")


def pair_key(a: str | Clip, b: str | Clip) -> tuple[str, str]:
    """The unordered key of a pair of clips (or clip ids): the same in both orders."""
    x = a.clip_id if isinstance(a, Clip) else str(a)
    y = b.clip_id if isinstance(b, Clip) else str(b)
    return (x, y) if x <= y else (y, x)


@dataclasses.dataclass
class SelectedPair:
    """A pair to ask about, with how it was chosen and its disagreement score (0 for random)."""

    left: Clip
    right: Clip
    selection: str
    disagreement: float = 0.0


class PairSelector:
    """Chooses unasked pairs (module docstring).

    Args:
      method: ``random`` or ``disagreement``.
      disagreement: the scoring callable (required for ``disagreement``; may be set later, e.g. once the
        first reward model exists -- until then ``disagreement`` falls back to random, recorded as such).
      candidates: candidate pairs drawn per query for ``disagreement``.
      seed: seed of the draws.
      max_draws: attempts per wanted pair before concluding that no unasked pair is left.
    """

    def __init__(self, method: str = "random", disagreement: Disagreement | None = None,
                 candidates: int = CANDIDATES_PER_QUERY, seed: int = 0, max_draws: int = 50):
        if method not in METHODS:
            raise ValueError(f"pair selection method {method!r} is not one of {METHODS}")
        if candidates < 1:
            raise ValueError(f"candidates must be >= 1, got {candidates}")
        self.method, self.disagreement, self.candidates = method, disagreement, int(candidates)
        self.max_draws = int(max_draws)
        self.asked: set[tuple[str, str]] = set()
        self._rng = np.random.default_rng(seed)

    def mark_asked(self, pairs: Iterable[tuple[str | Clip, str | Clip]]) -> None:
        """Records pairs as asked (e.g. those of a saved database), so they are never chosen again."""
        self.asked.update(pair_key(a, b) for a, b in pairs)

    def _draw(self, clips: Sequence[Clip], n: int, exclude: set[tuple[str, str]]) -> list[tuple[Clip, Clip]]:
        """Up to ``n`` distinct random pairs of different clips, none in ``exclude`` nor asked."""
        out: list[tuple[Clip, Clip]] = []
        seen = set(exclude)
        if len(clips) < 2:
            return out
        for _ in range(n * self.max_draws):
            if len(out) == n:
                break
            i, j = self._rng.choice(len(clips), size=2, replace=False)
            key = pair_key(clips[i], clips[j])
            if key[0] == key[1] or key in seen or key in self.asked:
                continue
            seen.add(key)
            out.append((clips[i], clips[j]))
        return out

    def select(self, clips: Sequence[Clip], n: int = 1) -> list[SelectedPair]:
        """``n`` pairs to ask about (fewer when fewer unasked pairs are found); they are marked asked."""
        if n <= 0:
            return []
        if self.method == "disagreement" and self.disagreement is not None:
            candidates = self._draw(clips, n * self.candidates, set())
            if not candidates:
                return []
            scores = np.asarray(self.disagreement(candidates), dtype=np.float64).reshape(-1)
            if scores.shape[0] != len(candidates):
                raise ValueError(f"disagreement returned {scores.shape[0]} scores for {len(candidates)} pairs")
            order = np.argsort(-scores, kind="stable")[:n]
            chosen = [SelectedPair(*candidates[k], "disagreement", float(scores[k])) for k in order]
        else:
            chosen = [SelectedPair(a, b, "random") for a, b in self._draw(clips, n, set())]
        self.mark_asked((p.left, p.right) for p in chosen)
        return chosen


class QuerySchedule:
    """How many queries are due as environment steps pass: ``rate(t) = rate_0 * T0 / (T0 + t)`` (module docstring).

    Args:
      rate: queries per environment step at the start (``rate_0``).
      timescale: ``T0`` in environment steps; ``None`` keeps the rate constant.
      initial: queries due at step 0 (e.g. the initial preferences asked before training).
    """

    def __init__(self, rate: float, timescale: float | None = None, initial: int = 0):
        if rate < 0 or (timescale is not None and timescale <= 0):
            raise ValueError(f"need rate >= 0 and timescale > 0 (or None), got rate={rate}, timescale={timescale}")
        self.rate, self.timescale, self.initial = float(rate), timescale, int(initial)
        self.steps = 0
        self.issued = 0

    def rate_at(self, t: float) -> float:
        """Queries per environment step after ``t`` steps."""
        return self.rate if self.timescale is None else self.rate * self.timescale / (self.timescale + t)

    def due_by(self, t: float) -> float:
        """Queries due in total by step ``t`` (the integral of the rate, plus the initial ones)."""
        if self.timescale is None:
            return self.initial + self.rate * t
        return self.initial + self.rate * self.timescale * math.log1p(t / self.timescale)

    def advance(self, steps: int) -> int:
        """Moves ``steps`` environment steps on; returns how many new queries are now due."""
        self.steps += int(steps)
        new = int(math.floor(self.due_by(self.steps) + 1e-9)) - self.issued
        self.issued += new
        return new


__all__ = ["Disagreement", "METHODS", "PairSelector", "QuerySchedule", "SelectedPair", "pair_key"]
