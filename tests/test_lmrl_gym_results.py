"""``rlds-lang results --setting lmrl_gym`` end to end at a tiny size (few games, few steps, a temp file):
every row is trained and evaluated, the published numbers stand beside ours, and the verdicts are computed."""

from __future__ import annotations

import json
import re

import pytest
import torch

from trainers.algorithms.registry import load_agent_model
from trainers.cli.main import main
from trainers.core.model import plain_language_model
from trainers.evaluation.wordle import load_results
from trainers.experiments.lmrl_gym.linear import LinearReport
from trainers.experiments.lmrl_gym.document import ILQL_TARGET_HEADS
from trainers.experiments.lmrl_gym.run import STARTED_FROM_BC, TRAINING, VALUE_ROWS, cached_report


def test_results_setting_lmrl_gym_writes_the_document(tmp_path, capsys):
    out = tmp_path / "lmrl_gym.md"
    common = ["results", "--setting", "lmrl_gym", "--data-dir", str(tmp_path / "tfds"), "--runs", str(tmp_path / "runs"),
              "--small", "12", "--steps", "2", "--build-workers", "2"]  # shards recorded on 2 processes
    with pytest.raises(ValueError, match=r"train BC first \(--train-only BC\)"):  # MC keeps BC as its policy
        main([*common, "--train-only", "MC returns", "--out", str(out)])
    main([*common, "--train-only", "BC", "--train-only", "MC returns", "--out", str(out)])  # as side-by-side jobs do
    assert "trained MC returns" in capsys.readouterr().out and not out.exists()
    mc_checkpoint = (tmp_path / "runs" / "lmrl_gym" / "MC_returns" / "checkpoint" / "model.pt").read_bytes()
    main(["results", "--setting", "lmrl_gym", "--data-dir", str(tmp_path / "tfds"), "--runs", str(tmp_path / "runs"),
          "--small", "12", "--steps", "2", "--games", "6", "--pbc-rounds", "1", "--pbc-games", "6", "--pbc-steps", "1",
          "--calibration-games", "6", "--consistency-games", "3", "--linear-train-games", "30",
          "--linear-held-out-games", "4", "--linear-steps", "16", "--build-workers", "1", "--beta-games", "4",
          "--beta-grid", "0,16", "--headline-games", "8", "--selection-games", "4", "--out", str(out)])
    document = out.read_text()
    runs_root = tmp_path / "runs" / "lmrl_gym"
    assert (tmp_path / "runs" / "lmrl_gym" / "MC_returns" / "checkpoint" / "model.pt").read_bytes() == mc_checkpoint
    kept = sorted(p.name for p in (tmp_path / "tfds" / "shard_cache" / "small-12" / "lmrl_gym").iterdir())
    assert kept == ["lmrl_gym_eval-0000", "lmrl_gym_train-0000"]  # the build's shards, for a resumed build
    assert document.startswith("# Wordle in LMRL-Gym's setting")
    assert "--small 12 --steps 2 --games 6 --headline-games 8 --pbc-rounds 1" in document
    assert "--selection-games 4" in document and "at commit " in document
    table_lines = document.split("## The table")[1].split("\n\n")[1].splitlines()
    table = {cells[0]: cells[1:] for cells in ([c.strip() for c in line.strip("|").split("|")] for line in table_lines)}
    for row, published in (("BC", ["-2.81", "79.9"]), ("%BC (top 30%)", ["-2.85", "79.1"]),
                           ("MC returns", ["-2.16", "94.9"]), ("ILQL", ["-2.04", "97.7"]),
                           ("online %BC", ["-2.15", "95.2"]), ("scripted", ["-1.94", "100.0"]),
                           (ILQL_TARGET_HEADS, ["-2.04", "97.7"]), ("BC (save_best)", ["-2.81", "79.9"]),
                           ("%BC (top 30%) (save_best)", ["-2.85", "79.1"])):
        assert table[row][2:4] == published, row  # LMRL-Gym's columns, after our mean ± SE and normalised score
    betas = document.split("## β of the value rows")[1].split("\n## ")[0]
    assert "4 held-out games seeded from 10000000" in betas and "| row | β=0 | β=16 | β chosen |" in betas
    assert betas.count("### ") == 5  # a choice for every decoding
    chosen = {line.split(" | ")[0][2:]: float(line.rstrip(" |").split(" | ")[-1]) for line in betas.splitlines()
              if line.startswith(("| MC returns |", "| ILQL"))}
    assert set(chosen) == {"MC returns", "ILQL", ILQL_TARGET_HEADS} and set(chosen.values()) <= {0.0, 16.0}
    every = document.split("## Every decoding")[1].split("\n## ")[0]
    for title in ("greedy", "sampling at temperature 0.3", "sampling at temperature 0.5", "sampling at temperature 0.7",
                  "sampling at temperature 1"):
        assert f"### {title}" in every, title
    assert every.count("the published ordering; mean gap to the published normalised scores") == 5
    assert "published ordering" in document.split("## The table")[0]  # said at the top, computed
    assert "chosen because its BC row comes closest to\nLMRL-Gym's BC" in document and "on those 6 games against -2.81" in document
    selection = document.split("## Checkpoints chosen by held-out loss")[1].split("\n## ")[0]
    assert "**BC** (loss on the first 4 games of the `eval` split" in selection and "| 2 |" in selection
    verdicts = document.split("## Verdicts")[1].split("##")[0]
    assert f"- ILQL − {ILQL_TARGET_HEADS} = " in verdicts  # the two target schemes, paired
    assert verdicts.count(" SE): ") == 5 and ("All targets met" in document or "Targets not reached" in document)
    if "Targets not reached" in document:  # the diagnosis: BC beside the data policy and the linear reference
        assert "held-out states of the data policy" in document and "what a linear model of the board" in document
        assert "rows that start from BC add at least the published gain" in document
    rounds = document.split("## Online %BC, round by round")[1].split("##")[0]
    assert "| 0 | 6 |" in rounds and "The best round played" in rounds  # --pbc-rounds 1 --pbc-games 6
    assert "| training games | 12 | 1,000,000 |" in document and "| V(s_0) vs game return | 6 |" in document
    ranking = document.split("### Section-5 ranking at the first move")[1]
    assert all(re.search(rf"\| {re.escape(name)} \| [01]\.\d{{3}} \|", ranking) for name in VALUE_ROWS)
    results = load_results(out.with_suffix(".json"))
    assert [r.name for r in results] == ["BC", "%BC (top 30%)", "MC returns", "ILQL", ILQL_TARGET_HEADS, "online %BC",
                                         "BC (save_best)", "%BC (top 30%) (save_best)", "scripted"]
    assert all(r.games == 8 and r.config["answers"] == "lmrl_gym" for r in results)  # the headline's games
    for name in ("MC_returns", "ILQL", "ILQL__target_heads__lr_1e_3"):
        assert (tmp_path / f"lmrl_gym-calibration-{name}.png").stat().st_size > 1000
    online = json.loads((tmp_path / "runs" / "lmrl_gym" / "online__BC" / "round_000" / "round.json").read_text())
    assert f"| online %BC | 1 | {online['seconds'] / 60:.1f} |" in document  # its rounds' playing and training
    for name, lr in (("BC", 1e-3), ("BC__top_30", 1e-3), ("online__BC", 1e-3), ("ILQL__target_heads__lr_1e_3", 1e-3),
                     ("MC_returns", 1e-5), ("ILQL", 3e-5)):  # this setting's TRAINING; LMRL-Gym's for MC and ILQL
        run = tmp_path / "runs" / "lmrl_gym" / name
        run = run / "round_000" / "bc" if name == "online__BC" else run
        config = json.loads((run / "config.json").read_text())["config"]
        assert (config["batch_size"], config["lr"]) == (TRAINING["batch_size"], lr) and TRAINING["lr"] == 1e-3, name
        assert config["keep_every"] == 2000, name
    ilql = json.loads((runs_root / "ILQL" / "config.json").read_text())["config"]
    assert (ilql["target_network"], ilql["decode_with"], ilql["adam_beta2"], ilql["grad_clip"]) == ("trunk", "live", 0.95, 0)
    heads = json.loads((runs_root / "ILQL__target_heads__lr_1e_3" / "config.json").read_text())["config"]
    assert (heads["target_network"], heads["decode_with"], heads["adam_beta2"]) == ("heads", "target", 0.999)
    assert '"batch_size": 64, "lr": 0.001' in document.split("## What was trained")[1]
    runs = runs_root
    # BC's model with its logit scale folded into the output layer, as its saved lm/ holds it
    bc = plain_language_model(load_agent_model(runs / "BC" / "checkpoint").lm).state_dict()
    for name in ("MC_returns", "ILQL", "ILQL__target_heads__lr_1e_3"):  # the value rows decode with the BC row's policy, unchanged
        policy = load_agent_model(runs / name / "checkpoint").lm.policy.state_dict()
        assert policy.keys() == bc.keys() and all(torch.equal(policy[k], bc[k]) for k in bc), name
    diagnostics = tmp_path / "runs" / "lmrl_gym" / "diagnostics"
    assert json.loads((diagnostics / "linear_reference.json").read_text())["key"]["train_games"] == 30
    assert json.loads((diagnostics / "bc_consistency.json").read_text())["report"]["states"] > 0
    for name in ("MC_returns", "ILQL", "online__BC"):  # each row started from BC's checkpoint at its step 2
        assert json.loads((runs / name / STARTED_FROM_BC).read_text())["bc_step"] == 2, name
    longer = [*common[:common.index("--steps")], "--steps", "3"]  # BC trains on, one step
    main([*longer, "--train-only", "BC", "--out", str(out)])
    for row in ("MC returns", "online %BC"):  # rows from the old BC are not silently reused over the new one
        with pytest.raises(ValueError, match=r"started from the BC row at step 2, but .* is now at step 3"):
            main([*longer, "--train-only", row, "--out", str(out)])


def test_diagnostic_reports_are_reused_only_under_the_same_key(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return LinearReport([1, 2], [6.0, float(len(calls))], 5.2, 6.07, 10)

    path = tmp_path / "diagnostics" / "linear.json"
    first = cached_report(path, {"steps": 2}, compute, LinearReport)
    assert cached_report(path, {"steps": 2}, compute, LinearReport) == first and len(calls) == 1
    assert cached_report(path, {"steps": 3}, compute, LinearReport).nats[1] == 2.0  # another key: recomputed
    assert cached_report(path, {"steps": 3}, compute, LinearReport, fresh=True).nats[1] == 3.0
