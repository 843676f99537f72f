"""``rlds-lang demo`` (``trainers.experiments.demo``): a reduced run of the whole pipeline prints the table with the
rows random, bc, ilql, optimal and a verdict per learned agent that agrees with the paired differences of its own
games; the verdicts are computed (paired, against random); the guide and its plot are written; the shipped 32-word
list is what its README says it is. The full setting's figures are measured by running the command (docs/demo.md)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import re
from pathlib import Path

import numpy as np
import pytest

from rlds_lang.wordle.words import demo_words, lmrl_gym_words, resolve_word_list
from trainers.cli.main import build_parser, main
from trainers.evaluation.stats import paired_difference
from trainers.evaluation.wordle import EvalResult, load_results
from trainers.experiments import demo
from trainers.experiments.demo import FULL, DemoReport, DemoSettings, Verdict, verdicts

ROWS = ["random", "bc", "ilql", "optimal"]
REDUCED = ["--episodes", "6", "--train-steps", "2", "--eval-games", "6", "--beta-games", "4", "--workers", "1"]


@pytest.fixture(scope="module")
def reduced_run(tmp_path_factory):
    """One reduced ``rlds-lang demo --doc`` run: its printed output, its run folder and its guide."""
    root = tmp_path_factory.mktemp("demo")
    guide = root / "guide" / "demo.md"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["demo", *REDUCED, "--workdir", str(root / "runs"), "--doc", str(guide)])
    (workdir,) = (root / "runs").iterdir()
    return out.getvalue(), workdir, guide


def table_rows(text: str) -> list[list[str]]:
    """The cells of the markdown table's body rows in ``text``."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ")]
    return [row for row in rows[1:] if set(row) != {"---"}]


def test_reduced_demo_prints_the_rows_and_verdicts_of_its_own_games(reduced_run):
    text, workdir, _ = reduced_run
    rows = table_rows(text)
    assert [row[0] for row in rows] == ROWS
    results = {r.name: r for r in load_results(workdir / "results.json")}
    assert [r.games for r in results.values()] == [6] * 4
    assert results["random"].params["prob_smart"] == 0.0  # the uniformly random valid-word agent
    assert results["optimal"].params["guess_pool"] == "all"
    for name in ("bc", "ilql"):
        difference, stderr = paired_difference(results[name], results["random"])
        verb = "beats" if difference > 2 * stderr else "does NOT beat"
        assert f"{name} {verb} random by more than 2 SE: return difference {difference:+.3f} ± {stderr:.3f}" in text
        row = next(row for row in rows if row[0] == name)
        assert row[-2] == f"{difference:+.3f} ± {stderr:.3f}"
    assert "What you are looking at:" in text and "Columns:" in text
    assert "32-word list" in text and "6 optimal, 6 random_mixture games" in text


def test_reduced_demo_plays_ilql_at_the_beta_best_on_held_out_games(reduced_run):
    text, workdir, _ = reduced_run
    line = re.search(r"ILQL's beta on 4 held-out games: (.*); chosen (\S+)", text)
    tried = {float(b): float(r) for b, r in (pair.split(" -> ") for pair in line.group(1).split(", "))}
    assert sorted(tried) == sorted(FULL.beta_grid)
    best = max(tried.values())
    assert float(line.group(2)) == min(b for b, r in tried.items() if r == best)
    results = {r.name: r for r in load_results(workdir / "results.json")}
    assert results["ilql"].params["beta"] == float(line.group(2))
    assert results["bc"].params["beta"] == 0.0


def test_reduced_demo_went_through_record_build_load_and_train(reduced_run):
    text, workdir, _ = reduced_run
    assert sorted(p.name for p in (workdir / "logs").iterdir()) == ["optimal", "random_mixture"]
    assert list((workdir / "tfds").rglob("dataset_info.json"))
    for algorithm in ("bc", "ilql"):
        assert (workdir / algorithm / "checkpoint").is_dir()
        assert (workdir / algorithm / "metrics.jsonl").read_text().strip()
    assert "episodes 12" in text  # the statistics of the dataset tfds.load read back
    assert (workdir / "demo.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_reduced_demo_writes_the_guide_with_its_plot_and_command(reduced_run):
    text, _, guide = reduced_run
    page = guide.read_text(encoding="utf-8")
    assert f"`{demo.DOC_COMMAND}`" in page
    assert "![training curves and returns](demo.png)" in page
    assert (guide.parent / "demo.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [row[0] for row in table_rows(page)] == ROWS
    verdict_lines = [line for line in text.splitlines() if "random by more than 2 SE" in line]
    assert len(verdict_lines) == 2 and all(line.strip() in page for line in verdict_lines)
    assert f"guide -> {guide}" in text


def _result(name: str, rewards: list[float]) -> EvalResult:
    rewards = np.asarray(rewards, dtype=float)
    return EvalResult(name=name, rewards=rewards, guesses=np.minimum(1 - rewards, 6).astype(int), wins=rewards > -6,
                      invalid=0, seconds=0.0, answers=[f"w{i}" for i in range(len(rewards))])


def _report(results: list[EvalResult]) -> DemoReport:
    return DemoReport(FULL, results, verdicts(results), Path("/runs/demo"), Path("/runs/demo/demo.png"), "/ds", 1.0,
                      {"optimal": 1, "random_mixture": 1}, {0.0: -3.0, 16.0: -2.0}, 16.0)


def test_verdicts_are_paired_differences_to_random():
    random = _result("random", [-6, -1, -6, -2, -6, -3, -6, -1])
    # bc is random plus a small steady gain: beyond 2 SE only because the games are paired (unpaired SEs overlap)
    bc = _result("bc", [r + g for r, g in zip(random.rewards, [0.5, 0.4, 0.5, 0.6, 0.5, 0.4, 0.5, 0.6])])
    ilql = _result("ilql", [-6, -6, -6, -1, -6, -6, -6, -1])
    found = {v.agent: v for v in verdicts([random, bc, ilql, _result("optimal", [-1] * 8)])}
    assert found["bc"].difference == pytest.approx(0.5)
    assert found["bc"].beats_random
    assert 2 * (random.stderr ** 2 + bc.stderr ** 2) ** 0.5 > found["bc"].difference  # unpaired: not beyond 2 SE
    assert found["ilql"].difference < 0 and not found["ilql"].beats_random
    assert found["bc"].win_rate == bc.win_rate


def test_report_text_says_each_computed_verdict():
    random = _result("random", [-6, -1, -6, -2, -6, -3])
    bc = _result("bc", [-1, -2, -1, -2, -1, -2])
    ilql = _result("ilql", [-6, -1, -6, -2, -6, -2])
    text = _report([random, bc, ilql, _result("optimal", [-1] * 6)]).text()
    assert re.search(r"^  bc beats random by more than 2 SE", text, re.M)
    assert re.search(r"^  ilql does NOT beat random by more than 2 SE", text, re.M)
    assert [row[0] for row in table_rows(text)] == ROWS


@pytest.mark.parametrize("difference, stderr, beats", [(0.5, 0.2, True), (0.4, 0.2, False), (-1.0, 0.1, False),
                                                       (0.1, 0.0, True)])
def test_verdict_threshold_is_strictly_beyond_two_standard_errors(difference, stderr, beats):
    assert Verdict("bc", difference, stderr, 0.5).beats_random is beats


def test_help_shows_the_full_settings():
    defaults = vars(build_parser().parse_args(["demo"]))
    for field in ("episodes", "train_steps", "eval_games", "beta_games", "workers", "seed"):
        assert defaults[field] == getattr(FULL, field)
    assert defaults["doc"] is None


def test_settings_reject_sizes_that_cannot_run():
    with pytest.raises(ValueError, match="DemoSettings.eval_games"):
        dataclasses.replace(FULL, eval_games=1)
    with pytest.raises(ValueError, match="DemoSettings.train_steps"):
        DemoSettings(train_steps=0)


def test_demo_word_list_is_the_documented_selection_with_its_licence():
    words = demo_words()
    assert words.name == "demo_words" and len(words) == 32
    assert words.words == lmrl_gym_words().words[::13][:32]
    assert resolve_word_list("demo_words") is words
    folder = Path(demo.__file__).resolve().parents[2] / "rlds_lang" / "wordle" / "data" / "demo"
    assert "MIT License" in (folder / "LICENSE").read_text()
    assert "NR%13==1" in (folder / "README.md").read_text()


@pytest.mark.parametrize("ilql_rewards, said", [([-1, -2, -1, -2, -1, -1], "ILQL plays better than BC"),
                                                 ([-6, -6, -6, -6, -6, -6], "ILQL plays worse than BC"),
                                                 ([-3, -1, -2, -3, -2, -1], "within 2 SE of each other")])
def test_ilql_against_bc_is_computed_on_the_same_games(ilql_rewards, said):
    bc = _result("bc", [-3, -2, -2, -3, -2, -2])
    results = [_result("random", [-6] * 6), bc, _result("ilql", ilql_rewards), _result("optimal", [-1] * 6)]
    line = _report(results).ilql_against_bc()
    difference, stderr = paired_difference(results[2], bc)
    assert line == f"ILQL − BC (same games): {difference:+.3f} ± {stderr:.3f}: {line.split(': ', 2)[2]}"
    assert said in line


def test_random_agent_guesses_every_list_word_alike():
    agent, env = demo.random_agent(), demo.make_env()
    env.set_next_answer("tacit")
    observations = [env.reset().observation, env.step("elect").observation]  # feedback rules most words out
    np.testing.assert_allclose(agent.distribution(observations, ["elect"]), np.full(32, 1 / 32))
    assert list(agent.knowledge.guesses.words) == list(demo_words().words)
