"""Labellers: the synthetic one (return, ties, seeded noise) and the human one behind queues (answers, timeouts)."""

from __future__ import annotations

import threading
import time

import pytest

from rlds_lang.preferences.labellers import (
    HumanQueueLabeller,
    LabelTimeout,
    SyntheticLabeller,
    judge,
)
from rlds_lang.preferences.types import Clip, Label


def clip(name: str, *rewards: float) -> Clip:
    """A text clip named ``name:0`` with the given true rewards."""
    n = len(rewards)
    return Clip(f"{name}:0", name, 0, n, ["obs"] * n, ["act"] * n, list(rewards), [False] * n)


def test_synthetic_labeller_prefers_the_higher_return_and_records_ties_as_equal():
    labeller = SyntheticLabeller()
    good, bad, also_bad = clip("g", 1.0, 1.0), clip("b", -1.0, 0.0), clip("c", 0.0, -1.0)
    assert labeller.label(good, bad) is Label.LEFT and labeller.label(bad, good) is Label.RIGHT
    assert labeller.label(bad, also_bad) is Label.EQUAL
    tolerant = SyntheticLabeller(tolerance=3.0)
    assert tolerant.label(good, bad) is Label.EQUAL and tolerant.label(clip("x", 2.5), bad) is Label.LEFT
    judgement = judge(labeller, good, bad, selection="disagreement", disagreement=0.25)
    assert (judgement.label, judgement.labeller, judgement.selection, judgement.disagreement) == (
        Label.LEFT, "synthetic", "disagreement", 0.25)
    assert judgement.seconds >= 0.0
    with pytest.raises(ValueError, match="noise"):
        SyntheticLabeller(noise=1.5)


def test_noise_randomises_at_its_rate_reproducibly():
    good, bad = clip("g", 1.0), clip("b", 0.0)
    noisy = SyntheticLabeller(noise=0.2, seed=3)
    labels = [noisy.label(good, bad) for _ in range(4000)]
    wrong = sum(label is Label.RIGHT for label in labels) / len(labels)
    assert wrong == pytest.approx(0.1, abs=0.02)  # half of the random answers are right by chance
    again = SyntheticLabeller(noise=0.2, seed=3)
    assert [again.label(good, bad) for _ in range(4000)] == labels
    assert all(SyntheticLabeller(noise=1.0, seed=s).label(good, good) in (Label.LEFT, Label.RIGHT) for s in range(20))


def test_human_labeller_answers_come_back_through_the_queues():
    labeller = HumanQueueLabeller(timeout=5.0)
    left, right = clip("l", 0.0), clip("r", 1.0)

    def server():
        for answer in ("right", Label.SKIP):
            query = labeller.next_query(timeout=5.0)
            assert query is not None and query.left.clip_id == "l:0"
            labeller.answer(query.query_id, answer, annotator="ann", seconds=2.5)

    thread = threading.Thread(target=server)
    thread.start()
    judgement = labeller.judge(left, right, selection="random")
    assert labeller.label(left, right) is Label.SKIP
    thread.join(timeout=5)
    assert (judgement.label, judgement.labeller, judgement.seconds) == (Label.RIGHT, "human:ann", 2.5)
    with pytest.raises(ValueError, match="not a label"):
        labeller.answer(0, "better")


def test_human_labeller_times_out_and_discards_late_answers():
    labeller = HumanQueueLabeller(timeout=0.05)
    left, right = clip("l", 0.0), clip("r", 1.0)
    with pytest.raises(LabelTimeout, match="l:0 vs r:0"):
        labeller.label(left, right)
    assert labeller.timeouts == 1
    time.sleep(0.02)  # wall clock surely past the query's expiry
    assert labeller.next_query(timeout=0) is None and labeller.expired == 1  # nobody waits for it: not shown
    labeller.answer(0, "left")  # an answer to the abandoned query arrives anyway: discarded
    labeller.timeout = 5.0
    threading.Timer(0.05, lambda: labeller.answer(labeller.next_query(timeout=5).query_id, "equal")).start()
    assert labeller.label(left, right) is Label.EQUAL and labeller.late_answers == 1
    assert labeller.next_query(timeout=0) is None


def _serve(server: HumanQueueLabeller) -> None:
    """A labelling process: answers one query by true return."""
    query = server.next_query(timeout=30.0)
    server.answer(query.query_id, "left" if query.left.true_return > query.right.true_return else "right", "proc")


def test_human_labeller_answers_from_another_process():
    """The labeller (with its queues) is sent to a spawned process, which answers the query."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    labeller = HumanQueueLabeller(ctx.Queue(), ctx.Queue(), timeout=30.0)
    process = ctx.Process(target=_serve, args=(labeller,))
    process.start()
    try:
        judgement = labeller.judge(clip("a", 1.0), clip("b", 2.0))
    finally:
        process.join(timeout=30)
    assert (judgement.label, judgement.labeller, process.exitcode) == (Label.RIGHT, "human:proc", 0)
