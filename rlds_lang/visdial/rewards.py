"""Visual Dialogue rewards as published: guesser scores, yes/no penalties, and the three episode modes.

Guesser scores (what the server computes after each round; ``../shared/REFERENCE_TASKS.md``):

- percentile rank: ``p_t = 1 - rank_t / pool_size``, ``rank_t`` the 1-based rank of the true image among
  the pool by squared distance to the predicted feature. The reference describes the pool as "the true
  image + all val images", which counts a val image twice when it is itself the true image; here the
  pool is the val images plus the true image *only when it is not one of them* (``true_index`` says
  where it is), so every image is counted once. Ties are resolved in favour of the true image.
- distance: ``d_t`` = mean squared error between predicted and true feature.
The per-round signal is the change: ``p_t - p_{t-1}`` (percentile) or ``d_{t-1} - d_t`` (distance); with
an empty history the score itself (``p_0`` / ``d_0``). Reward caches hold ``[v0, d1..d10]`` of these.

Yes/no penalty ``yn_reward`` (default -2.0) on the lower-cased answer (``is_yes_no``): kind ``none``
never; ``hard`` the answer is exactly "yes" or "no"; ``soft`` "yes" or "no" is a substring;
``conservative`` any of ``CONSERVATIVE_MARKERS`` is a substring.

Modes (``DialogueScorer``, one per episode):

- ``10_stop``: always ``max_rounds`` (10) rounds; answer i earns ``delta_i * scale + shift``; no penalty.
- ``env_stops``: the episode ends at the first answer where the cutoff rule fires
  (``(p_t - p_0) / (goal - p_0) >= fraction``, goal 1.0, fraction 0.5; when ``p_0 >= goal`` the guesser is
  already there and the rule fires at once), else after ``max_rounds``. A non-final answer earns -1, the
  final one 0, each plus ``yn_reward`` when the answer matches the kind; then ``* scale + shift``. The
  cutoff needs percentile scores whatever ``reward_kind`` says.
- ``agent_stops``: the agent ends the episode with an action containing ``STOP`` (reward 0); answers earn
  as in ``10_stop``; the episode also ends after ``max_rounds`` answers, as in the reference code (so a
  dataset's prefixes of 0..9 rounds end with ``STOP`` and the 10-round one without).

Checked against the public reference code (ILQL ``visdial_base.py`` / ``visdial_env.py`` and the
visdial-rl ``serve_model.py``): the formulas above are theirs; where ours differ it is said here. The
reference *datasets* apply ``reward_scale``/``reward_shift`` only to cache values (10_stop, agent_stops),
its *environment* also to env_stops rewards and to ``STOP`` (``0 * scale + shift``); we apply them to every
answer reward in both and give ``STOP`` 0 (identical under the published defaults scale 1, shift 0).
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

YN_KINDS = ("none", "hard", "soft", "conservative")
MODES = ("env_stops", "agent_stops", "10_stop")
REWARD_KINDS = ("rank", "distance")
STOP = "<stop>"
#: substrings that make an answer "conservative y/n" (the paper's list, both apostrophes).
CONSERVATIVE_MARKERS = ("not", "don't", "can't", "don’t", "can’t", "cannot", "fairly", "could", "think so", "okay",
                        "maybe", "yes", "no", "looks", "appears", "tell", "mostly just")


def is_yes_no(answer: str, kind: str) -> bool:
    """Whether ``answer`` (lower-cased here) draws the yes/no penalty of ``kind``."""
    text = answer.lower()
    if kind == "none":
        return False
    if kind == "hard":
        return text in ("yes", "no")
    if kind == "soft":
        return "yes" in text or "no" in text
    if kind == "conservative":
        return any(m in text for m in CONSERVATIVE_MARKERS)
    raise ValueError(f"unknown yn kind {kind!r}; expected one of {YN_KINDS}")


def percentile_score(predicted: np.ndarray, true: np.ndarray, pool: np.ndarray, true_index: int | None = None) -> float:
    """``1 - rank / pool_size`` of the true image (see the module docstring for the pool)."""
    predicted = np.asarray(predicted, np.float64)
    dists = ((np.asarray(pool, np.float64) - predicted) ** 2).sum(axis=1)
    true_dist = float(((np.asarray(true, np.float64) - predicted) ** 2).sum())
    return percentile_from_distances(dists, true_dist, true_index)


def percentile_from_distances(dists: np.ndarray, true_dist: float, true_index: int | None = None,
                              published_pool: bool = False) -> float:
    """``1 - rank / pool_size`` from the pool's squared distances to the prediction and the true image's;
    ``true_index`` is the true image's row in the pool (``None``: it is not in the pool and is added).

    ``published_pool=True`` reproduces the reference server: the true image is prepended to *every* pool
    row, so a val image is in its own pool twice (its copy ties with it and is ranked after it here;
    the reference's unstable argsort leaves such ties unspecified) and the pool size is ``len(dists) + 1``.
    """
    if published_pool:
        true_index = None
    others = np.delete(dists, true_index) if true_index is not None else dists
    rank = 1 + int((others < true_dist).sum())
    return 1.0 - rank / (len(others) + 1)


def distance_score(predicted: np.ndarray, true: np.ndarray) -> float:
    """Mean squared error between predicted and true feature."""
    diff = np.asarray(predicted, np.float64) - np.asarray(true, np.float64)
    return float((diff ** 2).mean())


def score_change(kind: str, previous: float, current: float) -> float:
    """The per-round signal: ``current - previous`` for percentile, ``previous - current`` for distance."""
    if kind == "rank":
        return current - previous
    if kind == "distance":
        return previous - current
    raise ValueError(f"unknown reward kind {kind!r}; expected one of {REWARD_KINDS}")


def cutoff_fired(p0: float, pt: float, goal: float = 1.0, fraction: float = 0.5) -> bool:
    """The percentile(goal, fraction) rule: ``(pt - p0) / (goal - p0) >= fraction``; ``p0 >= goal`` fires."""
    if goal - p0 <= 0:
        return True
    return (pt - p0) / (goal - p0) >= fraction


@dataclasses.dataclass(frozen=True)
class RewardConfig:
    """How an episode is scored and when it ends (the builder's config fields, the environment's arguments).

    Attributes:
      mode: one of ``MODES``.
      reward_kind: ``rank`` (percentile, cache 1, the paper's) or ``distance`` (cache 2) for the per-answer
        rewards of ``10_stop`` / ``agent_stops``; ``env_stops`` always uses percentile for its cutoff.
      yn_kind: one of ``YN_KINDS`` (``env_stops`` only).
      yn_reward: the yes/no penalty (published default -2.0).
      reward_scale, reward_shift: ``reward * scale + shift`` (published defaults 1, 0).
      goal, fraction: the cutoff rule of ``env_stops`` (published 1.0, 0.5).
      max_rounds: rounds of a full dialogue (10).
    """

    mode: str = "env_stops"
    reward_kind: str = "rank"
    yn_kind: str = "none"
    yn_reward: float = -2.0
    reward_scale: float = 1.0
    reward_shift: float = 0.0
    goal: float = 1.0
    fraction: float = 0.5
    max_rounds: int = 10

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; expected one of {MODES}")
        if self.yn_kind not in YN_KINDS:
            raise ValueError(f"unknown yn_kind {self.yn_kind!r}; expected one of {YN_KINDS}")
        if self.reward_kind not in REWARD_KINDS:
            raise ValueError(f"unknown reward_kind {self.reward_kind!r}; expected one of {REWARD_KINDS}")

    @property
    def score_kind(self) -> str:
        """The guesser score the backend must report: percentile for ``env_stops``, else ``reward_kind``."""
        return "rank" if self.mode == "env_stops" else self.reward_kind


class DialogueScorer:
    """Scores one episode round by round: ``answer(text, delta)`` after each answer, ``stop()`` for ``STOP``.

    ``initial`` is the guesser's score before any question (``v0``: ``p_0`` or ``d_0``).
    """

    def __init__(self, config: RewardConfig, initial: float):
        self.config = config
        self.initial = float(initial)
        self.current = float(initial)
        self.rounds = 0
        self.done = False

    def answer(self, answer: str, delta: float) -> tuple[float, bool]:
        """``(reward, episode over)`` for the answer of the next round and its score change ``delta``."""
        if self.done:
            raise RuntimeError("the episode is over; no further answer can be scored")
        c = self.config
        self.rounds += 1
        self.current += delta if c.score_kind == "rank" else -delta
        if c.mode == "env_stops":
            final = self.rounds >= c.max_rounds or cutoff_fired(self.initial, self.current, c.goal, c.fraction)
            base = (0.0 if final else -1.0) + (c.yn_reward if is_yes_no(answer, c.yn_kind) else 0.0)
            self.done = final
            return base * c.reward_scale + c.reward_shift, final
        self.done = self.rounds >= c.max_rounds
        return delta * c.reward_scale + c.reward_shift, self.done

    def stop(self) -> float:
        """Ends an ``agent_stops`` episode (reward 0)."""
        if self.config.mode != "agent_stops":
            raise ValueError(f"{STOP!r} is an action only in mode 'agent_stops', not {self.config.mode!r}")
        if self.done:
            raise RuntimeError("the episode is over; it cannot be stopped again")
        self.done = True
        return 0.0


def replay_rewards(config: RewardConfig, row: Sequence[float], answers: Sequence[str],
                   stop_after: int | None = None) -> list[float]:
    """The rewards a recorded dialogue earns, from its cache row ``[v0, d1..d10]`` and its answers.

    ``env_stops`` / ``10_stop`` stop by themselves; ``agent_stops`` replays ``stop_after`` rounds (0..10) and
    then ``STOP`` (whose reward 0 is the last entry) unless the episode ended by itself after
    ``max_rounds`` answers.
    """
    scorer = DialogueScorer(config, row[0])
    rewards = []
    rounds = len(answers) if stop_after is None else stop_after
    for i in range(rounds):
        reward, done = scorer.answer(answers[i], row[i + 1])
        rewards.append(reward)
        if done:
            return rewards
    if config.mode == "agent_stops":
        rewards.append(scorer.stop())
    return rewards


__all__ = ["CONSERVATIVE_MARKERS", "MODES", "REWARD_KINDS", "STOP", "YN_KINDS", "DialogueScorer", "RewardConfig",
           "cutoff_fired", "distance_score", "is_yes_no", "percentile_from_distances", "percentile_score", "replay_rewards", "score_change"]
