"""Who answers "which clip is better": a synthetic labeller (true returns) and a person behind a queue.

``SyntheticLabeller`` prefers the clip with the higher true return, answers ``equal`` when the returns are
within ``tolerance`` (so an exact tie is recorded as "equal", as the anchor does), and with probability
``noise`` answers left or right uniformly at random instead -- the paper's model of a labeller's errors
("a 10% chance that the human responds uniformly at random", arXiv 1706.03741 section 2.2.3), drawn from
its own seeded generator so a run is reproducible.

``HumanQueueLabeller`` puts each pair on a request queue as a ``Query``; a server (``creator_web``) takes
queries with ``next_query`` and sends back an ``Answer`` (``answer``); ``label`` waits for the answer to its
own query, up to ``timeout`` seconds (``LabelTimeout``; the query carries its expiry, so ``next_query``
no longer hands it out, and a late answer to it is discarded and counted). The queues are anything with ``put``/``get(timeout=...)`` (``queue.Queue``, a
``multiprocessing`` queue), so the person's browser can live in another process.

Both implement ``Labeller``: ``labeller_id`` and ``label(left, right) -> Label``; ``judge`` wraps a label
into a ``Judgement`` with the time it took.

Example::

    from rlds_lang.preferences.labellers import SyntheticLabeller, judge

    labeller = SyntheticLabeller(tolerance=0.0, noise=0.1, seed=0)
    judgement = judge(labeller, left_clip, right_clip, selection="random")
"""

from __future__ import annotations

import dataclasses
import queue
import time
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rlds_lang.preferences.defaults import TIE_TOLERANCE
from rlds_lang.preferences.types import Clip, Judgement, Label


@runtime_checkable
class Labeller(Protocol):
    """Anything that judges a pair of clips."""

    labeller_id: str

    def label(self, left: Clip, right: Clip) -> Label:
        """The answer about ``(left, right)``."""


class SyntheticLabeller:
    """Labels by true return (module docstring).

    Args:
      tolerance: returns differing by at most this are "equal".
      noise: probability of answering left/right uniformly at random instead (0 = always by return).
      seed: seed of the noise.
    """

    def __init__(self, tolerance: float = TIE_TOLERANCE, noise: float = 0.0, seed: int = 0,
                 labeller_id: str = "synthetic"):
        if tolerance < 0:
            raise ValueError(f"tolerance must be >= 0, got {tolerance}")
        if not 0.0 <= noise <= 1.0:
            raise ValueError(f"noise must be a probability in [0, 1], got {noise}")
        self.tolerance, self.noise, self.seed = float(tolerance), float(noise), int(seed)
        self.labeller_id = labeller_id
        self._rng = np.random.default_rng(self.seed)

    def label(self, left: Clip, right: Clip) -> Label:
        """``LEFT`` / ``RIGHT`` for the higher true return, ``EQUAL`` within tolerance; randomised at rate ``noise``."""
        if self.noise and self._rng.random() < self.noise:
            return Label.LEFT if self._rng.random() < 0.5 else Label.RIGHT
        diff = left.true_return - right.true_return
        if abs(diff) <= self.tolerance:
            return Label.EQUAL
        return Label.LEFT if diff > 0 else Label.RIGHT


def judge(labeller: Labeller, left: Clip, right: Clip, selection: str = "random",
          disagreement: float = 0.0) -> Judgement:
    """Asks ``labeller`` about ``(left, right)`` and returns the ``Judgement`` with the seconds it took."""
    started = time.perf_counter()
    label = labeller.label(left, right)
    return Judgement(left, right, label, labeller=labeller.labeller_id, seconds=time.perf_counter() - started,
                     selection=selection, disagreement=float(disagreement))


def _as_label(value: Label | str | bytes, where: str) -> Label:
    return value if isinstance(value, Label) else Label.parse(value, where)


class LabelTimeout(TimeoutError):
    """Nobody answered a query in time."""


@dataclasses.dataclass
class Query:
    """A pair waiting for a person's answer; ``query_id`` ties the answer to it."""

    query_id: int
    left: Clip
    right: Clip
    asked_at: float
    #: wall-clock time (``time.time()``) after which nobody waits for the answer (``None``: no limit).
    expires_at: float | None = None

    @property
    def expired(self) -> bool:
        """Whether the asker stopped waiting (a server should not show it any more)."""
        return self.expires_at is not None and time.time() > self.expires_at


@dataclasses.dataclass
class Answer:
    """A person's answer to query ``query_id``: the label, who answered and how long they looked."""

    query_id: int
    label: Label
    annotator: str = ""
    seconds: float = 0.0


class HumanQueueLabeller:
    """A person's labels through a pair of queues (module docstring).

    Args:
      requests: queue of ``Query`` the server takes from (default: a new ``queue.Queue``).
      answers: queue of ``Answer`` the server puts on (default: a new ``queue.Queue``).
      timeout: seconds ``label`` waits for an answer (``None`` = forever).
      labeller_id: recorded in judgements; ``human:<annotator>`` when the answer names its annotator.
    """

    def __init__(self, requests: Any = None, answers: Any = None, timeout: float | None = 300.0,
                 labeller_id: str = "human"):
        self.requests = requests if requests is not None else queue.Queue()
        self.answers = answers if answers is not None else queue.Queue()
        self.timeout = timeout
        self.labeller_id = labeller_id
        self.last_answer: Answer | None = None
        self.late_answers = 0
        self.timeouts = 0
        self.expired = 0
        self._next_id = 0  # a plain counter keeps the labeller picklable (spawned processes)

    # -- the pipeline's side -----------------------------------------------------------------------
    def label(self, left: Clip, right: Clip) -> Label:
        """Queues the pair and waits for its answer; raises ``LabelTimeout`` after ``timeout`` seconds."""
        now = time.time()
        query = Query(self._next_id, left, right, now, None if self.timeout is None else now + self.timeout)
        self._next_id += 1
        self.requests.put(query)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                answer = self.answers.get(timeout=remaining)
            except queue.Empty:
                self.timeouts += 1
                raise LabelTimeout(f"no answer to query {query.query_id} ({left.clip_id} vs {right.clip_id}) "
                                   f"within {self.timeout} s") from None
            if answer.query_id == query.query_id:
                self.last_answer = answer
                return _as_label(answer.label, f"answer to query {query.query_id}")
            self.late_answers += 1  # an answer to an abandoned query

    def judge(self, left: Clip, right: Clip, selection: str = "random", disagreement: float = 0.0) -> Judgement:
        """``label`` as a ``Judgement`` naming the annotator and the seconds they reported."""
        label = self.label(left, right)
        answer = self.last_answer
        who = f"human:{answer.annotator}" if answer and answer.annotator else self.labeller_id
        return Judgement(left, right, label, labeller=who, seconds=float(answer.seconds if answer else 0.0),
                         selection=selection, disagreement=float(disagreement))

    # -- the server's side -------------------------------------------------------------------------
    def next_query(self, timeout: float | None = None) -> Query | None:
        """The next pair to show, or ``None`` when none arrives within ``timeout`` seconds; queries whose asker
        stopped waiting are dropped (counted in ``expired``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                query = self.requests.get(timeout=remaining)
            except queue.Empty:
                return None
            if not query.expired:
                return query
            self.expired += 1

    def answer(self, query_id: int, label: Label | str, annotator: str = "", seconds: float = 0.0) -> None:
        """Sends the person's answer to query ``query_id`` (left / right / equal / skip)."""
        self.answers.put(Answer(int(query_id), _as_label(label, f"answer to query {query_id}"), annotator,
                                float(seconds)))


__all__ = ["Answer", "HumanQueueLabeller", "LabelTimeout", "Labeller", "Query", "SyntheticLabeller", "judge"]
