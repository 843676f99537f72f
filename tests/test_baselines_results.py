"""``rlds-lang results baselines`` (trainers.experiments.baselines): the page end to end at a tiny setting, and its
verdicts computed from the results."""

import dataclasses

import numpy as np
import pytest

from trainers.cli.main import main
from trainers.evaluation.stats import paired_separation
from trainers.evaluation.wordle import EvalResult, load_results
from trainers.experiments.baselines.document import dt_trend, target_status
from trainers.experiments.baselines.run import dt_targets
from trainers.experiments.baselines.settings import SETTINGS, TARGETS

SIDE_WORDS = {1: "beats BC by more than 2 SE", -1: "is below BC by more than 2 SE", 0: "is not separated from BC by 2 SE"}
TREND_WORDS = {1: "rises with the target", -1: "falls as the target rises", 0: "does not rise with the target"}


def test_results_baselines_writes_the_page_with_verdicts_computed_from_its_results(tmp_path):
    out = tmp_path / "baselines.md"
    command = ["results", "baselines", "--data-dir", str(tmp_path / "tfds"), "--runs", str(tmp_path / "runs"),
               "--small", "12", "--steps", "2", "--games", "4", "--beta-games", "2", "--beta-grid", "1,4",
               "--dt-targets=-6,-2", "--section5-pairs", "4", "--top-advantage-episodes", "4", "--out", str(out)]
    with pytest.raises(ValueError, match="rows are"):
        main([*command, "--train-only", "SARSA"])
    main(command)
    page = out.read_text()
    paragraphs = page.split("\n\n")
    assert paragraphs[0] == ("# The ILQL code's baselines on Wordle: BC, %BC, ILQL, CQL, DT, ψ, utterance ILQL and "
                             "CHAI")
    assert paragraphs[2].startswith("Tried: CQL: `cql` {") or paragraphs[1].startswith("**All targets met**")
    assert (f"`rlds-lang results baselines --data-dir {tmp_path / 'tfds'} --runs {tmp_path / 'runs'} --small 12 "
            "--steps 2 --build-workers 1 --games 4 --eval-seed 0 --decodings sample --beta-games 2 --beta-grid 1,4 "
            f"--dt-targets -6,-2 --section5-pairs 4 --top-advantage-episodes 4 --out {out}`") in page
    assert " at commit " in page
    for setting in SETTINGS:
        section = page.split(f"## {setting.title}\n")[1].split("\n## ")[0]
        results = {r.name: r for r in load_results(out.with_name(f"baselines-{setting.key}.json"))}
        bc = results["BC"]
        for row in setting.rows:  # every row's verdict to BC is the one its per-game results give
            result = results[row.name]
            assert f"| {row.name} | `{row.algorithm}` | {result.mean_reward:.3f} ± {result.stderr:.3f} |" in section
            if row.name != "BC":
                side = paired_separation(result, bc)[2]
                assert f"{row.name} {SIDE_WORDS[side]}." in section
        low, high = results["DT R=-6"], results["DT R=-2"]
        assert f"the achieved return {TREND_WORDS[paired_separation(high, low)[2]]}" in section
        assert "### What was trained" in section and "### Paired differences to BC" in section
        if setting.key == "section5":
            assert "| utterance ILQL | not measured: utterance-level Q |" in section
            assert "| CHAI | not measured: utterance-level Q |" in section
            assert any(line.startswith(f"| {setting.rows[2].name} | ") and "(4) |" in line
                       for line in section.splitlines())
        else:
            assert "### Top advantage: CQL" in section and "| top 1 | `" in section
            met = [paired_separation(results[row], results[base])[2] == 1 for row, base in TARGETS]
            assert paragraphs[1].startswith("**All targets met**" if all(met) else "**Targets not met**")


def _result(name, rewards):
    return EvalResult(name, rewards, [4] * len(rewards), [r > -6 for r in rewards], 0, 1.0,
                      answers=[f"w{i}" for i in range(len(rewards))])


@dataclasses.dataclass
class _Outcome:
    by_name: dict
    trained: dict = dataclasses.field(default_factory=dict)


BC = [-5.0, -4.0, -6.0, -5.0, -4.0, -5.0, -6.0, -4.0]
BETTER = [r + 1 + 0.1 * (i % 2) for i, r in enumerate(BC)]


def test_the_targets_are_met_only_when_every_target_row_beats_bc_by_2_paired_se():
    rows = {"BC": _result("BC", BC), "CQL": _result("CQL", BETTER), "psi": _result("psi", BETTER),
            "utterance ILQL": _result("utterance ILQL", BETTER)}
    assert target_status(_Outcome(rows)).startswith("**All targets met**")
    rows["psi"] = _result("psi", BC[::-1])
    status = target_status(_Outcome(rows))
    assert status.startswith("**Targets not met** on LMRL-Gym's Wordle (2 of 3")
    assert "- psi − BC = +0.000" in status and "psi is not separated from BC by 2 SE." in status
    assert "Tried: —" in status  # no trained runs were given


def test_the_decision_transformers_trend_compares_its_highest_and_lowest_target():
    low, mid = _result("DT R=-6", BC), _result("DT R=-4", BC)
    assert dt_trend([(-6.0, low), (-4.0, mid), (-2.0, _result("DT R=-2", BETTER))])[1] == 1
    assert "the achieved return rises with the target" in dt_trend([(-6.0, low), (-2.0, _result("x", BETTER))])[0]
    assert dt_trend([(-6.0, _result("x", BETTER)), (-2.0, low)])[1] == -1
    assert dt_trend([(-6.0, low), (-2.0, _result("x", BC[::-1]))])[1] == 0


def test_the_target_returns_are_sorted_and_a_bad_sweep_is_named():
    assert dt_targets("-2, -6,-4") == [-6.0, -4.0, -2.0] and dt_targets("-1,-9") == [-9.0, -1.0]
    with pytest.raises(ValueError, match="--dt-targets: expected"):
        dt_targets("-2,high")
    with pytest.raises(ValueError, match="at least two"):
        dt_targets("-2")
    assert np.isfinite(dt_targets("0,-1")).all()
