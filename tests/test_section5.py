"""trainers.experiments.section5: the ILQL paper's Section-5 ranking test, end to end on a small build, and its verdict."""

import json

import pytest

from trainers.cli.main import main
from trainers.experiments.section5 import (
    ROW_TAU,
    ROWS,
    TARGET_FRACTION,
    Game,
    render,
    tabular_prediction,
    tabular_q,
)


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
        assert (f"| {name} | {ROW_TAU[name]} | {r['initial']:.3f} ({r['initial_pairs']}) | {r['q_first']:.2f} | "
                f"{r['q_others']:.2f} | {r['predicted']:.3f} ") in document
        assert 0.0 <= r["predicted"] <= 1.0
    side = "below" if data["after_optimal_first"] < data["after_other_first"] else "above"
    assert f"So the data's own values rank `raise` {side} the other first guesses" in document
    assert "![What each row values the first guesses at](section5-first-move.png)" in document
    assert (tmp_path / "section5-first-move.png").stat().st_size > 1000


def _ranks(ilql: float, mc: float) -> dict:
    common = {"initial_pairs": 10, "branch": 0.5, "branch_pairs": 10, "predicted": 0.5, "q_first_predicted": -4.0,
              "branch_predicted": 1.0, "q_first": -5.0, "q_others": -4.0}
    return {"MC returns": {"initial": mc, **common}, "ILQL (tau 0.7)": {"initial": ilql - 0.1, **common},
            "ILQL (tau 0.9)": {"initial": ilql, **common}, "ILQL (tau 0.95)": {"initial": ilql - 0.2, **common}}


@pytest.mark.parametrize("ilql, word", [(TARGET_FRACTION, "**Reached**"), (TARGET_FRACTION - 0.01, "**Not reached**")])
def test_the_verdict_is_computed_from_the_best_ilql_row(ilql, word):
    data = {"games": 100, "optimal_first": "raise", "share": {"optimal": 0.1, "adversarial": 0.45, "suboptimal": 0.45},
            "mean": {"optimal": -2.5, "adversarial": -6.0, "suboptimal": -4.3}, "after_optimal_first": -5.4,
            "after_other_first": -4.3, "optimal_4_turns": 0.47}
    document = render(data, _ranks(ilql, 0.05), {name: 1.0 for name in _ranks(0, 0)}, 100, "cmd")
    verdict = document.split("\n\n")[1]
    assert verdict.startswith(word) and f"(ILQL (tau 0.9)) reaches {ilql:.3f}" in verdict and "MC returns 0.050" in verdict


def _game(episode_id, policy, texts, moves, rewards, parent="", turn=-1):
    """A recorded game as ``trainers.experiments.section5`` reads it: one step per observation, the last without a move."""
    steps = [{"observation": {"text": t.encode()}, "action": m.encode(), "reward": r}
             for t, m, r in zip(texts, [*moves, ""], [*rewards, 0.0])]
    return Game(episode_id, policy, parent, turn, steps)


def test_the_tabular_solution_values_states_by_their_expectile_and_the_data_by_its_mean():
    prefix = (["", "o1a", "o1b"], ["raise", "m1"], [-1.0, -1.0])
    games = [_game("o1", "optimal", [*prefix[0], "o1c", "o1d"], [*prefix[1], "m2", "m3"], [*prefix[2], -1.0, 0.0]),
             *[_game(f"b{i}", "wrong_takeover", [*prefix[0], f"b{i}c", f"b{i}d", f"b{i}e", f"b{i}f"],
                     [*prefix[1], f"w{i}", "x", "y", "z"], [-1.0] * 6, parent="o1", turn=2) for i in range(3)],
             _game("o2", "optimal", ["", "o2a"], ["raise"], [0.0]),
             _game("s1", "random_mixture", ["", "s1a", "s1b", "s1c", "s1d", "s1e", "s1f"],
                   ["xylyl", "a", "b", "c", "d", "e"], [-1.0] * 6),
             _game("s2", "random_mixture", ["", "s2a", "s2b", "s2c"], ["abbey", "f", "g"], [-1.0, -1.0, -1.0])]
    # the data's own values: o1's third state is worth mean(-1, -4, -4, -4) = -3.25, so raise is worth
    # (4 * (-2 - 3.25) + 0) / 5 = -4.2 (the mean return of the games that open with it), below abbey's -3
    mean = tabular_prediction(games, 0.5)
    assert mean["q_first"] == pytest.approx(-4.2) and mean["initial"] == 0.5 and mean["branch"] == 1.0
    assert tabular_q(games, 0.5)[("",)]["abbey"] == -3.0
    high = tabular_prediction(games, 0.99)  # near the max there: about -1.09, so raise is worth about -2.47
    assert -2.6 < high["q_first"] < -2.4 and high["initial"] == 1.0 and high["branch"] == 1.0
