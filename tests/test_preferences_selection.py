"""Pair selection (random, ensemble disagreement, never twice), the decaying query rate, databases and routing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rlds_lang.preferences import defaults
from rlds_lang.preferences.database import (
    PreferenceDatabase,
    RoutedDatabases,
)
from rlds_lang.preferences.selection import PairSelector, QuerySchedule, pair_key
from rlds_lang.preferences.types import Clip, Judgement, Label


def clip(i: int, value: float = 0.0) -> Clip:
    """Clip ``e{i}:0`` of one step with true reward ``value``."""
    return Clip(f"e{i}:0", f"e{i}", 0, 1, ["o"], ["a"], [value], [False])


def test_random_selection_never_asks_a_pair_twice_in_either_order():
    clips = [clip(i) for i in range(5)]  # 10 unordered pairs
    selector = PairSelector("random", seed=0)
    selector.mark_asked([("e1:0", "e0:0")])
    pairs = selector.select(clips, 20)
    keys = [pair_key(p.left, p.right) for p in pairs]
    assert len(pairs) == 9 and len(set(keys)) == 9 and ("e0:0", "e1:0") not in keys
    assert all(p.selection == "random" and p.left is not p.right for p in pairs)
    assert selector.select(clips, 3) == [] and selector.select(clips[:1], 1) == []


def test_disagreement_selection_keeps_the_most_disagreed_candidates():
    clips = [clip(i, float(i)) for i in range(30)]
    calls = []

    def disagreement(pairs):  # stands in for RewardModel.disagreement: one score per pair
        calls.append(len(pairs))
        return np.array([abs(a.true_return - b.true_return) for a, b in pairs])

    selector = PairSelector("disagreement", disagreement=disagreement, candidates=8, seed=1)
    chosen = selector.select(clips, 3)
    assert calls == [24] and [p.selection for p in chosen] == ["disagreement"] * 3
    scores = [p.disagreement for p in chosen]
    assert scores == sorted(scores, reverse=True) and scores[0] >= 15  # the top of 24 random gaps out of 0..29
    again = selector.select(clips, 50)
    assert not {pair_key(p.left, p.right) for p in chosen} & {pair_key(p.left, p.right) for p in again}
    untrained = PairSelector("disagreement", seed=0)  # no reward model yet: random, recorded as such
    assert [p.selection for p in untrained.select(clips, 2)] == ["random", "random"]
    with pytest.raises(ValueError, match="2 scores for"):
        PairSelector("disagreement", disagreement=lambda pairs: np.zeros(2), seed=0).select(clips, 1)
    with pytest.raises(ValueError, match="not one of"):
        PairSelector("uncertainty")


def test_query_rate_decays_as_t0_over_t0_plus_t():
    schedule = QuerySchedule(rate=0.5, timescale=100, initial=4)
    assert schedule.rate_at(0) == 0.5 and schedule.rate_at(100) == 0.25 and schedule.rate_at(300) == 0.125
    assert schedule.advance(0) == 4
    total = 4 + sum(schedule.advance(10) for _ in range(100))  # 1,000 steps
    assert total == math.floor(4 + 0.5 * 100 * math.log(11))  # the integral of the rate: 123 queries, not 504
    early, late = QuerySchedule(1.0, 100), QuerySchedule(1.0, 100)
    late.advance(1000)
    assert early.advance(100) > 3 * late.advance(100)
    constant = QuerySchedule(0.25)
    assert [constant.advance(2) for _ in range(4)] == [0, 1, 0, 1]


def _judgement(a: str, b: str) -> Judgement:
    left, right = Clip(a, a.split(":")[0], 0, 1, ["o"], ["x"], [0.0], [False]), Clip(b, b.split(":")[0], 0, 1, ["o"],
                                                                                      ["y"], [1.0], [False])
    return Judgement(left, right, Label.RIGHT, "synthetic")


def test_circular_database_keeps_the_latest():
    db = PreferenceDatabase(capacity=3)
    db.extend(_judgement(f"a{i}:0", f"b{i}:0") for i in range(5))
    assert len(db) == 3 and db.evicted == 2 and [j.left.clip_id for j in db.judgements()] == ["a2:0", "a3:0", "a4:0"]
    assert PreferenceDatabase().capacity == defaults.DATABASE_CAPACITY == 10_000


def test_routed_databases_hold_out_whole_episodes_and_count_straddling_pairs():
    dbs = RoutedDatabases(capacity=100)
    went = [dbs.add(_judgement(f"l{i % 20}:{i}", f"r{i % 15}:{i}")) for i in range(200)]  # episodes recur
    assert dbs.validation.capacity == 20 and dbs.train.capacity == 80
    assert went.count("straddling") == dbs.straddling > 0 and went.count("validation") > 0
    assert dbs.train.added + dbs.validation.added + dbs.straddling == 200
    episodes = {side: {c.source_episode_id for j in db.judgements() for c in (j.left, j.right)}
                for side, db in (("train", dbs.train), ("validation", dbs.validation))}
    assert episodes["validation"] and not episodes["train"] & episodes["validation"]  # no validation clip trained on
    reloaded = RoutedDatabases(capacity=100)  # saved preferences read back land in the same databases
    assert reloaded.extend(dbs.train.judgements() + dbs.validation.judgements()) == {
        "train": len(dbs.train), "validation": len(dbs.validation), "straddling": 0}


def test_the_anchor_defaults_are_in_one_place():
    assert (defaults.SEGMENT_LENGTH, defaults.INITIAL_PREFERENCES, defaults.VALIDATION_FRACTION,
            defaults.VALIDATION_EVERY) == (40, 40, 0.2, 10)


def test_the_reference_defaults_are_pinned_where_they_are_used():
    """Each default decided against the reference (``rlds_lang.preferences.defaults`` says which and in what unit)
    and every place that uses it: changing one changes the method, so a test must say so."""
    from rlds_lang.preferences.wrapper import PreferenceEnv
    from rlds_lang.wordle.env import WordleEnv
    from trainers.algorithms.reward.model import RewardModelConfig
    from trainers.algorithms.reward.pipeline import PipelineConfig
    from trainers.cli.main import build_parser

    assert defaults.ENSEMBLE_MEMBERS == RewardModelConfig().members == 3          # the paper's ensemble
    assert defaults.VALIDATION_EVERY == RewardModelConfig().val_every == 10       # anchor, mini-batches
    assert defaults.INITIAL_TRAINING_EPOCHS == 50                                 # anchor, epochs
    assert PreferenceEnv(WordleEnv()).n_initial_training_epochs == 50
    assert PreferenceEnv(WordleEnv()).n_initial_training_steps is None            # counted in epochs by default
    run = build_parser().parse_args(["preferences", "run"])
    assert (run.n_initial_training_epochs, run.n_initial_training_steps) == (50, None)
    assert defaults.CHECKPOINT_EVERY_EPOCHS == PipelineConfig().checkpoint_every_epochs == 10  # anchor, epochs
    assert PipelineConfig().checkpoint_every is None
    assert defaults.CANDIDATES_PER_QUERY == PairSelector("disagreement").candidates == 10      # ours
    assert PipelineConfig().query_timescale == defaults.QUERY_RATE_TIMESCALE / defaults.SEGMENT_LENGTH == 50_000
    assert PipelineConfig().val_fraction == RewardModelConfig().val_fraction == 0.2
    assert PipelineConfig().n_initial_preferences == 40 and PipelineConfig().database_capacity == 10_000


def test_checkpoints_come_every_n_epochs_unless_steps_are_given():
    from trainers.algorithms.reward.pipeline import PipelineConfig, checkpoint_due

    config = PipelineConfig(checkpoint_every_epochs=10)
    assert not checkpoint_due(config, 100, 9.99, 0.0) and checkpoint_due(config, 101, 10.0, 0.0)
    assert not checkpoint_due(config, 102, 19.5, 10.0) and checkpoint_due(config, 103, 20.4, 10.0)
    steps = PipelineConfig(checkpoint_every=3)
    assert [k for k in range(1, 10) if checkpoint_due(steps, k, 100.0 * k, 0.0)] == [3, 6, 9]
