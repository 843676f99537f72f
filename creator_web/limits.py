"""How much one person or client may ask of a creator_web server: wrong secrets, sessions, unfinished games.

``Limits`` holds every bound (defaults below; ``docs/guides/browser_access.md`` states them). ``Throttle`` counts
failures by key (an annotator, a client address) and locks a key out once it has failed ``most`` times within
``window_s``; the server answers a locked-out sign-in 429 with ``Retry-After``, even when its secret is right, so
guessing a secret takes years instead of minutes. ``LimitReached`` is the error of a request refused by a cap
(the server answers with its ``status`` and a message that names the limit and what to do).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Callable


@dataclasses.dataclass(frozen=True)
class Limits:
    """The bounds a server enforces (``create_app(limits=...)``, ``--limit NAME=VALUE``)."""

    #: wrong secrets allowed for one annotator, and from one client address, within ``failure_window_s``.
    failed_secrets_per_annotator: int = 5
    failed_secrets_per_client: int = 20
    failure_window_s: float = 600.0
    #: how long an annotator or client that used up its wrong secrets is refused (429), the right secret included.
    lockout_s: float = 900.0
    #: a session ends after this long without a request, and this long after it was opened, whatever its use.
    session_idle_s: float = 4 * 3600.0
    session_max_age_s: float = 24 * 3600.0
    #: open sessions per annotator, and in the whole server.
    sessions_per_annotator: int = 20
    sessions_total: int = 1000
    #: games a session may leave unfinished (by starting another, signing out or expiring) over its life.
    unfinished_games_per_session: int = 20

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            if not getattr(self, field.name) > 0:
                raise ValueError(f"limit {field.name}: must be positive, got {getattr(self, field.name)!r}")

    @classmethod
    def parse(cls, items: list[str]) -> "Limits":
        """``Limits`` from ``NAME=VALUE`` strings (``--limit``); ``ValueError`` naming an unknown or bad one."""
        types = {f.name: f.type for f in dataclasses.fields(cls)}
        values: dict[str, float | int] = {}
        for item in items:
            name, _, text = item.partition("=")
            if name not in types:
                raise ValueError(f"--limit {item!r}: unknown limit {name!r}; known: {sorted(types)}")
            try:
                values[name] = int(text) if types[name] in (int, "int") else float(text)
            except ValueError:
                raise ValueError(f"--limit {item!r}: {text!r} is not a {types[name]}") from None
        return cls(**values)


class LimitReached(Exception):
    """A request refused by a limit: ``status`` (429 or 409), a message naming the limit, ``retry_after`` (s) or
    ``None``."""

    def __init__(self, status: int, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.status, self.retry_after = status, retry_after


class Throttle:
    """Failures counted by key within ``window_s``; a key with ``most`` of them is locked out for ``lockout_s`` from
    its last failure. At most ``keys`` keys are remembered (the stalest forgotten first), so the table is bounded."""

    def __init__(self, most: int, window_s: float, lockout_s: float, keys: int = 100_000,
                 clock: Callable[[], float] = time.monotonic):
        self.most, self.window_s, self.lockout_s, self.keys, self.clock = most, window_s, lockout_s, keys, clock
        self._failures: dict[str, list[float]] = {}
        self._locked: dict[str, float] = {}
        self._lock = threading.Lock()

    def locked_for(self, key: str) -> float:
        """Seconds ``key`` stays locked out (0 when it is not)."""
        with self._lock:
            until = self._locked.get(key, 0.0)
            left = until - self.clock()
            if left <= 0 and key in self._locked:
                del self._locked[key]
            return max(0.0, left)

    def failed(self, key: str) -> None:
        """Counts a failure of ``key`` (locking it out when it reaches ``most``)."""
        now = self.clock()
        with self._lock:
            recent = [t for t in self._failures.pop(key, []) if now - t < self.window_s] + [now]
            if len(recent) >= self.most:
                self._locked[key] = now + self.lockout_s
                recent = []
            if recent:
                self._failures[key] = recent  # re-inserted: the dict stays ordered stalest first
            for table in (self._failures, self._locked):
                while len(table) > self.keys:
                    del table[next(iter(table))]

    def succeeded(self, key: str) -> None:
        """Forgets the failures of ``key`` (a right secret)."""
        with self._lock:
            self._failures.pop(key, None)


class SignInThrottle:
    """Wrong secrets counted per annotator (only names in the annotators file, so the table stays bounded) and per
    client address; ``check`` refuses (``LimitReached`` 429) a sign-in while either is locked out."""

    def __init__(self, limits: Limits, clock: Callable[[], float] = time.monotonic):
        self.limits = limits
        self.annotators = Throttle(limits.failed_secrets_per_annotator, limits.failure_window_s, limits.lockout_s,
                                   clock=clock)
        self.clients = Throttle(limits.failed_secrets_per_client, limits.failure_window_s, limits.lockout_s,
                                clock=clock)

    def check(self, annotator: str, client: str) -> None:
        """``LimitReached`` (429, with the seconds left) if ``annotator`` or ``client`` is locked out."""
        for throttle, who, most in ((self.annotators, f"annotator {annotator[:70]!r}",
                                     self.limits.failed_secrets_per_annotator),
                                    (self.clients, "this client address", self.limits.failed_secrets_per_client)):
            left = throttle.locked_for(annotator if throttle is self.annotators else client)
            if left > 0:
                raise LimitReached(429, f"secret: too many wrong secrets for {who} ({most} within "
                                        f"{self.limits.failure_window_s:g} s): sign-in refused for another "
                                        f"{left:.0f} s", retry_after=left)

    def failed(self, annotator: str, client: str, known: bool) -> None:
        """Counts a wrong secret from ``client`` (and against ``annotator`` when it is a ``known`` name)."""
        if known:
            self.annotators.failed(annotator)
        self.clients.failed(client)

    def succeeded(self, annotator: str) -> None:
        """A right secret: the annotator's wrong ones are forgotten (the client's are not: one's own right secret
        must not reset a count of guesses at others')."""
        self.annotators.succeeded(annotator)


__all__ = ["LimitReached", "Limits", "SignInThrottle", "Throttle"]
