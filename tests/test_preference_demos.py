"""The moving-dot and label-efficiency demonstrations: the moving-dot task, an agent on a learned reward, the curves."""

import json
import unittest

import numpy as np
import pytest
from dm_env import test_utils

from rlds_lang.moving_dot.env import MovingDotEnv, best_return

torch = pytest.importorskip("torch", reason="the reward model needs torch (installed by setup.cfg)")

from trainers.algorithms.reward.model import RewardModelConfig  # noqa: E402
from trainers.experiments.preferences.curves import (
    CurvesConfig,
    budget_list,
    run_curves,  # noqa: E402,E501
    summarise,
)
from trainers.experiments.preferences.curves import render_doc as render_curves
from trainers.experiments.preferences.dot import (
    DotDemoConfig,
    QAgent,
    evaluate,
    random_clips,
    render_doc,
    run_dot_demo,  # noqa: E402,E501
    train_agent,
)


class MovingDotConformanceTest(test_utils.EnvironmentTestMixin, unittest.TestCase):
    """dm_env's conformance suite on the moving dot."""

    def make_object_under_test(self):
        return MovingDotEnv(size=5, episode_length=4, seed=0)


def test_the_dot_moves_clips_at_the_border_and_is_rewarded_for_being_near_the_centre():
    env = MovingDotEnv(size=4, episode_length=3, seed=0)
    env.reset()
    env._position = (0, 0)  # a corner: distance 1.5 + 1.5 from the centre (1.5, 1.5)
    timestep = env.step(1)  # up: clipped, stays at the top
    assert env.position == (0, 0) and timestep.reward == pytest.approx(-3.0 / 4)
    env.step(4)  # right
    assert env.position == (0, 1) and QAgent.state(env.observation()) == (0, 1)
    last = env.step(2)  # down; the third step ends the episode
    assert last.last() and env.position == (1, 1) and last.reward == pytest.approx(-2.0 / 4)
    env.reset()
    with pytest.raises(ValueError, match="0..4"):
        env.step(7)
    assert best_return(env, (1, 1)) == pytest.approx(3 * -1.0 / 4)  # already next to the centre: stay


def test_q_learning_on_the_true_reward_beats_random_moves():
    config = DotDemoConfig(size=5, episode_length=10, agent_episodes=300, eval_episodes=100)
    agent, _ = train_agent(MovingDotEnv(5, 10, seed=0), config, seed=0)
    rng = np.random.default_rng(0)
    trained = evaluate(lambda obs: agent.act(obs, 0.0), config)
    random = evaluate(lambda obs: int(rng.integers(5)), config)
    assert trained.mean() > random.mean() + 4 * random.std(ddof=1) / np.sqrt(len(random))


def test_random_clips_keep_the_true_rewards_of_fixed_length_segments():
    clips = random_clips(episodes=3, size=5, episode_length=10, segment_length=5, seed=1)
    assert len(clips) == 6 and all(len(c) == 5 and not any(c.padding) for c in clips)
    assert all(np.asarray(c.observations[0]).shape == (5, 5, 1) for c in clips)
    assert all(-2.0 <= r <= 0.0 for c in clips for r in c.rewards)


TINY_IMAGES = RewardModelConfig(members=2, batch_size=8, hidden=16, lr=3e-3, val_every=2, filters=4)


def test_tiny_dot_demo_trains_the_agent_only_on_the_predicted_reward(tmp_path):
    config = DotDemoConfig(size=5, episode_length=8, agent_episodes=40, segment_length=4, n_initial_preferences=10,
                           n_initial_training_steps=4, max_training_steps=8, checkpoint_every=2, reload_every=16,
                           eval_episodes=30, warmup_timeout=240, out=str(tmp_path / "dot"), reward=TINY_IMAGES)
    results = run_dot_demo(config, progress=False)
    counts = results["pipeline"]
    assert counts["episodes_on_predicted_reward"] == 40  # no learning from the true reward
    assert counts["labels_recorded"] == counts["labels_received"] >= 10 and counts["training_steps"] >= 4
    assert set(results["rows"]) == {"random", "true reward", "predicted reward", "best possible"}
    rows = results["rows"]
    expected = (rows["predicted reward"]["mean"] - rows["random"]["mean"]) / (rows["true reward"]["mean"]
                                                                               - rows["random"]["mean"])
    assert results["recovered"] == pytest.approx(expected)
    assert results["verdict"] == ("reached" if results["recovered"] >= 0.8 else "not reached")
    assert json.loads((tmp_path / "dot" / "dot_demo.json").read_text())["recovered"] == results["recovered"]
    page = render_doc(results, "rlds-lang results preferences dot")
    assert f"Target {results['verdict']}" in page and "| predicted reward |" in page


def test_budgets_must_increase_in_multiples_of_the_query_batch():
    assert budget_list(CurvesConfig(budgets="25,50", query_batch=25)) == [25, 50]
    for bad in ("50,25", "30", "a,b", "25,25"):
        with pytest.raises(ValueError, match="budgets"):
            budget_list(CurvesConfig(budgets=bad, query_batch=25))


def test_tiny_curves_are_paired_across_methods_and_summarised(tmp_path):
    config = CurvesConfig(episodes=30, size=5, episode_length=8, segment_length=4, val_pairs=30, budgets="10,20",
                          query_batch=10, steps_per_batch=2, seeds=2, out=str(tmp_path / "curves"), reward=TINY_IMAGES)
    results = run_curves(config, progress=False)
    assert {m: np.shape(v) for m, v in results["curves"].items()} == {"random": (2, 2), "disagreement": (2, 2)}
    rows = summarise(results)
    curves = {m: np.asarray(v) for m, v in results["curves"].items()}
    assert rows[1]["diff"] == pytest.approx(float((curves["disagreement"][:, 1] - curves["random"][:, 1]).mean()))
    assert (tmp_path / "curves" / "curves.png").stat().st_size > 5_000
    page = render_curves(results, "rlds-lang results preferences curves", "curves.png")
    assert "| 20 |" in page and "Verdicts (computed)" in page


def test_the_curves_verdicts_name_each_side_beyond_two_paired_se():
    # budget 10: disagreement ahead on every seed; 20: random ahead on every seed; 40: differences -0.1, +0.1, 0
    results = {"budgets": [10, 20, 40], "val_pairs": 30, "episodes": 30, "clips": 60, "held_out_episodes": 6,
               "seconds": 1.0,
               "curves": {"random": [[0.5, 0.8, 0.7], [0.6, 0.9, 0.7], [0.55, 0.85, 0.7]],
                          "disagreement": [[0.6, 0.7, 0.6], [0.7, 0.8, 0.8], [0.66, 0.74, 0.7]]},
               "config": {"size": 5, "episode_length": 8, "segment_length": 4, "reward": {"members": 2},
                          "query_batch": 10, "steps_per_batch": 2, "candidates": 8}}
    page = render_curves(results, "rlds-lang results preferences curves", "curves.png")
    assert "beats random by more than two paired SE at: [10];" in page
    assert "random beats disagreement by more than two paired SE at: [20];" in page
    assert "| 40 | 0.700 ± 0.000 | 0.700 ± 0.058 | +0.000 ± 0.058 | no |" in page
