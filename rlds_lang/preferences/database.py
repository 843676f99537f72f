"""The preference databases: circular stores of judgements, and the router that splits train from validation.

``PreferenceDatabase`` keeps the latest ``capacity`` judgements (default: the anchor's 10,000); older ones
are evicted first and counted in ``evicted`` (they stay in the RLDS logs: nothing recorded is lost).
``ValidationRouter`` sends a share ``val_fraction`` (default 20%) of the pairs to validation, decided by a
hash of the pair key (SHA-256 of the two clip ids, order-free), so a pair always lands in the same database,
across processes and runs. ``RoutedDatabases`` holds the two and routes each new judgement.
The anchor's defaults live in ``rlds_lang.preferences.defaults`` (re-exported here).

Example::

    dbs = RoutedDatabases()
    dbs.add(judgement)
    train, val = dbs.train.judgements(), dbs.validation.judgements()
"""

from __future__ import annotations

import collections
import hashlib
from typing import Iterable

from rlds_lang.preferences.defaults import (DATABASE_CAPACITY, INITIAL_PREFERENCES, VALIDATION_EVERY,
                                            VALIDATION_FRACTION)
from rlds_lang.preferences.selection import pair_key
from rlds_lang.preferences.types import Judgement


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


class ValidationRouter:
    """Deterministic train/validation split by pair key (module docstring)."""

    def __init__(self, val_fraction: float = VALIDATION_FRACTION):
        if not 0.0 <= val_fraction <= 1.0:
            raise ValueError(f"val_fraction must be in [0, 1], got {val_fraction}")
        self.val_fraction = float(val_fraction)

    def is_validation(self, left_id: str, right_id: str) -> bool:
        """Whether the pair of clip ids (either order) belongs to validation."""
        a, b = pair_key(left_id, right_id)
        digest = hashlib.sha256(f"{a}\x00{b}".encode("utf-8")).digest()
        return int.from_bytes(digest[:8], "big") / 2.0 ** 64 < self.val_fraction

    def split(self, judgement: Judgement) -> str:
        """``"validation"`` or ``"train"`` for ``judgement``."""
        return "validation" if self.is_validation(judgement.left.clip_id, judgement.right.clip_id) else "train"


class RoutedDatabases:
    """A training and a validation database fed through a ``ValidationRouter``.

    ``capacity`` is shared as the anchor does (``max_prefs_in_db`` across both): validation gets
    ``round(capacity * val_fraction)`` (at least 1), training the rest.
    """

    def __init__(self, capacity: int = DATABASE_CAPACITY, val_fraction: float = VALIDATION_FRACTION):
        self.router = ValidationRouter(val_fraction)
        val_capacity = max(1, int(round(capacity * val_fraction)))
        self.train = PreferenceDatabase(max(1, capacity - val_capacity))
        self.validation = PreferenceDatabase(val_capacity)

    def add(self, judgement: Judgement) -> str:
        """Routes and stores ``judgement``; returns the split it went to."""
        split = self.router.split(judgement)
        (self.validation if split == "validation" else self.train).add(judgement)
        return split

    def extend(self, judgements: Iterable[Judgement]) -> dict[str, int]:
        """Routes and stores each of ``judgements`` (e.g. saved preferences read back); returns the counts per split."""
        counts = {"train": 0, "validation": 0}
        for judgement in judgements:
            counts[self.add(judgement)] += 1
        return counts

    def __len__(self) -> int:
        return len(self.train) + len(self.validation)


__all__ = ["DATABASE_CAPACITY", "INITIAL_PREFERENCES", "PreferenceDatabase", "RoutedDatabases", "VALIDATION_EVERY",
           "VALIDATION_FRACTION", "ValidationRouter"]
