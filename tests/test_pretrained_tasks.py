"""ILQL on Visual Dialogue and Reddit from a pretrained causal LM (``--model.pretrained DIR``: a tiny GPT-2 and its
byte-level BPE saved in a temporary folder): built from the dummy data, trained a few steps from the command line,
then played with ``rlds-lang eval --task ...`` from the checkpoint alone (the model folder deleted)."""

from __future__ import annotations

import shutil

import tensorflow_datasets as tfds

from builders.reddit_comments import reddit_comments_dataset_builder as rcb
from builders.visdial import make_dummy_data as visdial_dummy
from builders.visdial import visdial_dataset_builder as vdb
from rlds_lang.pretrained_tokenizer import PretrainedTokenizer
from rlds_lang.tokenizers import load_tokenizer
from tests.pretrained_fixtures import save_tiny_gpt2
from tests.test_reddit_train_eval import PUBLISHED, main_eval
from trainers.cli.main import build_parser, main


def train_ilql(dataset: str, root, positions: int) -> str:
    """Two ILQL steps on ``dataset`` from a tiny GPT-2 of ``positions`` positions; returns the checkpoint (its
    model folder deleted)."""
    folder = save_tiny_gpt2(root / "gpt2", n_positions=positions)
    main(["train", "ilql", "--dataset", dataset, "--out", str(root / "ilql"), "--model.pretrained", str(folder),
          "--max_length", str(positions), "--batch_size", "2", "--steps", "2", "--no-progress"])
    shutil.rmtree(folder)
    checkpoint = root / "ilql" / "checkpoint"
    assert isinstance(load_tokenizer(checkpoint / "tokenizer.json"), PretrainedTokenizer)
    return str(checkpoint)


def test_ilql_from_a_pretrained_model_plays_visual_dialogue(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    builder = vdb.Builder(config="yn", data_dir=str(tmp_path / "data"))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=visdial_dummy.OUT))
    guesser = tmp_path / "guesser"
    main(["visdial", "guesser", "--manual-dir", visdial_dummy.OUT, "--out", str(guesser), "--epochs", "1",
          "--buckets", "128", "--dim", "8", "--hidden", "16"])
    checkpoint = train_ilql(str(builder.data_dir), tmp_path, 1024)
    capsys.readouterr()
    args = build_parser().parse_args(["eval", "--task", "visdial", "--data", visdial_dummy.OUT, "--guesser",
                                      str(guesser), "--episodes", "2", "--question-tokens", "6",
                                      "--agent", f"ilql={checkpoint}"])
    results = args.func(args)
    assert results["ilql"]["episodes"] == 2 and -9.0 - 2 * 10 <= results["ilql"]["mean"] <= 0.0


def test_ilql_from_a_pretrained_model_plays_reddit(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    builder = rcb.Builder(config="toxicity", data_dir=str(tmp_path / "data"))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=PUBLISHED))
    checkpoint = train_ilql(str(builder.data_dir), tmp_path, 1024)
    capsys.readouterr()
    results = main_eval(["--agent", f"ilql={checkpoint}", "--episodes", "3", "--max-tokens", "8"])
    assert results["ilql"]["episodes"] == 3 and -10.0 <= results["ilql"]["mean"] <= 0.0
