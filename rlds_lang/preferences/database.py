"""The preference databases: circular stores of judgements, and the split of clips into train and validation.

``PreferenceDatabase`` keeps the latest ``capacity`` judgements (default: the anchor's 10,000); older ones
are evicted first and counted in ``evicted`` (they stay in the RLDS logs: nothing recorded is lost).

``EpisodeSplit`` holds out **episodes**: an episode goes to validation with probability ``val_fraction``
(default 20%), decided by a hash of its id (SHA-256, the same across processes and runs), and every clip of
it goes with it. A judgement is a validation judgement when both of its clips are validation clips, a
training one when both are training clips, and *straddling* otherwise. Straddling judgements are used for
neither (they would train on a validation clip) and are counted. This is what the reward model validates
on -- no validation clip is ever trained on, so its validation figure is a held-out one (a split by pair
puts the same clips on both sides: with 2,000 random pairs over 500 Wordle games every validation pair had
both clips in training pairs, and read 0.982 where unseen games gave 0.961;
``docs/guides/preference_pipeline.md``). The pipeline's labeller pairs clips of the same side only, so it
produces no straddling judgement. The ``builders/preferences`` dataset and the ``loggers`` readers split
by it too (``train``, ``validation`` and ``straddling``).

``RoutedDatabases`` holds a training and a validation database and routes each new judgement by
``EpisodeSplit``. The anchor's defaults live in ``rlds_lang.preferences.defaults`` (re-exported here).

Example::

    dbs = RoutedDatabases()
    dbs.add(judgement)                    # "train", "validation" or "straddling" (not stored, counted)
    train, val = dbs.train.judgements(), dbs.validation.judgements()
"""

from __future__ import annotations

import collections
import hashlib
from typing import Iterable

from rlds_lang.preferences.defaults import (DATABASE_CAPACITY, INITIAL_PREFERENCES, VALIDATION_EVERY,
                                            VALIDATION_FRACTION)
from rlds_lang.preferences.types import Clip, Judgement


class PreferenceDatabase:
    """A circular store of judgements (module docstring)."""

    def __init__(self, capacity: int = DATABASE_CAPACITY):
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = int(capacity)
        self._items: collections.deque[Judgement] = collections.deque(maxlen=self.capacity)
        self.added = 0

    def add(self, judgement: Judgement) -> None:
        """Stores ``judgement``, evicting the oldest when full."""
        self._items.append(judgement)
        self.added += 1

    def extend(self, judgements: Iterable[Judgement]) -> None:
        """Stores each of ``judgements``."""
        for judgement in judgements:
            self.add(judgement)

    @property
    def evicted(self) -> int:
        """Judgements pushed out by newer ones."""
        return self.added - len(self._items)

    def judgements(self) -> list[Judgement]:
        """The stored judgements, oldest first."""
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)


def _unit_hash(text: str) -> float:
    """A number in [0, 1) fixed by ``text`` (the first 8 bytes of its SHA-256)."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") / 2.0 ** 64


#: the sides of ``EpisodeSplit`` and what a judgement across them is called.
TRAIN, VALIDATION, STRADDLING = "train", "validation", "straddling"


class EpisodeSplit:
    """Held-out episodes: train/validation by a hash of the episode id (module docstring); ``seed`` draws another
    split of the same episodes."""

    def __init__(self, val_fraction: float = VALIDATION_FRACTION, seed: int = 0):
        if not 0.0 <= val_fraction <= 1.0:
            raise ValueError(f"val_fraction must be in [0, 1], got {val_fraction}")
        self.val_fraction = float(val_fraction)
        self.seed = int(seed)

    def side(self, clip: Clip) -> str:
        """``"validation"`` or ``"train"``: the side of ``clip``'s source episode."""
        position = _unit_hash(f"episode:{self.seed}\x00{clip.source_episode_id}")
        return VALIDATION if position < self.val_fraction else TRAIN

    def split(self, judgement: Judgement) -> str:
        """``"train"``, ``"validation"`` (both clips on that side) or ``"straddling"``."""
        left, right = self.side(judgement.left), self.side(judgement.right)
        return left if left == right else STRADDLING

    def partition(self, judgements: Iterable[Judgement]) -> tuple[list[Judgement], list[Judgement], int]:
        """``(train, validation, straddling count)`` of ``judgements``, in their order."""
        train: list[Judgement] = []
        val: list[Judgement] = []
        straddling = 0
        for judgement in judgements:
            side = self.split(judgement)
            if side == STRADDLING:
                straddling += 1
            else:
                (val if side == VALIDATION else train).append(judgement)
        return train, val, straddling


class RoutedDatabases:
    """A training and a validation database fed through an ``EpisodeSplit``; straddling judgements are stored in
    neither and counted in ``straddling`` (they stay in the RLDS logs).

    ``capacity`` is shared as the anchor does (``max_prefs_in_db`` across both): validation gets
    ``round(capacity * val_fraction)`` (at least 1), training the rest.
    """

    def __init__(self, capacity: int = DATABASE_CAPACITY, val_fraction: float = VALIDATION_FRACTION):
        self.splitter = EpisodeSplit(val_fraction)
        val_capacity = max(1, int(round(capacity * val_fraction)))
        self.train = PreferenceDatabase(max(1, capacity - val_capacity))
        self.validation = PreferenceDatabase(val_capacity)
        self.straddling = 0

    def add(self, judgement: Judgement) -> str:
        """Routes and stores ``judgement``; returns where it went (``"straddling"``: stored nowhere, counted)."""
        split = self.splitter.split(judgement)
        if split == STRADDLING:
            self.straddling += 1
        else:
            (self.validation if split == VALIDATION else self.train).add(judgement)
        return split

    def extend(self, judgements: Iterable[Judgement]) -> dict[str, int]:
        """Routes and stores each of ``judgements`` (e.g. saved preferences read back); returns the counts per
        split, straddling ones included."""
        counts = {TRAIN: 0, VALIDATION: 0, STRADDLING: 0}
        for judgement in judgements:
            counts[self.add(judgement)] += 1
        return counts

    def __len__(self) -> int:
        return len(self.train) + len(self.validation)


__all__ = ["DATABASE_CAPACITY", "EpisodeSplit", "INITIAL_PREFERENCES", "PreferenceDatabase", "RoutedDatabases",
           "STRADDLING", "TRAIN", "VALIDATION", "VALIDATION_EVERY", "VALIDATION_FRACTION"]
