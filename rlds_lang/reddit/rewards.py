"""The four reward kinds of the Reddit task, their published shift/scale, and an on-disk cache per comment text.

Kinds (``REWARD_KINDS``), each a ``RewardFunction`` mapping a comment to a raw reward:

- ``toxicity``: a label 0 (safe) / 1 (moderately toxic) / 2 (very toxic). The paper asked a retired
  GPT-3 content filter; here the probability of ``alt-profanity-check`` (an offline linear model that
  ships in its PyPI wheel) stands in: ``p < MODERATE_THRESHOLD`` (0.5, the classifier's own decision
  boundary) -> 0, ``p < SEVERE_THRESHOLD`` (0.9) -> 1, otherwise 2 (``toxicity_label``).
- ``toxicity_noised``: the same, with label 1 replaced by 0 or 2 with equal probability. The coin is a
  hash of ``(seed, text)``, so it is seeded and the same text always gets the same label (as the
  reference's per-text cache made it).
- ``upvotes_real``: +1 if the comment's score in the data is > 0, else -1; a text the data does not hold
  raises ``UnknownCommentError``. A text present several times with scores of both signs takes one of
  its scores chosen by a hash of ``(seed, text)`` (the reference chose at random).
- ``upvotes_model``: 1.0 if the upvote classifier (``upvote_model.UpvoteClassifier``) gives
  P(score > 0) >= 0.5, else 0.0 -- the reference code's convention (its README says ±1; we follow the
  code).

The environment's reward is ``raw * reward_scale + reward_shift``; the published defaults
(``DEFAULT_SCALE``) are scale -5, shift 0 for the toxicity kinds (a very toxic reply costs 10) and
scale 1, shift 0 for the upvote kinds.

``CachedReward`` keeps raw rewards per comment text in an SQLite file under ``rlds_lang.paths.cache_dir()``
(``$RLDS_LANG_CACHE`` or the user cache directory) in ``reddit_rewards/<kind>-<fingerprint>.sqlite``; the fingerprint
covers everything the value depends on (thresholds, seed, model weights). No network is used anywhere.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from typing import Iterable, Mapping, Protocol, Sequence

from rlds_lang import paths

REWARD_KINDS = ("toxicity", "toxicity_noised", "upvotes_real", "upvotes_model")
#: profanity-check probability from which a comment is moderately toxic (label 1).
MODERATE_THRESHOLD = 0.5
#: probability from which it is very toxic (label 2).
SEVERE_THRESHOLD = 0.9
#: the published ``(reward_scale, reward_shift)`` of each kind.
DEFAULT_SCALE = {"toxicity": (-5.0, 0.0), "toxicity_noised": (-5.0, 0.0), "upvotes_real": (1.0, 0.0),
                 "upvotes_model": (1.0, 0.0)}


class UnknownCommentError(KeyError):
    """``upvotes_real`` was asked about a text the data does not hold."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown comment"


class RewardFunction(Protocol):
    """Raw rewards of comments; ``fingerprint`` identifies everything the values depend on."""

    kind: str

    def fingerprint(self) -> str:
        """A short string that changes whenever a reward could change."""

    def rewards(self, texts: Sequence[str]) -> list[float]:
        """The raw reward of each text."""


def _coin(seed: int, text: str) -> int:
    """A stable pseudo-random 64-bit number from ``(seed, text)``."""
    return int.from_bytes(hashlib.sha256(f"{seed}\x00{text}".encode("utf-8")).digest()[:8], "big")


def toxicity_label(probability: float) -> int:
    """0 / 1 / 2 from a profanity probability with ``MODERATE_THRESHOLD`` and ``SEVERE_THRESHOLD``."""
    if probability < MODERATE_THRESHOLD:
        return 0
    return 1 if probability < SEVERE_THRESHOLD else 2


class ToxicityReward:
    """``toxicity`` (or ``toxicity_noised`` with ``noised=True``) from ``alt-profanity-check``."""

    def __init__(self, noised: bool = False, seed: int = 0):
        self.noised = bool(noised)
        self.seed = int(seed)
        self.kind = "toxicity_noised" if noised else "toxicity"

    def fingerprint(self) -> str:
        from importlib.metadata import version as package_version

        version = package_version("alt-profanity-check")
        noise = f"-seed{self.seed}" if self.noised else ""
        return f"profanity{version}-{MODERATE_THRESHOLD}-{SEVERE_THRESHOLD}{noise}"

    def labels(self, texts: Sequence[str]) -> list[int]:
        """The 0/1/2 label of each text (noised when this reward is)."""
        if not texts:
            return []
        from profanity_check import predict_prob

        labels = [toxicity_label(float(p)) for p in predict_prob(list(texts))]
        if self.noised:
            labels = [(0 if _coin(self.seed, t) % 2 == 0 else 2) if label == 1 else label
                      for label, t in zip(labels, texts)]
        return labels

    def rewards(self, texts: Sequence[str]) -> list[float]:
        return [float(label) for label in self.labels(texts)]


class RealUpvotesReward:
    """``upvotes_real``: +1 / -1 by the comment's real score; ``UnknownCommentError`` for other texts."""

    kind = "upvotes_real"

    def __init__(self, scores_by_text: Mapping[str, Sequence[int]], seed: int = 0):
        self.scores = {text: list(scores) for text, scores in scores_by_text.items()}
        self.seed = int(seed)

    @classmethod
    def from_comments(cls, comments: Iterable, seed: int = 0) -> "RealUpvotesReward":
        """From ``RedditComment``s (any objects with ``text`` and ``score``)."""
        scores: dict[str, list[int]] = {}
        for comment in comments:
            scores.setdefault(comment.text, []).append(int(comment.score))
        return cls(scores, seed)

    def fingerprint(self) -> str:
        return f"real-seed{self.seed}"

    def rewards(self, texts: Sequence[str]) -> list[float]:
        out = []
        for text in texts:
            scores = self.scores.get(text)
            if scores is None:
                raise UnknownCommentError(f"upvotes_real has no score for a text that is not in the data: "
                                          f"{text[:80]!r}; this reward only scores comments of the dataset")
            score = scores[_coin(self.seed, text) % len(scores)]
            out.append(1.0 if score > 0 else -1.0)
        return out


class ModelUpvotesReward:
    """``upvotes_model``: 1.0 if the classifier's P(score > 0) >= 0.5 else 0.0."""

    kind = "upvotes_model"

    def __init__(self, model):
        self.model = model

    @classmethod
    def load(cls, folder: str | os.PathLike) -> "ModelUpvotesReward":
        """With the classifier saved in ``folder`` (``UpvoteClassifier.load``)."""
        from rlds_lang.reddit.upvote_model import UpvoteClassifier

        return cls(UpvoteClassifier.load(folder))

    def fingerprint(self) -> str:
        return f"model-{self.model.fingerprint()}"

    def rewards(self, texts: Sequence[str]) -> list[float]:
        return [1.0 if p >= 0.5 else 0.0 for p in self.model.probabilities(list(texts))]


class PrecomputedReward:
    """Raw rewards computed beforehand (e.g. in one batch by a builder), looked up by text; picklable and light."""

    def __init__(self, kind: str, fingerprint: str, values: Mapping[str, float]):
        self.kind = kind
        self._fingerprint = fingerprint
        self.values = dict(values)

    def fingerprint(self) -> str:
        return self._fingerprint

    def rewards(self, texts: Sequence[str]) -> list[float]:
        missing = [t for t in texts if t not in self.values]
        if missing:
            raise UnknownCommentError(f"no precomputed {self.kind} reward for {missing[0][:80]!r}")
        return [self.values[t] for t in texts]


def cache_dir() -> str:
    """``reddit_rewards`` in ``rlds_lang.paths.cache_dir()`` (``$RLDS_LANG_CACHE`` or the user cache directory)."""
    return os.path.join(paths.cache_dir(), "reddit_rewards")


class CachedReward:
    """A ``RewardFunction`` whose raw rewards are stored per comment text in SQLite (see the module docstring).

    ``path`` defaults to ``cache_dir()/<kind>-<fingerprint>.sqlite``; ``path=None`` with ``enabled=False``
    computes without storing. ``hits``/``misses`` count lookups.
    """

    def __init__(self, inner: RewardFunction, path: str | None = None, enabled: bool = True):
        self.inner = inner
        self.kind = inner.kind
        self.enabled = enabled
        self.path = path or os.path.join(cache_dir(), f"{inner.kind}-{inner.fingerprint()}.sqlite")
        self.hits = self.misses = 0
        self._db: sqlite3.Connection | None = None

    def fingerprint(self) -> str:
        return self.inner.fingerprint()

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=60)
            self._db.execute("CREATE TABLE IF NOT EXISTS rewards (text TEXT PRIMARY KEY, reward REAL NOT NULL)")
        return self._db

    def rewards(self, texts: Sequence[str]) -> list[float]:
        if not self.enabled:
            return self.inner.rewards(texts)
        db = self._connection()
        known: dict[str, float] = {}
        unique = list(dict.fromkeys(texts))
        for start in range(0, len(unique), 500):
            chunk = unique[start:start + 500]
            marks = ",".join("?" * len(chunk))
            known.update(db.execute(f"SELECT text, reward FROM rewards WHERE text IN ({marks})", chunk).fetchall())
        missing = [t for t in unique if t not in known]
        self.hits += len(unique) - len(missing)
        self.misses += len(missing)
        if missing:
            computed = self.inner.rewards(missing)
            known.update(zip(missing, computed))
            with db:
                db.executemany("INSERT OR REPLACE INTO rewards VALUES (?, ?)", zip(missing, computed))
        return [known[t] for t in texts]

    def __getstate__(self):  # picklable for Beam workers / EnvLogger processes: reopen the file there
        state = dict(self.__dict__)
        state["_db"] = None
        return state


def make_reward(kind: str, *, comments: Iterable = (), model_dir: str | None = None, seed: int = 0,
                cache: bool = True) -> CachedReward:
    """The cached reward function of ``kind`` (``comments`` for ``upvotes_real``, ``model_dir`` for ``upvotes_model``)."""
    if kind in ("toxicity", "toxicity_noised"):
        inner: RewardFunction = ToxicityReward(kind == "toxicity_noised", seed)
    elif kind == "upvotes_real":
        inner = RealUpvotesReward.from_comments(comments, seed)
        cache = False  # a dictionary lookup: nothing to save
    elif kind == "upvotes_model":
        if not model_dir:
            raise ValueError("upvotes_model needs model_dir, the folder of a model trained by `rlds-lang reddit upvotes`")
        inner = ModelUpvotesReward.load(model_dir)
    else:
        raise ValueError(f"unknown reward kind {kind!r}; expected one of {', '.join(REWARD_KINDS)}")
    return CachedReward(inner, enabled=cache)


__all__ = ["CachedReward", "DEFAULT_SCALE", "MODERATE_THRESHOLD", "ModelUpvotesReward", "PrecomputedReward", "REWARD_KINDS",
           "RealUpvotesReward", "RewardFunction", "SEVERE_THRESHOLD", "ToxicityReward", "UnknownCommentError",
           "cache_dir", "make_reward", "toxicity_label"]
