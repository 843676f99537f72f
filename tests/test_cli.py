"""The ``rlds-lang`` command line: train -> eval on a tiny dataset, agent specs, and the results script."""

from __future__ import annotations

import argparse
import json

import pytest
import torch

from tests.toy_data import build_dataset, wordle_like
from trainers.algorithms.registry import parse_agent
from trainers.cli.main import main
from trainers.core.build import tfds_build
from trainers.core.provenance import absolute_paths
from trainers.evaluation.wordle import EvalResult, load_results
from trainers.experiments.beta_choice import TUNING_SEED_OFFSET
from trainers.experiments.common import DECODINGS, add_training_seconds
from trainers.experiments.results import BETA_SWEEP, verdict

TINY = ["--model.n_layer", "1", "--model.n_embd", "32", "--model.n_head", "2", "--model.n_positions", "96",
        "--max_length", "64", "--batch_size", "8", "--no-progress"]


def test_parse_agent_specs():
    assert parse_agent("ilql=runs/x/checkpoint,beta=4,greedy=true") == (
        "ilql", "runs/x/checkpoint", {"beta": "4", "greedy": "true"})
    with pytest.raises(argparse.ArgumentTypeError, match="NAME=CHECKPOINT"):
        parse_agent("runs/x")
    with pytest.raises(argparse.ArgumentTypeError, match="unknown option 'tau=1'"):
        parse_agent("a=b,tau=1")


def test_train_then_eval_prints_one_table_and_writes_json_and_plot(tmp_path, capsys):
    dataset = build_dataset(wordle_like(16, seed=5), tmp_path / "data")
    for algorithm in ("bc", "ilql"):
        main(["train", algorithm, "--dataset", dataset, "--out", str(tmp_path / algorithm), "--steps", "3", *TINY])
    assert "bc: 3 steps" in capsys.readouterr().out
    main(["eval", "--agent", f"bc={tmp_path / 'bc' / 'checkpoint'}",
          "--agent", f"ilql={tmp_path / 'ilql' / 'checkpoint'},beta=2", "--optimal", "--games", "6",
          "--baseline", "bc", "--out", str(tmp_path / "eval.json"), "--plot", str(tmp_path / "eval.png"),
          "--no-progress"])
    printed = capsys.readouterr().out
    rows = [line for line in printed.splitlines() if line.startswith("| ")]
    assert [r.split("|")[1].strip() for r in rows[2:]] == ["bc", "ilql", "optimal"]
    saved = load_results(tmp_path / "eval.json")
    assert [r.name for r in saved] == ["bc", "ilql", "optimal"] and all(r.games == 6 for r in saved)
    assert saved[1].params["beta"] == 2.0
    assert (tmp_path / "eval.png").stat().st_size > 1000


def test_results_script_writes_the_document(tmp_path, capsys):
    data_dir = tmp_path / "tfds"
    tfds_build("wordle_synthetic", "branch", data_dir, small=3, quiet=True)
    out = tmp_path / "results.md"
    main(["results", "wordle", "--data-dir", str(data_dir), "--runs", str(tmp_path / "runs"), "--steps", "2", "--games", "4",
          "--sweep-games", "3", "--settings", "official", "--small", "3", "--out", str(out)])
    document = out.read_text()
    assert "Dataset `wordle_synthetic/branch_small3`" in document and "--small 3" in document
    assert not (data_dir / "wordle_synthetic" / "branch").exists()  # the small build is the one trained on
    for row in ("| bc |", "| %bc (top 25%) |", "| ilql |", "| optimal |"):
        assert row in document
    assert "4 seeded games each" in document and "rlds-lang results wordle --data-dir" in document and "--steps 2" in document and "## Official Wordle" in document
    assert "Not run for this document: `paper`" in document and "ILQL − BC = " in document
    state = torch.load(tmp_path / "runs" / "official" / "bc" / "checkpoint" / "trainer_state.pt", weights_only=False)
    assert state["train_seconds"] > 0 and state["step"] == 2  # the training time the document reports
    # a table, plot and JSON per decoding; the greedy table's agents really decoded greedily
    for decoding in ("sample", "greedy"):
        assert f"### Every agent decoding by {DECODINGS[decoding].title}" in document
        assert (tmp_path / f"results-official-{decoding}.png").stat().st_size > 1000
        saved = load_results(tmp_path / f"results-official-{decoding}.json")
        assert [r.name for r in saved] == ["bc", "%bc (top 25%)", "ilql", "optimal"]
        assert [r.params["greedy"] for r in saved[:3]] == [decoding == "greedy"] * 3
        # the page and its JSON name folders relative to the repository (a checkpoint as well), never absolute
        assert saved[0].params["checkpoint"].endswith("runs/official/bc/checkpoint")
        assert not absolute_paths((tmp_path / f"results-official-{decoding}.json").read_text())
    assert not absolute_paths(document) and " at commit " in document
    assert document.count("ILQL − BC = ") == 4  # each table's verdict, and again in the summary at the top
    summary = document.split("## Summary (computed from the tables below)")[1].split("## What was trained")[0]
    assert summary.count("  - ILQL − BC = ") == 2 and summary.count("- Official Wordle") == 2
    runs = sorted(p.name for p in (tmp_path / "runs" / "official" / "ilql").glob("eval-4-*.json"))
    assert runs == ["eval-4-0-step2-greedy.json", "eval-4-0-step2.json"]
    # the β sweep: BC and ILQL at every β, on 3 held-out games (the β choice's seeds, never the table's), a table
    # per decoding
    held_out = TUNING_SEED_OFFSET  # eval seed 0
    assert document.count("### β at play, on held-out games") == 1 and f"3 games seeded from {held_out} " in document
    names = ["bc"] + [f"ilql β={beta:g}" for beta in BETA_SWEEP]
    for decoding in ("sample", "greedy"):
        table = document.split(f"Decoding by {DECODINGS[decoding].title}:")[1].split("\n\n")[1]
        assert [row.split("|")[1].strip() for row in table.splitlines()[2:]] == names
    sweep = {p.name for p in (tmp_path / "runs" / "official" / "ilql").glob(f"eval-3-{held_out}-*.json")}
    assert sweep == {f"eval-3-{held_out}-step2{suffix}-beta{beta:g}.json" for suffix in ("", "-greedy")
                     for beta in BETA_SWEEP}
    swept = load_results(tmp_path / "runs" / "official" / "ilql" / f"eval-3-{held_out}-step2-greedy-beta4.json")[0]
    assert swept.params["beta"] == 4.0 and swept.params["greedy"] and swept.games == 3


def _result(name: str, rewards: list[float]) -> EvalResult:
    n = len(rewards)
    return EvalResult(name, rewards, [6] * n, [r > -6 for r in rewards], 0, 0.0, answers=[f"w{i}" for i in range(n)])


def test_results_verdict_reads_the_paired_differences():
    """The verdict is computed from the games: ILQL vs BC beyond 2 SE or not, and where %BC sits."""
    bc = _result("bc", [-6, -6, -5, -6, -6, -6])
    ilql = _result("ilql", [-5, -4, -4, -5, -4, -5])  # +1.5 on average, paired differences vary a little
    text = verdict([bc, _result("%bc (top 25%)", [-5, -5, -4, -5, -5, -5]), ilql])
    assert "ILQL is clearly better than BC" in text and "%BC sits between BC and ILQL" in text
    assert "%BC sits above both" in verdict([bc, _result("%bc (top 25%)", [0, 0, -1, 0, 0, 0]), ilql])
    assert "not separated" in verdict([bc, _result("ilql", [-6, -5, -6, -6, -6, -5])])
    # %BC above both, but its paired differences to ILQL (1, 0, 0, 0, 0, 1: mean 0.333, SE 0.211) are within 2 SE
    assert "%BC sits near ILQL" in verdict([bc, _result("%bc (top 25%)", [-4, -4, -4, -5, -4, -4]), ilql])
    assert verdict([bc]) == ""


def test_results_verdict_with_one_game_separates_nothing_and_calls_nothing_near():
    """One game gives no standard error: no separation, and no claim that %BC is within 2 SE of ILQL."""
    text = verdict([_result("bc", [-6]), _result("%bc (top 25%)", [0]), _result("ilql", [-5])])
    assert "± nan (nan SE): not separated by two standard errors" in text
    assert "%BC sits above both BC and ILQL" in text


def test_training_time_adds_up_over_resumed_runs_that_advanced(tmp_path):
    assert add_training_seconds(tmp_path, 5.0, 100) == 5.0
    assert add_training_seconds(tmp_path, 0.3, 100) == 5.0  # a finished run reloaded: nothing trained
    assert json.loads((tmp_path / "train_seconds.json").read_text()) == {"seconds": 5.0, "step": 100}
    assert add_training_seconds(tmp_path, 2.0, 150) == 7.0  # resumed and trained on to step 150
    assert json.loads((tmp_path / "train_seconds.json").read_text()) == {"seconds": 7.0, "step": 150}


def test_version_is_one_value_everywhere(capsys):
    import importlib.metadata

    from rlds_lang import __version__

    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"rlds-lang {__version__}"
    assert importlib.metadata.version("rlds-lang") == __version__  # setup.cfg reads it from rlds_lang
