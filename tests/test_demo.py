"""``rlds-lang demo`` (``trainers.experiments.demo``, ``trainers.experiments.demo_report``): a reduced run of the whole
pipeline prints a short screen -- five progress lines, the table with the rows random, bc, ilql, optimal, the three
verdicts (ILQL against BC first) computed from the paired differences of its own games, the agents' opening words
-- and writes its report, results and plot into its run folder and the guide; the verdicts are computed, never
typed (checked on made-up results where the answer is known); the shipped 32-word list is what its README says it
is. The full setting's figures are measured by running the command (docs/demo.md)."""

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
from trainers.experiments.demo import FULL, DemoReport, DemoSettings
from trainers.experiments.demo_report import COMPARISONS, PolicyData, Verdict, opening_shares, verdicts

ROWS = ["random", "bc", "ilql", "optimal"]
REDUCED = ["--episodes", "10", "--train-steps", "2", "--eval-games", "6", "--beta-games", "4", "--workers", "1"]
#: the most lines the command may print (its progress lines, the table, the verdicts and the pointers).
MAX_LINES = 60


@pytest.fixture(scope="module")
def reduced_run(tmp_path_factory):
    """One reduced ``rlds-lang demo --doc`` run: its printed output, its run folder and its guide."""
    root = tmp_path_factory.mktemp("demo")
    guide = root / "guide" / "demo.md"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["demo", *REDUCED, "--workdir", str(root / "runs"), "--doc", str(guide), "--doc-seeds", "1"])
    (workdir,) = (root / "runs").iterdir()
    return out.getvalue(), workdir, guide


def table_rows(text: str) -> list[list[str]]:
    """The cells of the markdown table's body rows in ``text`` (the first table)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| agent "))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("| "):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def test_reduced_demo_prints_a_short_screen_with_the_verdicts_of_its_own_games(reduced_run):
    text, workdir, _ = reduced_run
    lines = text.splitlines()
    assert len(lines) <= MAX_LINES
    assert [line[:5] for line in lines if line.startswith("[")] == ["[1/5]", "[2/5]", "[3/5]", "[4/5]", "[5/5]"]
    rows = table_rows(text)
    assert [row[0] for row in rows] == ROWS
    results = {r.name: r for r in load_results(workdir / "results.json")}
    assert [r.games for r in results.values()] == [6] * 4
    assert results["random"].params["prob_smart"] == 0.0  # the uniformly random valid-word agent
    assert results["optimal"].params["guess_pool"] == "all"
    for agent, baseline in COMPARISONS:
        difference, stderr = paired_difference(results[agent], results[baseline])
        verb = "beats" if difference > 2 * stderr else ("is worse than" if difference < -2 * stderr else
                                                         "does NOT beat")
        said = [line for line in lines if line.startswith(f"  {agent} ") and f" {baseline} by more than 2 SE" in line]
        assert len(said) == 1 and said[0].startswith(
            f"  {agent} {verb} {baseline} by more than 2 SE: return difference {difference:+.3f} ± {stderr:.3f} (")
    assert lines.index(next(line for line in lines if line.startswith("  ilql ") and " bc " in line)) < \
        lines.index(next(line for line in lines if line.startswith("  ilql ") and " random " in line))
    for name in ("random", "ilql", "optimal"):
        difference, stderr = paired_difference(results[name], results["bc"])
        assert next(row for row in rows if row[0] == name)[-2] == f"{difference:+.3f} ± {stderr:.3f}"


def test_reduced_demo_counts_the_opening_words_of_its_own_games(reduced_run):
    text, workdir, _ = reduced_run
    results = load_results(workdir / "results.json")
    shares = opening_shares(results)
    word = next(iter(shares["optimal"]))
    line = next(line for line in text.splitlines() if line.startswith("Opening words:"))
    assert f"the expert opened {shares['optimal'][word]:.0%} of its games with {word!r}" in line
    for name in ("random", "bc", "ilql"):
        assert f"{name} {shares[name].get(word, 0.0):.0%}" in line


def test_reduced_demo_records_mostly_random_play_and_reads_it_back(reduced_run):
    text, workdir, _ = reduced_run
    assert sorted(p.name for p in (workdir / "logs").iterdir()) == ["optimal", "random_mixture"]
    assert "recording 3 expert and 7 random games" in text
    line = next(line for line in text.splitlines() if line.startswith("[3/5] tfds.load"))
    assert "optimal 3 games" in line and "random_mixture 7 games" in line
    assert list((workdir / "tfds").rglob("dataset_info.json"))
    for algorithm in ("bc", "ilql"):
        assert (workdir / algorithm / "checkpoint").is_dir()
        assert (workdir / algorithm / "metrics.jsonl").read_text().strip()


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


def test_reduced_demo_writes_its_report_into_the_run_folder_and_the_guide(reduced_run):
    text, workdir, guide = reduced_run
    assert f"This run (report.md, results.json, demo.png, the data and both checkpoints): {workdir}" in text
    report = (workdir / "report.md").read_text(encoding="utf-8")
    assert "![training curves and returns](demo.png)" in report
    assert (workdir / "demo.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = guide.read_text(encoding="utf-8")
    assert f"`{demo.DOC_COMMAND}`" in page
    assert "![training curves and returns](demo.png)" in page
    assert (guide.parent / "demo.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [row[0] for row in table_rows(page)] == ROWS
    verdict_lines = [line.strip() for line in text.splitlines() if " by more than 2 SE: " in line]
    assert len(verdict_lines) == 3 and all(f"- {line}" in page for line in verdict_lines)
    assert f"guide -> {guide}" in text


def _result(name: str, rewards: list[float], openings: list[str] | None = None) -> EvalResult:
    rewards = np.asarray(rewards, dtype=float)
    actions = [[word] for word in openings] if openings else []
    return EvalResult(name=name, rewards=rewards, guesses=np.minimum(1 - rewards, 6).astype(int), wins=rewards > -6,
                      invalid=0, seconds=0.0, answers=[f"w{i}" for i in range(len(rewards))], actions=actions)


def _report(results: list[EvalResult], seed: int = 0) -> DemoReport:
    return DemoReport(dataclasses.replace(FULL, seed=seed), results, verdicts(results), Path("/runs/demo"),
                      Path("/runs/demo/demo.png"), "/ds", 1.0, {"optimal": 1, "random_mixture": 1},
                      {"optimal": PolicyData(1, -1.0, 1.0), "random_mixture": PolicyData(1, -6.0, 0.0)},
                      {0.0: -3.0, 16.0: -2.0}, 16.0, opening_shares(results))


def test_verdicts_are_paired_differences_on_the_same_games():
    random = _result("random", [-6, -1, -6, -2, -6, -3, -6, -1])
    # bc is random plus a small steady gain: beyond 2 SE only because the games are paired (unpaired SEs overlap)
    bc = _result("bc", [r + g for r, g in zip(random.rewards, [0.5, 0.4, 0.5, 0.6, 0.5, 0.4, 0.5, 0.6])])
    ilql = _result("ilql", [-6, -6, -6, -1, -6, -6, -6, -1])
    found = {(v.agent, v.baseline): v for v in verdicts([random, bc, ilql, _result("optimal", [-1] * 8)])}
    assert list(found) == list(COMPARISONS)
    assert found["bc", "random"].difference == pytest.approx(0.5) and found["bc", "random"].beats
    assert 2 * (random.stderr ** 2 + bc.stderr ** 2) ** 0.5 > 0.5  # unpaired: not beyond 2 SE
    assert found["ilql", "bc"].difference < 0 and not found["ilql", "bc"].beats
    assert found["ilql", "random"].win_rates == (ilql.win_rate, random.win_rate)


@pytest.mark.parametrize("ilql_rewards, said", [([-1, -2, -1, -2, -1, -1], "ilql beats bc by more than 2 SE"),
                                                 ([-6, -6, -6, -6, -6, -6], "ilql is worse than bc by more than"),
                                                 ([-3, -1, -2, -3, -2, -1], "ilql does NOT beat bc by more than")])
def test_ilql_against_bc_is_said_as_computed(ilql_rewards, said):
    bc = _result("bc", [-3, -2, -2, -3, -2, -2])
    results = [_result("random", [-6] * 6), bc, _result("ilql", ilql_rewards), _result("optimal", [-1] * 6)]
    text = _report(results).text()
    line = next(line.strip() for line in text.splitlines() if line.startswith("  ilql ") and " bc " in line)
    difference, stderr = paired_difference(results[2], bc)
    assert line.startswith(said) and f"return difference {difference:+.3f} ± {stderr:.3f}" in line


@pytest.mark.parametrize("difference, stderr, side", [(0.5, 0.2, 1), (0.4, 0.2, 0), (-1.0, 0.1, -1), (0.1, 0.0, 1)])
def test_a_verdict_is_strictly_beyond_two_standard_errors(difference, stderr, side):
    from trainers.evaluation.stats import separation

    assert separation(difference, stderr) == side
    assert Verdict("ilql", "bc", difference, stderr, side, (0.5, 0.5)).beats is (side == 1)


def test_the_screen_is_short_and_puts_ilql_against_bc_first():
    results = [_result("random", [-6, -5, -6, -4]), _result("bc", [-4, -5, -3, -4]), _result("ilql", [-2, -1, -2, -3]),
               _result("optimal", [-1, -2, -1, -2])]
    lines = _report(results).text().splitlines()
    assert len(lines) <= MAX_LINES - 12  # room for the progress lines the run says before it
    verdict_lines = [line for line in lines if " by more than 2 SE: " in line]
    assert [(line.split()[0], line.split(" by more than")[0].split()[-1]) for line in verdict_lines] == \
        list(COMPARISONS) == [("ilql", "bc"), ("ilql", "random"), ("bc", "random")]
    assert [row[0] for row in table_rows("\n".join(lines))] == ROWS
    assert lines[-1] == "demo finished in 1 s"


def test_opening_words_are_counted_from_the_games_actions():
    results = [_result("random", [-6] * 4, ["tacit", "elect", "voter", "tacit"]),
               _result("bc", [-3] * 4, ["raise", "elect", "raise", "voter"]),
               _result("ilql", [-2] * 4, ["raise", "raise", "raise", "tacit"]),
               _result("optimal", [-1] * 4, ["raise"] * 4)]
    shares = opening_shares(results)
    assert shares["ilql"] == {"raise": 0.75, "tacit": 0.25} and shares["optimal"] == {"raise": 1.0}
    line = _report(results).opening_line()
    assert line == ("Opening words: the expert opened 100% of its games with 'raise'; of the other agents' games, "
                    "these opened with it: random 0%, bc 50%, ilql 75%.")


def test_the_guide_tabulates_every_seed_and_counts_the_verdicts_that_held():
    def results(gain: float) -> list[EvalResult]:
        bc = [-5, -4, -5, -3, -5, -4]
        return [_result("random", [-6] * 6), _result("bc", bc), _result("ilql", [b + gain + (i % 2) * 0.5
                                                                             for i, b in enumerate(bc)]),
                _result("optimal", [-1] * 6)]

    seeds = [_report(results(2.0), seed=0), _report(results(-0.25), seed=1), _report(results(1.5), seed=2)]
    page = seeds[0].document("demo.png", demo.DOC_COMMAND, seeds=seeds)
    assert "## The same run with 3 seeds" in page
    rows = [line for line in page.splitlines() if re.match(r"\| \d \|", line)]
    assert [row.split("|")[1].strip() for row in rows] == ["0", "1", "2"]
    held = [seed.verdict("ilql", "bc").beats for seed in seeds]
    assert held == [True, False, True]
    assert "ilql beats bc by more than 2 SE in 2 of 3 seeds" in page
    assert "bc beats random by more than 2 SE in 3 of 3 seeds" in page


def test_help_shows_the_full_settings():
    defaults = vars(build_parser().parse_args(["demo"]))
    for field in ("episodes", "expert_share", "train_steps", "eval_games", "beta_games", "workers", "seed"):
        assert defaults[field] == getattr(FULL, field)
    assert defaults["doc"] is None and defaults["doc_seeds"] == demo.DOC_SEEDS >= 3


def test_the_expert_records_the_minority_of_the_games():
    assert FULL.recorded_games() == {"optimal": 240, "random_mixture": 560}
    assert DemoSettings(episodes=10).recorded_games() == {"optimal": 3, "random_mixture": 7}
    assert DemoSettings(episodes=2).recorded_games() == {"optimal": 1, "random_mixture": 1}
    assert FULL.recorded_games()["optimal"] < FULL.episodes / 2


def test_settings_reject_sizes_that_cannot_run():
    with pytest.raises(ValueError, match="DemoSettings.eval_games"):
        dataclasses.replace(FULL, eval_games=1)
    with pytest.raises(ValueError, match="DemoSettings.train_steps"):
        DemoSettings(train_steps=0)
    with pytest.raises(ValueError, match="DemoSettings.expert_share"):
        DemoSettings(expert_share=1.0)


def test_demo_word_list_is_the_documented_selection_with_its_licence():
    words = demo_words()
    assert words.name == "demo_words" and len(words) == 32
    assert words.words == lmrl_gym_words().words[::13][:32]
    assert resolve_word_list("demo_words") is words
    folder = Path(demo.__file__).resolve().parents[2] / "rlds_lang" / "wordle" / "data" / "demo"
    assert "MIT License" in (folder / "LICENSE").read_text()
    assert "NR%13==1" in (folder / "README.md").read_text()


def test_random_agent_guesses_every_list_word_alike():
    agent, env = demo.random_agent(), demo.make_env()
    env.set_next_answer("tacit")
    observations = [env.reset().observation, env.step("elect").observation]  # feedback rules most words out
    np.testing.assert_allclose(agent.distribution(observations, ["elect"]), np.full(32, 1 / 32))
    assert list(agent.knowledge.guesses.words) == list(demo_words().words)
