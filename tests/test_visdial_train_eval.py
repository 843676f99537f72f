"""Visual Dialogue end to end on the builder's dummy data: build -> tokenizer -> train BC, %BC and ILQL a few
steps -> train the guesser -> ``eval --task visdial`` against our server (started by the command, 127.0.0.1)."""

import json

import pytest
import tensorflow_datasets as tfds

from builders.visdial import make_dummy_data as dummy
from builders.visdial import visdial_dataset_builder as vdb
from builders.visdial.visdial_dataset_builder_test import check_build
from trainers.cli.main import build_parser, main

TINY = ["--model.n_layer", "1", "--model.n_embd", "32", "--model.n_head", "2", "--model.n_positions", "256",
        "--max_length", "256", "--batch_size", "2", "--no-progress", "--steps", "2"]


def test_build_train_eval_end_to_end(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    builder = vdb.Builder(config="yn", data_dir=str(tmp_path / "data"))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=dummy.OUT))
    assert {k: v.num_examples for k, v in builder.info.splits.items()} == dummy.SIZES
    check_build(builder, dummy.OUT)
    tok = tmp_path / "tok.json"
    main(["visdial", "tokenizer", "--manual-dir", dummy.OUT, "--out", str(tok), "--vocab-size", "400"])
    guesser = tmp_path / "guesser"
    main(["visdial", "guesser", "--manual-dir", dummy.OUT, "--out", str(guesser), "--epochs", "2", "--buckets", "128",
          "--dim", "8", "--hidden", "16"])
    printed = capsys.readouterr().out
    assert "train dialogues" in printed and "guesser trained on train" in printed
    runs = {}
    for name, algorithm, extra in (("bc", "bc", []), ("top", "bc", ["--top_p", "0.5"]), ("ilql", "ilql", [])):
        runs[name] = tmp_path / name
        main(["train", algorithm, "--dataset", str(builder.data_dir), "--out", str(runs[name]),
              "--tokenizer", f"file:{tok}", *extra, *TINY])
    capsys.readouterr()
    args = build_parser().parse_args([
        "eval", "--task", "visdial", "--data", dummy.OUT, "--guesser", str(guesser), "--episodes", "3",
        "--question-tokens", "6", "--agent", f"bc={runs['bc'] / 'checkpoint'}",
        "--agent", f"ilql={runs['ilql'] / 'checkpoint'}", "--agent", "qbot=server", "--out", str(tmp_path / "eval.json")])
    results = args.func(args)
    printed = capsys.readouterr().out
    assert "3 episodes on the val split" in printed and "±" in printed and "yes/no answers" in printed
    for name in ("bc", "ilql", "qbot"):  # qbot: the server's question bot, a dataset-like baseline
        r = results[name]
        assert r["episodes"] == 3 and r["se"] >= 0 and r["yes_no_answers"] >= 0
        # env_stops: between 1 and 10 rounds, each -1 or 0 plus at most -2 for a yes/no answer
        assert -9.0 - 2 * 10 <= r["mean"] <= 0.0
    assert json.load(open(tmp_path / "eval.json")) == results
    assert (tmp_path / "eval.png").stat().st_size > 5_000  # return by round and yes/no answers per agent


def test_cumulative_by_round_keeps_an_early_stop_at_its_final_return():
    from trainers.evaluation.visdial import cumulative_by_round

    mean, se = cumulative_by_round([[-1.0, 0.0, -1.0], [-2.0]], 3)
    assert mean.tolist() == [-1.5, -1.5, -2.0]
    assert se.tolist() == pytest.approx([0.5, 0.5, 0.0])
