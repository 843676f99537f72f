"""Visual Dialogue rewards and modes, table-driven, every expected value computed by hand.

Fixture dialogue: cache row ROW (percentile p_0 = 0.25, p after rounds 1..3 = 0.375, 0.375, 0.625) and
the answers ANSWERS. The env_stops cutoff (p_t - p_0) / (1 - p_0) >= 0.5 needs p_t >= 0.625: round 3.
"""

import numpy as np
import pytest

from rlds_lang.visdial.rewards import (
    DialogueScorer,
    RewardConfig,
    cutoff_fired,
    distance_score,
    is_yes_no,
    percentile_from_distances,
    percentile_score,
    replay_rewards,
    score_change,
)

ROW = [0.25, 0.125, 0.0, 0.25, 0.125, -0.125, 0.0, 0.0, 0.0, 0.0, 0.0]
ANSWERS = ["yes", "no it is not", "maybe", "Yes", "no", "red", "two", "i think so", "a dog", "can't tell"]


@pytest.mark.parametrize("kind,answer,expected", [
    ("none", "yes", False),
    ("hard", "yes", True), ("hard", "No", True), ("hard", "yes it is", False), ("hard", "red", False),
    ("soft", "yes it is", True), ("soft", "nope", True), ("soft", "snow", True), ("soft", "red", False),
    ("conservative", "i think so", True), ("conservative", "can’t tell", True), ("conservative", "it appears", True),
    ("conservative", "mostly just grass", True), ("conservative", "red", False), ("conservative", "a cat", False),
])
def test_yes_no_kinds(kind, answer, expected):
    assert is_yes_no(answer, kind) is expected


@pytest.mark.parametrize("yn_kind,scale,shift,expected", [
    ("none", 1.0, 0.0, [-1.0, -1.0, 0.0]),                # stops at round 3 (p = 0.625)
    ("hard", 1.0, 0.0, [-3.0, -1.0, 0.0]),                # "yes" is hard y/n; "no it is not" is not
    ("soft", 1.0, 0.0, [-3.0, -3.0, 0.0]),                # "maybe" has neither "yes" nor "no"
    ("conservative", 1.0, 0.0, [-3.0, -3.0, -2.0]),       # "maybe" is conservative
    ("none", 2.0, 0.5, [-1.5, -1.5, 0.5]),                # (-1) * 2 + 0.5, 0 * 2 + 0.5
    ("hard", 0.5, -1.0, [-2.5, -1.5, -1.0]),              # (-3) * 0.5 - 1
])
def test_env_stops(yn_kind, scale, shift, expected):
    config = RewardConfig("env_stops", yn_kind=yn_kind, reward_scale=scale, reward_shift=shift)
    assert replay_rewards(config, ROW, ANSWERS) == expected


@pytest.mark.parametrize("row,expected", [
    ([1.0] + [0.0] * 10, [0.0]),                           # p_0 = 1: already at the goal, stops at once
    ([0.5] + [0.0] * 10, [-1.0] * 9 + [0.0]),              # never fires: 10 rounds, last one 0
    ([0.5, 0.25] + [0.0] * 9, [0.0]),                      # (0.75 - 0.5) / 0.5 = 0.5 fires exactly
    ([0.5, 0.2] + [0.0] * 9, [-1.0] * 9 + [0.0]),          # 0.4 < 0.5
])
def test_env_stops_cutoff_cases(row, expected):
    assert replay_rewards(RewardConfig("env_stops"), row, ["red"] * 10) == expected


def test_cutoff_rule_with_other_goal_and_fraction():
    assert cutoff_fired(0.25, 0.5, goal=0.75, fraction=0.5)         # 0.25 / 0.5
    assert not cutoff_fired(0.25, 0.5, goal=0.75, fraction=0.625)
    assert cutoff_fired(0.9, 0.0, goal=0.75)                         # p_0 beyond the goal


@pytest.mark.parametrize("kind,scale,shift,expected", [
    ("rank", 1.0, 0.0, ROW[1:]),
    ("rank", 4.0, 1.0, [1.5, 1.0, 2.0, 1.5, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0]),
    ("distance", -2.0, 0.0, [-0.25, 0.0, -0.5, -0.25, 0.25, 0.0, 0.0, 0.0, 0.0, 0.0]),
])
def test_ten_stop_ignores_yes_no(kind, scale, shift, expected):
    config = RewardConfig("10_stop", reward_kind=kind, yn_kind="hard", reward_scale=scale, reward_shift=shift)
    assert replay_rewards(config, ROW, ANSWERS) == expected


@pytest.mark.parametrize("stop_after,expected", [
    (0, [0.0]),
    (2, [0.125, 0.0, 0.0]),
    (10, ROW[1:]),  # the 10-round prefix ends after the last answer, without <stop> (as the reference data)
])
def test_agent_stops_prefixes(stop_after, expected):
    assert replay_rewards(RewardConfig("agent_stops"), ROW, ANSWERS, stop_after) == expected


def test_agent_stops_ends_after_ten_rounds_and_stop_is_agent_stops_only():
    scorer = DialogueScorer(RewardConfig("agent_stops"), 0.25)
    for i in range(10):
        assert scorer.answer("red", ROW[i + 1]) == (ROW[i + 1], i == 9)
    with pytest.raises(RuntimeError):
        scorer.answer("red", 0.0)
    with pytest.raises(RuntimeError):
        scorer.stop()
    assert DialogueScorer(RewardConfig("agent_stops"), 0.25).stop() == 0.0
    with pytest.raises(ValueError, match="only in mode 'agent_stops'"):
        DialogueScorer(RewardConfig("10_stop"), 0.0).stop()
    with pytest.raises(ValueError, match="unknown mode"):
        RewardConfig("sometimes")


def test_percentile_and_distance_scores_by_hand():
    pool = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]])
    predicted = np.array([0.9, 0.0])
    # true image is pool row 1 (squared distances 0.81, 0.01, 4.41): rank 1 of 3, counted once
    assert percentile_score(predicted, pool[1], pool, true_index=1) == pytest.approx(1 - 1 / 3)
    # true image [2, 0] outside the pool (distance 1.21): rank 3 of 4
    assert percentile_score(predicted, np.array([2.0, 0.0]), pool) == pytest.approx(0.25)
    # a tie with another image goes to the true image
    assert percentile_score(np.array([0.5, 0.0]), pool[0], pool, true_index=0) == pytest.approx(1 - 1 / 3)
    # the reference server's pool: the true image prepended to every row (pool row 1 is its copy): 1 of 4
    dists = ((pool - predicted) ** 2).sum(axis=1)
    assert percentile_from_distances(dists, dists[1], 1, published_pool=True) == pytest.approx(1 - 1 / 4)
    assert percentile_from_distances(dists, dists[1], 1) == pytest.approx(1 - 1 / 3)
    assert distance_score(np.array([1.0, 2.0]), np.zeros(2)) == 2.5
    assert score_change("distance", 2.5, 1.0) == 1.5 and score_change("rank", 0.25, 0.5) == 0.25
