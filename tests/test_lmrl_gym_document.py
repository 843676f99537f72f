"""``trainers.experiments.lmrl_gym.document``: the page's verdicts, normalised scores and BC's diagnosis are computed from
the evaluations and reports it is given."""

from __future__ import annotations

import dataclasses

from trainers.evaluation.wordle import EvalResult
from trainers.experiments.lmrl_gym.document import (
    comparison_lines,
    diagnosis,
    gains_over_bc,
    render_online_rounds,
    render_table,
)
from trainers.experiments.lmrl_gym.linear import LinearReport
from trainers.experiments.lmrl_gym.setting import ConsistencyReport


def _result(name, rewards):
    return EvalResult(name, rewards, [4] * len(rewards), [r > -6 for r in rewards], 0, 1.0)


def test_verdicts_and_normalised_scores_are_computed():
    by_name = {"BC": _result("BC", [-4, -3, -5, -4]), "%BC (top 30%)": _result("%BC (top 30%)", [-4, -4, -4, -4]),
               "ILQL": _result("ILQL", [-2, -2.1, -1.9, -2]), "MC returns": _result("MC returns", [-4, -3, -5, -4])}
    lines, met = comparison_lines(by_name)
    assert met == [True, True, False, False]
    assert lines[0].startswith("- ILQL − BC = +2.000") and "beats BC by more than 2 SE" in lines[0]
    assert "is not separated from BC by 2 SE" in lines[2]
    table = render_table([by_name["ILQL"]], dataset_mean=-4.12, scripted_mean=-1.94)
    assert "| ILQL | -2.000 ± 0.041 | 98.6 | -2.04 | 97.7 | — | — |" in table  # no BC row: no gain over it


def test_the_table_gives_each_rows_gain_over_bc_beside_the_published_gain():
    bc, ilql = _result("BC", [-4, -3, -5, -4]), _result("ILQL", [-2, -2.5, -1.5, -3])
    scripted = _result("scripted", [-2, -2, -2, -2])
    lines = render_table([bc, ilql, scripted], dataset_mean=-4.12, scripted_mean=-1.94).splitlines()
    assert lines[2].endswith("| -2.81 | 79.9 | — | — |")  # BC itself
    # per-game differences 2, 0.5, 3.5, 1: mean 1.75, SE = std(ddof=1) / 2 = 1.323 / 2
    # LMRL-Gym: its unrounded returns (load_results.py), -2.0354 - (-2.8142); the scripted bound its -1.935
    assert lines[3].endswith("| -2.04 | 97.7 | +1.750 ± 0.661 | +0.78 |")
    assert lines[4].endswith("| -1.94 | 100.0 | +2.000 ± 0.408 | +0.88 |")


def test_gains_over_bc_are_compared_with_the_published_gains():
    bc = _result("BC", [-5, -4, -6, -5])
    by_name = {"BC": bc, "MC returns": _result("MC returns", [-4, -3, -5, -4]),  # +1, published +0.65
               "ILQL": _result("ILQL", [-5, -4, -6, -4]),  # +0.25 ± 0.25, published +0.77: 2.1 SE short
               "online %BC": _result("online %BC", [-4.5, -3.5, -5.5, -4.5])}  # +0.5, published +0.66, SE 0
    text = gains_over_bc(by_name)
    assert "MC returns +1.000 ± 0.000 (LMRL-Gym +0.65); ILQL +0.250 ± 0.250 (LMRL-Gym +0.78)" in text
    assert "1 of 3 rows that start from BC add at least the published gain" in text
    assert "our BC itself is 2.186 below LMRL-Gym's BC (-5.000 against -2.8142)" in text
    # a BC above LMRL-Gym's is said to be above (the page once said "-0.034 below" of -2.776 against -2.81)
    by_name["BC"] = _result("BC", [-2.776] * 4)
    assert "our BC itself is 0.038 above LMRL-Gym's BC (-2.776 against -2.8142)" in gains_over_bc(by_name)


def test_the_online_rounds_table_names_the_best_and_the_last_round():
    rounds = [{"round": k, "games": 1000, "mean_return": m, "success_rate": w, "kept": 300, "kept_min_return": -2.0,
               "steps": 300, "loss": 0.7, "seconds": 100.0}
              for k, (m, w) in enumerate([(-4.605, 0.544), (-3.181, 0.888), (-3.571, 0.747)])]
    text = render_online_rounds(rounds)
    assert "| 1 | 1000 | -3.181 | 0.888 | 300 | -2 |" in text
    assert "The best round played -3.181 (round 1); the last -3.571" in text
    assert render_online_rounds([]) == "No rounds were run.\n"


def test_the_diagnosis_compares_bc_with_the_data_policy():
    far = _result("BC", [-6.0] * 19 + [-3.0])  # wins 1 of 20 (the -6 games lost)
    text = diagnosis({"BC": far}, {"success_rate": 0.70})
    assert text.startswith("Sampled at temperature 1, as the data policy samples its guesses, BC wins 5.0% ± 5.0% "
                           "of games, the data policy it imitates 70.0%: BC has not learned")
    close = _result("BC", [-6.0] * 3 + [-3.0] * 7)
    assert "BC has learned the behaviour policy" in diagnosis({"BC": close}, {"success_rate": 0.70})
    # without a temperature-1 table there is nothing to compare: a sharper decoding can beat the data it imitates
    assert "behaviour policy" not in diagnosis(None, {"success_rate": 0.70})


def test_the_diagnosis_states_how_much_of_the_data_bc_learned():
    bc = _result("BC", [-6.0] * 19 + [-3.0])
    report = ConsistencyReport(states=480, model_mass=0.10, behaviour_mass=0.40, uniform_mass=0.04, model_nats=5.94,
                               behaviour_nats=5.25, uniform_nats=6.07)
    text = diagnosis({"BC": bc}, {"success_rate": 0.70}, report)
    assert "BC puts 10.0% of its probability on the words consistent" in text and "480 held-out states" in text
    assert "BC has learned 17% of the one regularity" in text  # (0.10 - 0.04) / (0.40 - 0.04)
    assert "5.940 nats per guess" in text and "5.250" in text and "6.070" in text

    linear = LinearReport(steps=[16, 32], nats=[5.90, 5.95], behaviour_nats=5.25, uniform_nats=6.07, states=2400)
    text = diagnosis({"BC": bc}, {"success_rate": 0.70}, report, linear)
    assert "gets to 5.900 nats per guess on 2400 held-out guesses: BC has not reached" in text  # 5.94 > 5.90
    better = dataclasses.replace(report, model_nats=5.80)
    assert "BC has reached what a linear model" in diagnosis({"BC": bc}, {"success_rate": 0.70}, better, linear)


def test_a_row_clearly_below_its_baseline_is_no_met_comparison():
    by_name = {"BC": _result("BC", [-4, -3, -5, -4]), "%BC (top 30%)": _result("%BC (top 30%)", [-4, -4, -4, -4]),
               "ILQL": _result("ILQL", [-2, -2.1, -1.9, -2]), "MC returns": _result("MC returns", [-6, -5, -7, -6])}
    lines, met = comparison_lines(by_name)
    assert met[2] is False and "is below BC by more than 2 SE" in lines[2]  # -2 on every game: SE 0, inf SE


def test_a_gain_within_two_se_of_the_published_one_reaches_it():
    bc = _result("BC", [-5, -4, -6, -5])
    by_name = {"BC": bc, "MC returns": _result("MC returns", [-4, -3, -5, -4]),  # +1 above the published +0.65
               "ILQL": _result("ILQL", [-5, -4, -6, -4]),  # 2.1 SE short of the published +0.77
               # differences 0.5, 0.7, 0.4, 0.6: +0.55 ± 0.065, 1.7 SE short of the published +0.66: within 2 SE
               "online %BC": _result("online %BC", [-4.5, -3.3, -5.6, -4.4])}
    assert "2 of 3 rows that start from BC add at least the published gain" in gains_over_bc(by_name)


def _outcome(key, rows):
    from trainers.experiments.common import DECODINGS
    from trainers.experiments.lmrl_gym.decodings import DecodingOutcome

    results = [_result(name, rewards) for name, rewards in rows.items()]
    return DecodingOutcome(DECODINGS[key], len(results[0].rewards), results, [])


ORDERED = {"BC": [-4, -3, -5, -4], "%BC (top 30%)": [-4, -4, -4, -4], "MC returns": [-2, -2.1, -1.9, -2],
           "ILQL": [-2, -2.2, -1.9, -2], "scripted": [-2, -2, -2, -2]}


def test_the_headline_decoding_is_the_one_whose_bc_is_closest_to_lmrl_gyms():
    from trainers.experiments.lmrl_gym.decodings import headline_decoding

    far, near = _outcome("sample", {**ORDERED, "BC": [-5, -5, -5, -5]}), _outcome("greedy", {**ORDERED, "BC": [-3] * 4})
    assert headline_decoding([far, near]).decoding.key == "greedy"  # |-3 - (-2.81)| < |-5 - (-2.81)|
    assert headline_decoding([near, far]).decoding.key == "greedy"


def test_each_decoding_says_whether_it_reproduces_the_published_ordering():
    from trainers.experiments.lmrl_gym.document import decoding_status, normalised_gap, ordering_reproduced

    ordered, flat = _outcome("t0.3", ORDERED), _outcome("sample", {**ORDERED, "ILQL": [-4, -3, -5, -4]})
    assert ordering_reproduced(ordered) and not ordering_reproduced(flat)
    data = {"mean_return": -4.12}
    assert "**is reproduced** under: sampling at temperature 0.3." in decoding_status([flat, ordered], data)
    status = decoding_status([flat], data)
    assert status.startswith("**No decoding reproduces the published ordering**")
    assert "Closest: sampling at temperature 1 (2 of 4 comparisons met" in status  # MC's two comparisons
    from rlds_lang.wordle import lmrl_gym

    expected = [abs(lmrl_gym.normalised_score(sum(r) / 4, -4.12, -2.0) - lmrl_gym.published_normalised(n))
                for n, r in ORDERED.items() if n != "scripted"]
    assert normalised_gap(ordered, -4.12, -2.0) == sum(expected) / len(expected)


def test_bc_is_compared_with_the_data_policy_as_sampled_at_temperature_1():
    from trainers.experiments.lmrl_gym.document import temperature_one

    sharp, sampled = _outcome("t0.3", {**ORDERED, "BC": [-3] * 4}), _outcome("sample", {**ORDERED, "BC": [-6] * 4})
    assert temperature_one([sharp, sampled])["BC"].win_rate == 0.0  # the temperature-1 table, not the first
    assert temperature_one([sharp]) is None


def test_lmrl_gyms_columns_use_its_load_results_constants():
    """LMRL-Gym's ``load_results.py`` normalises its unrounded returns with avg -4.121715 and max -1.935: that gives
    its published scores to the printed digit, where the rounded -4.12 and -1.94 give BC 80.0, not 79.9."""
    from rlds_lang.wordle import lmrl_gym

    assert (lmrl_gym.LOAD_RESULTS_DATASET_MEAN, lmrl_gym.LOAD_RESULTS_SCRIPTED) == (-4.121715, -1.935)
    assert lmrl_gym.LOAD_RESULTS_RETURNS["BC"] == -2.814208984375
    for name, unrounded in lmrl_gym.LOAD_RESULTS_RETURNS.items():
        raw, score = lmrl_gym.PUBLISHED_TABLE[name]
        assert round(unrounded, 2) == raw and f"{lmrl_gym.published_normalised(name):.1f}" == f"{score:.1f}", name
    assert f"{lmrl_gym.normalised_score(-2.81, -4.12, -1.94):.1f}" == "80.0"
    table = render_table([_result("BC", [-4, -3, -5, -4])], dataset_mean=-4.12, scripted_mean=-1.94)
    assert table.splitlines()[2].endswith("| -2.81 | 79.9 | — | — |")
