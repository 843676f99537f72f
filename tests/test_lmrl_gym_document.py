"""``trainers.lmrl_gym_document``: the page's verdicts, normalised scores and BC's diagnosis are computed from
the evaluations and reports it is given."""

from __future__ import annotations

import dataclasses

from trainers.eval import EvalResult
from trainers.lmrl_gym import ConsistencyReport
from trainers.lmrl_gym_document import comparison_lines, diagnosis, render_table
from trainers.lmrl_gym_linear import LinearReport


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
    assert "| ILQL | -2.000 ± 0.041 | 98.6 | -2.04 | 97.7 |" in table


def test_the_diagnosis_compares_bc_with_the_data_policy():
    far = _result("BC", [-6.0] * 19 + [-3.0])  # wins 1 of 20 (the -6 games lost)
    text = diagnosis({"BC": far}, {"success_rate": 0.70})
    assert text.startswith("BC wins 5.0% ± 5.0% of games, the data policy it imitates 70.0%: BC has not learned")
    close = _result("BC", [-6.0] * 3 + [-3.0] * 7)
    assert "BC has learned the behaviour policy" in diagnosis({"BC": close}, {"success_rate": 0.70})


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
