"""trainers.section5: the ILQL paper's Section-5 ranking test, end to end on a small build, and its verdict."""

import json

import pytest

from trainers.cli import main
from trainers.section5 import ROW_TAU, ROWS, TARGET_FRACTION, Game, render, tabular_prediction


def test_results_setting_section5_writes_the_document(tmp_path, capsys):
    out = tmp_path / "section5.md"
    common = ["results", "--setting", "section5", "--data-dir", str(tmp_path / "tfds"), "--runs", str(tmp_path / "runs"),
              "--small", "12", "--steps", "2"]
    with pytest.raises(ValueError, match="rows are"):
        main([*common, "--train-only", "SARSA"])
    main([*common, "--train-only", "MC returns", "--out", str(out)])
    assert not out.exists() and (tmp_path / "runs" / "section5" / "MC_returns" / "checkpoint").is_dir()
    main([*common, "--section5-pairs", "8", "--out", str(out)])
    document, figures = out.read_text(), json.loads(out.with_suffix(".json").read_text())
    assert document.startswith("# The ILQL paper's Section-5 ranking test")
    assert "rlds-lang results --setting section5 --small 12 --steps 2 --section5-pairs 8" in document
    data, ranks = figures["data"], figures["ranks"]
    assert sum(data["share"].values()) == pytest.approx(1.0) and data["mean"]["adversarial"] == -6.0
    assert data["optimal_first"] == "raise"  # the optimal policy's first guess on the official lists
    assert set(ranks) == {e.name for e in ROWS}
    for name, r in ranks.items():
        assert 0.0 <= r["initial"] <= 1.0 and 0 < r["initial_pairs"] <= 8 and 0 < r["branch_pairs"] <= 8
        assert f"| {name} | {ROW_TAU[name]} | {r['initial']:.3f} ({r['initial_pairs']}) | {r['predicted']:.3f} " in document
        assert 0.0 <= r["predicted"] <= 1.0
    side = "below" if data["after_optimal_first"] < data["after_other_first"] else "above"
    assert f"So the data's own values rank `raise` {side} the other first guesses" in document


def _ranks(ilql: float, mc: float) -> dict:
    common = {"initial_pairs": 10, "branch": 0.5, "branch_pairs": 10, "predicted": 0.5, "q_first_predicted": -4.0}
    return {"MC returns": {"initial": mc, **common}, "ILQL (tau 0.7)": {"initial": ilql - 0.1, **common},
            "ILQL (tau 0.9)": {"initial": ilql, **common}}


@pytest.mark.parametrize("ilql, word", [(TARGET_FRACTION, "**Reached**"), (TARGET_FRACTION - 0.01, "**Not reached**")])
def test_the_verdict_is_computed_from_the_best_ilql_row(ilql, word):
    data = {"games": 100, "optimal_first": "raise", "share": {"optimal": 0.1, "adversarial": 0.45, "suboptimal": 0.45},
            "mean": {"optimal": -2.5, "adversarial": -6.0, "suboptimal": -4.3}, "after_optimal_first": -5.4,
            "after_other_first": -4.3, "optimal_4_turns": 0.47}
    document = render(data, _ranks(ilql, 0.05), {name: 1.0 for name in _ranks(0, 0)}, 100, "cmd")
    verdict = document.split("\n\n")[1]
    assert verdict.startswith(word) and f"(ILQL (tau 0.9)) reaches {ilql:.3f}" in verdict and "MC returns 0.050" in verdict


def _game(episode_id, kind, rewards, parent=""):
    policy = {"optimal": "optimal", "suboptimal": "random_mixture", "adversarial": "wrong_takeover"}[kind]
    return Game(episode_id, policy, parent, 2 if kind == "adversarial" else -1,
                [{"reward": r, "action": b"raise" if kind != "suboptimal" else b"xylyl"} for r in [*rewards, 0.0]])


def test_the_tabular_prediction_takes_the_expectile_at_each_branched_state():
    games = [_game("o1", "optimal", [-1, -1, -1, 0]),  # 4 turns: branched, its own rest -1
             *[_game(f"b{i}", "adversarial", [-1, -1, -1, -1, -1, -1], "o1") for i in range(3)],  # rest -4 each
             _game("o2", "optimal", [-1, 0]),  # 2 turns: not branched, rest 0
             _game("s1", "suboptimal", [-1] * 6), _game("s2", "suboptimal", [-1, -1, -1, 0])]
    mean = tabular_prediction(games, 0.5)  # the data's own values: o1's state is worth (-1 - 4 * 3) / 4
    assert mean["q_first"] == pytest.approx(((-2 - 13 / 4) + -1) / 2)
    high = tabular_prediction(games, 0.99)
    assert high["q_first"] > mean["q_first"] and high["q_first"] < (-3 + -1) / 2 + 1e-9
    assert mean["initial"] == 0.5  # s1 (-6) below -3.125, s2 (-3) above it: the data's values rank the first guess low
    assert high["initial"] == 1.0  # near the max, o1's state is worth about its own -1: -2.04, above both
