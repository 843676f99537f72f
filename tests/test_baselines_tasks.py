"""The baselines (``cql``, ``psi``, ``dt``) end to end on the Visual Dialogue and Reddit dummy data: build, train
each a few steps from the command line, play a few episodes with ``rlds-lang eval --task ...``."""

from __future__ import annotations

import pytest
import tensorflow_datasets as tfds

from builders.reddit_comments import reddit_comments_dataset_builder as rcb
from builders.visdial import make_dummy_data as visdial_dummy
from builders.visdial import visdial_dataset_builder as vdb
from tests.test_reddit_train_eval import PUBLISHED, main_eval
from trainers.cli.main import build_parser, main

BASELINES = ("cql", "psi", "dt", "utterance_ilql", "chai")
TINY = ["--model.n_layer", "1", "--model.n_embd", "32", "--model.n_head", "2", "--batch_size", "2", "--no-progress",
        "--steps", "2"]


def train_baselines(dataset: str, tokenizer: str, root, positions: int) -> dict[str, str]:
    """Trains every baseline two steps on ``dataset``; returns each one's ``--agent`` spec."""
    agents = {}
    for algorithm in BASELINES:
        main(["train", algorithm, "--dataset", dataset, "--out", str(root / algorithm), "--tokenizer",
              f"file:{tokenizer}", "--model.n_positions", str(positions), "--max_length", str(positions), *TINY])
        agents[algorithm] = f"{algorithm}={root / algorithm / 'checkpoint'}"
    return agents


def test_baselines_play_visual_dialogue(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    builder = vdb.Builder(config="yn", data_dir=str(tmp_path / "data"))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=visdial_dummy.OUT))
    tok, guesser = tmp_path / "tok.json", tmp_path / "guesser"
    main(["visdial", "tokenizer", "--manual-dir", visdial_dummy.OUT, "--out", str(tok), "--vocab-size", "400"])
    main(["visdial", "guesser", "--manual-dir", visdial_dummy.OUT, "--out", str(guesser), "--epochs", "1",
          "--buckets", "128", "--dim", "8", "--hidden", "16"])
    agents = train_baselines(str(builder.data_dir), str(tok), tmp_path, 256)
    capsys.readouterr()
    specs = [agents["cql"], agents["psi"], agents["dt"] + ",target_return=-1", agents["utterance_ilql"], agents["chai"]]
    args = build_parser().parse_args(["eval", "--task", "visdial", "--data", visdial_dummy.OUT, "--guesser", str(guesser),
                                      "--episodes", "2", "--question-tokens", "6",
                                      *[x for spec in specs for x in ("--agent", spec)]])
    results = args.func(args)
    for algorithm in BASELINES:
        assert results[algorithm]["episodes"] == 2 and -9.0 - 2 * 10 <= results[algorithm]["mean"] <= 0.0


def test_baselines_play_reddit(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    builder = rcb.Builder(config="toxicity", data_dir=str(tmp_path / "data"))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=PUBLISHED))
    tok = tmp_path / "tok.json"
    main(["reddit", "tokenizer", "--data", PUBLISHED, "--out", str(tok), "--vocab-size", "400"])
    agents = train_baselines(str(builder.data_dir), str(tok), tmp_path, 128)
    capsys.readouterr()
    specs = [agents["cql"], agents["psi"], agents["dt"] + ",target_return=0", agents["utterance_ilql"], agents["chai"]]
    results = main_eval([x for spec in specs for x in ("--agent", spec)] + ["--episodes", "3", "--max-tokens", "8"])
    for algorithm in BASELINES:
        assert results[algorithm]["episodes"] == 3 and -10.0 <= results[algorithm]["mean"] <= 0.0
    assert "dt" in capsys.readouterr().out
    with pytest.raises(ValueError, match="target_return is a setting of return-conditioned agents"):
        main_eval(["--agent", agents["cql"] + ",target_return=0", "--episodes", "1"])
